#include "alto/tokenizers/text_tokenizer.h"

#include "alto/core/error.h"

namespace alto::tokenizers {

int64_t TextTokenizer::require_token(const std::string& token, const std::string& what) const {
  const int64_t id = token_to_id(token);
  ALTO_CHECK(id >= 0, "this tokenizer has no ", token, " token, which ", what, " needs");
  return id;
}

const Registry<TextTokenizerEntry>& text_tokenizers() {
  return Registry<TextTokenizerEntry>::instance();
}

std::shared_ptr<const TextTokenizer> TextTokenizer::from_pretrained(const std::string& path) {
  const auto& registry = text_tokenizers();
  for (const auto& key : registry.keys()) {
    const TextTokenizerEntry& entry = *registry.find(key);
    if (entry.recognizes(path)) return entry.load(path);
  }
  std::string known;
  for (const auto& key : registry.keys())
    known += (known.empty() ? "" : "; ") + registry.find(key)->description;
  throw IoError("no tokenizer alto reads at " + path + " (alto reads: " + known + ")");
}

}  // namespace alto::tokenizers
