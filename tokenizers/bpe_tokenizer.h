#pragma once
// Byte-level BPE with added and special tokens (Whisper's timestamps among them), loaded from
// any of the files the Hub, openai and Mistral ship: tokenizer.json (its NFC normaliser and its
// ByteLevel or Split-regex pre-tokenizer, as Qwen2's); vocab.json + merges.txt +
// added_tokens.json; openai's .tiktoken ranks; Mistral's tekken.json (tiktoken ranks after the
// special tokens' ids, its own pattern). Encoding and decoding follow transformers'
// WhisperTokenizer exactly; decode_openai() follows openai-whisper's Tokenizer.decode.
// Immutable after loading and safe to share between threads. Needs no libtorch.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "alto/tokenizers/text_tokenizer.h"

namespace alto::tokenizers {

struct BpeDecodeOptions {
  /// Drop <|endoftext|>, <|startoftranscript|>, languages, tasks, ... and a <|startofprev|>
  /// prompt (everything before <|startoftranscript|>).
  bool skip_special_tokens = false;
  /// Keep timestamps as "<|1.08|>" text, continuing the time across 30 s windows as
  /// transformers does; otherwise their text is removed.
  bool with_timestamps = false;
};

/// A timed segment of a timestamped token sequence (transformers' output_offsets).
struct BpeOffset {
  std::string text;
  double start = 0, end = 0;  // seconds
};

/// openai-whisper's language codes in token order (<|en|> first); large-v3 adds the 100th, "yue".
const std::vector<std::string>& whisper_language_codes();
/// openai-whisper's English name of each code ("en" -> "english"), in the same order.
const std::vector<std::string>& whisper_language_names();
/// The code for a code or a name, any case, with openai-whisper's aliases ("English", "en",
/// "mandarin", "castilian" -> "en", "en", "zh", "es"); alto::InvalidArgument for anything else.
std::string whisper_language_code(const std::string& code_or_name);

class BpeTokenizer : public TextTokenizer {
 public:
  /// `path`: a folder with tokenizer.json, or with vocab.json + merges.txt (+ added_tokens.json,
  /// special_tokens_map.json), or with tekken.json; such a file itself; or a .tiktoken file, to
  /// which Whisper's special tokens are added in openai's order (99 languages). Throws
  /// alto::IoError naming a missing or corrupt file, alto::Unsupported for a normaliser,
  /// pre-tokenizer or pattern construct alto does not run.
  static std::shared_ptr<const BpeTokenizer> from_pretrained(const std::string& path);

  /// Text -> ids. Added-token text (<|en|>, <|0.00|>, ...) becomes that token unless
  /// `split_special_tokens`, which encodes it as plain text. Throws on invalid UTF-8.
  std::vector<int64_t> encode(const std::string& text,
                              bool split_special_tokens = false) const override;
  /// Byte-level BPE is lossless: each token covers exactly its own bytes.
  std::vector<TokenSpan> encode_with_offsets(const std::string& text) const override;
  /// Ids -> text as WhisperTokenizer.decode: bytes are joined between added tokens, and each
  /// run decoded with invalid UTF-8 replaced by U+FFFD.
  std::string decode(const std::vector<int64_t>& ids, const BpeDecodeOptions& options = {}) const;
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const override;
  /// openai-whisper's Tokenizer.decode (timestamps dropped before joining the bytes) or, with
  /// `with_timestamps`, decode_with_timestamps (each timestamp as its own "<|t|>").
  std::string decode_openai(const std::vector<int64_t>& ids, bool with_timestamps = false) const;
  /// The segments between timestamp pairs, as WhisperTokenizer.decode(output_offsets=True).
  std::vector<BpeOffset> offsets(const std::vector<int64_t>& ids) const;

  int64_t vocab_size() const override;
  /// -1 when absent. Token strings are vocab.json's (byte-level alphabet) or added tokens'.
  int64_t token_to_id(const std::string& token) const override;
  std::string id_to_token(int64_t id) const override;
  bool is_special(int64_t id) const override;
  std::vector<std::pair<std::string, int64_t>> added_tokens() const override;

 private:
  static std::shared_ptr<const BpeTokenizer> load(const std::string& path);
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace alto::tokenizers
