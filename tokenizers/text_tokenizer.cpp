#include "alto/tokenizers/text_tokenizer.h"

#include <fstream>
#include <nlohmann/json.hpp>

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

std::string tokenizer_json_model_type(const std::string& file) {
  std::ifstream in(file);
  if (!in) return "";
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return "";
  const auto model = json.find("model");
  if (model == json.end() || !model->is_object()) return "";
  const auto type = model->find("type");
  // tokenizers writes "type" for every model; BPE files from old versions may lack it.
  if (type == model->end()) return model->contains("merges") ? "BPE" : "";
  return type->is_string() ? type->get<std::string>() : "";
}

}  // namespace alto::tokenizers
