#pragma once
// The interface of alto's text tokenizers: text <-> ids, special and added tokens, byte offsets.
// Model-specific conventions (Whisper's <|startoftranscript|> and language tokens, a chat
// template) are layers on top, in the model's own folder. Tokenizers are immutable after loading
// and safe to share between threads. Needs no libtorch.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "alto/core/registry.h"

namespace alto::tokenizers {

/// One token of an encoded text and the bytes [begin, end) of the text it stands for
/// (transformers' offset mapping, in bytes).
struct TokenSpan {
  int64_t id = 0;
  size_t begin = 0, end = 0;
};

class TextTokenizer {
 public:
  virtual ~TextTokenizer() = default;

  /// The first registered tokenizer format that recognises `path` (a model folder or a file)
  /// loads it; alto::IoError naming the path when none does.
  static std::shared_ptr<const TextTokenizer> from_pretrained(const std::string& path);

  /// Text -> ids. Added-token text becomes that token unless `split_special_tokens`.
  virtual std::vector<int64_t> encode(const std::string& text,
                                      bool split_special_tokens = false) const = 0;
  /// encode() with the byte range of the text each token covers.
  virtual std::vector<TokenSpan> encode_with_offsets(const std::string& text) const = 0;
  /// Ids -> text; special tokens dropped with `skip_special_tokens`.
  virtual std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const = 0;
  /// Every id, added tokens included.
  virtual int64_t vocab_size() const = 0;
  /// -1 when absent.
  virtual int64_t token_to_id(const std::string& token) const = 0;
  /// alto::InvalidArgument for an id outside the vocabulary.
  virtual std::string id_to_token(int64_t id) const = 0;
  virtual bool is_special(int64_t id) const = 0;
  /// Added tokens (content, id) in id order; special ones are those is_special() names.
  virtual std::vector<std::pair<std::string, int64_t>> added_tokens() const = 0;

  /// The id of `token`, or alto::InvalidArgument saying that `what` needs it.
  int64_t require_token(const std::string& token, const std::string& what) const;
};

/// A registered tokenizer format ("byte-level-bpe", ...), tried in key order.
struct TextTokenizerEntry {
  static const char* kind() { return "text tokenizer format"; }
  std::string description;
  /// Whether `path` holds this format.
  std::function<bool(const std::string& path)> recognizes;
  std::function<std::shared_ptr<const TextTokenizer>(const std::string& path)> load;
};
const Registry<TextTokenizerEntry>& text_tokenizers();

/// The `model.type` of a tokenizer.json file ("BPE", "Unigram", ...), so that each format claims
/// only its own; "" when the file is missing or not such JSON.
std::string tokenizer_json_model_type(const std::string& file);

}  // namespace alto::tokenizers
