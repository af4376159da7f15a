"""alto.BpeTokenizer against transformers' WhisperTokenizer cases."""
import json

import pytest
import torch

import alto

from conftest import run_concurrently


@pytest.fixture(scope="module")
def folder(data):
    return data / "tokenizers" / "whisper-multilingual"


@pytest.fixture(scope="module")
def tokenizer(folder):
    return alto.BpeTokenizer.from_pretrained(str(folder))


def test_encode_decode_cases(tokenizer, folder):
    cases = json.loads((folder / "cases.json").read_text())
    for case in cases:
        assert tokenizer.encode(case["text"]) == case["ids"], case["name"]
        assert tokenizer.decode(case["ids"]) == case["decoded"], case["name"]
        assert tokenizer.decode(torch.tensor(case["ids_with_prefix"], dtype=torch.int64),
                                skip_special_tokens=True) == case["decoded_skip_special"], case["name"]


def test_decode_cases(tokenizer, folder):
    for case in json.loads((folder / "decode_cases.json").read_text()):
        assert tokenizer.decode(case["ids"]) == case["decoded"], case["name"]
        assert tokenizer.decode(case["ids"], skip_special_tokens=True) == case["decoded_skip_special"]
        assert tokenizer.decode_openai(case["ids"]) == case["openai_decode"], case["name"]


def test_special_tokens(tokenizer):
    assert tokenizer.sot == 50258 and tokenizer.eot == 50257
    assert tokenizer.language_token("en") == 50259
    assert tokenizer.languages[0] == "en"
    assert tokenizer.token_to_id("<|notimestamps|>") == tokenizer.no_timestamps
    with pytest.raises(alto.InvalidArgument):
        tokenizer.language_token("xx")


def test_errors(tokenizer, tmp_path):
    with pytest.raises(alto.IoError):
        alto.BpeTokenizer.from_pretrained(str(tmp_path))
    with pytest.raises(alto.InvalidArgument):
        tokenizer.decode("not ids")
    with pytest.raises(alto.InvalidArgument, match="integer"):
        tokenizer.decode(torch.zeros(3))
    # An id outside the vocabulary is an error (it used to vanish, giving '').
    for decode in (tokenizer.decode, tokenizer.decode_openai,
                   lambda ids: alto.tokenizers.TextTokenizer.decode(tokenizer, ids)):
        with pytest.raises(alto.InvalidArgument, match=r"ids\[1\] = 999999 is outside"):
            decode([50, 999999])


def test_concurrent_use(tokenizer):
    text = "The quick brown fox jumps over the lazy dog. " * 20
    ids = tokenizer.encode(text)

    def work():
        for _ in range(20):
            assert tokenizer.encode(text) == ids
            assert tokenizer.decode(ids) == text

    run_concurrently(work, threads=6)
