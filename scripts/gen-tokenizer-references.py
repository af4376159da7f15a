#!/usr/bin/python3
"""Writes tests/data/tokenizers/pretokenizer_cases.json: reference pre-tokenisation splits, NFC
forms and Qwen2 byte-level BPE ids for Unicode and whitespace edge cases.

References are computed with the `regex` module (python3-regex, the same Perl/Oniguruma
leftmost-first semantics tokenizers and tiktoken use), unicodedata's NFC, and byte-level BPE
merges applied as tokenizers' BPE model applies them, over the golden Qwen2 tokenizer.json.
Run: /usr/bin/python3 scripts/gen-tokenizer-references.py
"""
import json
import os
import unicodedata

import regex

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QWEN2_TOKENIZER = os.path.join(ROOT, "tests/data/models/qwen2-audio-tiny-random/tokenizer.json")
OUT = os.path.join(ROOT, "tests/data/tokenizers/pretokenizer_cases.json")

PATTERNS = {
    "gpt2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "qwen2": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    # mistral-common's Tekken (Mistral Nemo, Voxtral).
    "tekken": r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "o200k": r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
}

STRINGS = [
    "Hello world",
    "What does the person say?",
    "  leading and trailing spaces   ",
    "tabs\tand\nnewlines\r\n\r\nmixed \n \t end",
    "I'm sure they'll say WE'VE DONE IT, don't you?",
    "numbers 12345 and 3.14159, 1,000,000",
    "CamelCaseWords and HTTPServer and iPhone",
    "émigré café naïve résumé",  # precomposed
    "e\u0301migre\u0301 cafe\u0301",  # decomposed: NFC composes
    "A\u030a\u0327 o\u0308\u0304 \u1100\u1161\u11a8 \uac00\u11a8",  # reordering, Hangul
    "Ｆｕｌｌｗｉｄｔｈ ｔｅｘｔ ＡＢＣ",
    "中文测试，包括标点。日本語のテキスト",
    "한국어 텍스트 테스트",
    "Привет, мир! Ёжик",
    "مرحبا بالعالم",
    "emoji 👋🏽 👨‍👩‍👧 ✨ test",
    "math ∑∫√ ≤ ≥ ≠ ∞ and arrows → ←",
    "punctuation!!! ??? ... --- ***",
    "path/to/file.txt and https://example.com/a?b=c",
    "\u00a0non-breaking\u2009thin\u3000ideographic spaces",
    "line\u2028separator and\u0085next line",
    "'s 'S 'll 'LL 'Re at the start",
    "a",
    " ",
    "\n\n\n",
    "x" * 40 + " " + "9" * 12,
]


def byte_level_alphabet():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def bpe_ids(tokenizer, text):
    """tokenizers' ByteLevel BPE: NFC, split, bytes -> alphabet, lowest-rank merges."""
    model = tokenizer["model"]
    vocab = model["vocab"]
    ranks = {}
    for i, m in enumerate(model["merges"]):
        a, b = m if isinstance(m, list) else m.split(" ", 1)
        ranks[(a, b)] = i
    alphabet = byte_level_alphabet()
    pattern = tokenizer["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
    text = unicodedata.normalize("NFC", text)
    ids = []
    for piece in regex.findall(pattern, text):
        word = [alphabet[b] for b in piece.encode("utf-8")]
        while len(word) > 1:
            best = min(((ranks.get((word[i], word[i + 1]), 1 << 60), i) for i in range(len(word) - 1)))
            if best[0] == 1 << 60:
                break
            i = best[1]
            word = word[:i] + [word[i] + word[i + 1]] + word[i + 2:]
        ids.extend(vocab[w] for w in word)
    return ids


def main():
    tokenizer = json.load(open(QWEN2_TOKENIZER, encoding="utf-8"))
    assert tokenizer["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] == PATTERNS["qwen2"]
    cases = []
    for text in STRINGS:
        case = {"text": text, "nfc": unicodedata.normalize("NFC", text), "splits": {}}
        for name, pattern in PATTERNS.items():
            # Code point ranges of the matches.
            case["splits"][name] = [[m.start(), m.end()] for m in regex.finditer(pattern, text)]
        case["qwen2_ids"] = bpe_ids(tokenizer, text)
        cases.append(case)
    out = {
        "generator": "scripts/gen-tokenizer-references.py",
        "unicode_version": unicodedata.unidata_version,
        "regex_version": regex.__version__,
        "patterns": PATTERNS,
        "cases": cases,
    }
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
