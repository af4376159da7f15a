#pragma once
// Whisper's text tokenizer: GPT-2's byte-level BPE plus Whisper's special and timestamp tokens,
// loaded from any of the files the Hub and openai ship (tokenizer.json; vocab.json + merges.txt
// + added_tokens.json; openai's .tiktoken ranks). Encoding and decoding follow transformers'
// WhisperTokenizer exactly; decode_openai() follows openai-whisper's Tokenizer.decode.
// Immutable after loading and safe to share between threads. Needs no libtorch.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace alto {

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

class BpeTokenizer {
 public:
  /// `path`: a folder with tokenizer.json, or with vocab.json + merges.txt (+ added_tokens.json,
  /// special_tokens_map.json); or a .tiktoken file, to which Whisper's special tokens are added
  /// in openai's order (99 languages). Throws alto::IoError naming a missing or corrupt file.
  static BpeTokenizer from_pretrained(const std::string& path);

  /// Text -> ids. Added-token text (<|en|>, <|0.00|>, ...) becomes that token unless
  /// `split_special_tokens`, which encodes it as plain text. Throws on invalid UTF-8.
  std::vector<int64_t> encode(const std::string& text, bool split_special_tokens = false) const;
  /// Ids -> text as WhisperTokenizer.decode: bytes are joined between added tokens, and each
  /// run decoded with invalid UTF-8 replaced by U+FFFD.
  std::string decode(const std::vector<int64_t>& ids, const BpeDecodeOptions& options = {}) const;
  /// openai-whisper's Tokenizer.decode (timestamps dropped before joining the bytes) or, with
  /// `with_timestamps`, decode_with_timestamps (each timestamp as its own "<|t|>").
  std::string decode_openai(const std::vector<int64_t>& ids, bool with_timestamps = false) const;
  /// The segments between timestamp pairs, as WhisperTokenizer.decode(output_offsets=True).
  std::vector<BpeOffset> offsets(const std::vector<int64_t>& ids) const;

  int64_t vocab_size() const;  // every id, added tokens included
  /// -1 when absent. Token strings are vocab.json's (byte-level alphabet) or added tokens'.
  int64_t token_to_id(const std::string& token) const;
  std::string id_to_token(int64_t id) const;
  bool is_special(int64_t id) const;

  int64_t eot() const;
  int64_t sot() const;
  int64_t transcribe() const;
  int64_t translate() const;
  int64_t start_of_lm() const;
  int64_t start_of_prev() const;
  int64_t no_speech() const;  // <|nospeech|>, or <|nocaptions|> in early checkpoints
  int64_t no_timestamps() const;
  int64_t timestamp_begin() const;  // <|0.00|>
  /// Throws alto::InvalidArgument naming an unknown code.
  int64_t language_token(const std::string& code) const;
  /// Language codes in token order.
  std::vector<std::string> languages() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace alto
