#pragma once
// SentencePiece text tokenizers through libsentencepiece: a `.model` file as Kyutai's, Google's
// and Meta's repositories ship it, or the Unigram `tokenizer.json` that transformers converts it
// to (its Precompiled normaliser, Metaspace pre-tokenizer, scores and byte fallback rebuilt as a
// SentencePiece model, so both formats run the same Viterbi segmentation). Immutable after
// loading and safe to share between threads. Needs no libtorch.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "alto/tokenizers/text_tokenizer.h"

namespace alto::tokenizers {

class SentencePieceTokenizer : public TextTokenizer {
 public:
  /// `path`: a `.model` file, a Unigram tokenizer.json, or a folder holding tokenizer.json
  /// (preferred, as transformers loads it) or one `tokenizer*.model`. Throws alto::IoError
  /// naming a missing or corrupt file, alto::Unsupported for a tokenizer.json that is not a
  /// SentencePiece-style Unigram (another normaliser, pre-tokenizer or model).
  static std::shared_ptr<const SentencePieceTokenizer> from_pretrained(const std::string& path);

  /// Text -> ids as SentencePieceProcessor.encode (a `.model`) or transformers'
  /// tokenizer.encode(add_special_tokens=False) (a tokenizer.json). Special-token text is
  /// encoded as plain text (SentencePiece has no added tokens in running text).
  std::vector<int64_t> encode(const std::string& text,
                              bool split_special_tokens = false) const override;
  std::vector<TokenSpan> encode_with_offsets(const std::string& text) const override;
  /// `.model`: SentencePieceProcessor.decode whatever `skip_special_tokens` (control pieces are
  /// never printed, the unknown piece is " ⁇ ");
  /// tokenizer.json: its decoder (▁ -> space, byte pieces joined, one leading space stripped),
  /// special tokens dropped with `skip_special_tokens`. Ids outside the vocabulary are skipped,
  /// as transformers skips them.
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const override;

  int64_t vocab_size() const override;
  int64_t token_to_id(const std::string& token) const override;
  std::string id_to_token(int64_t id) const override;
  bool is_special(int64_t id) const override;
  std::vector<std::pair<std::string, int64_t>> added_tokens() const override;

  /// The file it was loaded from.
  const std::string& source() const;

 private:
  static std::shared_ptr<const SentencePieceTokenizer> load(const std::string& path);
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace alto::tokenizers
