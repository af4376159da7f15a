#pragma once
// Reading Hugging Face JSON configs (config.json, preprocessor_config.json,
// generation_config.json) into typed option structs: an absent or null key keeps the struct's
// default (which is transformers' default), a present key of the wrong type is an error naming
// the file, the key and the value. Internal: nlohmann_json is a private dependency of alto.

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "alto/core/checkpoint.h"
#include "alto/core/error.h"
#include "alto/core/options.h"

namespace alto::detail {

class JsonConfig {
 public:
  JsonConfig() = default;

  /// Throws alto::IoError naming `path` when it is missing, not JSON or not an object.
  static JsonConfig load(const std::string& path) {
    std::ifstream in(path);
    ALTO_CHECK_AS(IoError, in.good(), "cannot open ", path);
    JsonConfig config;
    config.path_ = path;
    try {
      config.json_ = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw IoError(path + ": not valid JSON (" + e.what() + ")");
    }
    ALTO_CHECK_AS(IoError, config.json_.is_object(), path, ": expected a JSON object");
    return config;
  }

  /// A model's config.json (`path` is the file or the folder holding it) whose model_type must
  /// be `model_type` (an absent key is taken to be it); otherwise alto::Unsupported naming the
  /// file, the found type and `architecture`.
  static JsonConfig load_model_config(const std::string& path, const std::string& model_type,
                                      const std::string& architecture) {
    namespace fs = std::filesystem;
    const std::string file =
        fs::is_directory(path) ? (fs::path(path) / "config.json").string() : path;
    JsonConfig config = load(file);
    std::string found = model_type;
    config.read("model_type", found);
    ALTO_CHECK_AS(Unsupported, model_type.empty() || found == model_type, file, ": model_type '",
                  found, "' is not ", architecture, " model (expected \"", model_type, "\")");
    return config;
  }

  /// The config.json of checkpoint folder `dir` and its model_type, for dispatching on it;
  /// alto::IoError naming `caller` when `dir` is no folder, alto::InvalidArgument when the key
  /// is missing.
  static std::pair<JsonConfig, std::string> load_model_type(const std::string& dir,
                                                            const std::string& caller) {
    require_checkpoint_folder(dir, caller);
    std::pair<JsonConfig, std::string> out{
        load((std::filesystem::path(dir) / "config.json").string()), ""};
    out.first.require("model_type");
    out.first.read("model_type", out.second);
    return out;
  }

  /// The model_type of folder `dir`'s config.json; "" when it has none, or an unreadable one
  /// (for recognizes(): a folder that is not this model's is no error).
  static std::string model_type_in(const std::string& dir) {
    const std::filesystem::path file = std::filesystem::path(dir) / "config.json";
    if (!std::filesystem::is_regular_file(file)) return "";
    try {
      std::string model_type;
      load(file.string()).read("model_type", model_type);
      return model_type;
    } catch (const Error&) {
      return "";
    }
  }

  const std::string& path() const { return path_; }
  /// "file: key" with the nesting of a sub-config ("config.json: text_config.vocab_size").
  std::string where(const char* key) const { return path_ + ": " + prefix_ + key; }

  /// A nested config (`text_config`, `audio_config`, ...): read, checked and reported like a
  /// top-level one, its keys named with the path ("text_config.hidden_size"). A missing or
  /// non-object key is an error naming it.
  JsonConfig sub(const char* key) const {
    const nlohmann::json* v = find(key);
    ALTO_CHECK_AS(IoError, v && v->is_object(), path_, ": field '", prefix_, key,
                  "' must be an object", v ? ", got " + v->dump() : " (it is missing)");
    JsonConfig config;
    config.path_ = path_;
    config.prefix_ = prefix_ + key + ".";
    config.json_ = *v;
    return config;
  }

  /// The keys that start with `key_prefix`, without it, read and reported like a config of their
  /// own (generation_config.json's "depth_decoder_temperature" as "temperature", errors naming
  /// "depth_decoder_temperature").
  JsonConfig with_key_prefix(const std::string& key_prefix) const {
    JsonConfig config;
    config.path_ = path_;
    config.prefix_ = prefix_ + key_prefix;
    config.json_ = nlohmann::json::object();
    for (const auto& [key, value] : json_.items())
      if (key.size() > key_prefix.size() && key.compare(0, key_prefix.size(), key_prefix) == 0)
        config.json_[key.substr(key_prefix.size())] = value;
    return config;
  }

  /// config.validate(), its error rethrown as alto::InvalidArgument naming this file (and the
  /// sub-config).
  template <typename Config>
  const Config& validated(const Config& config) const {
    try {
      config.validate();
    } catch (const Error& e) {
      throw InvalidArgument(path_ + ": " + prefix_ + e.what());
    }
    return config;
  }

  /// `out` with every present, non-null key of `schema`'s fields set from this config; a value
  /// of the wrong kind is an error naming the file and the key.
  template <typename T>
  T read(const OptionSchema<T>& schema, T out = T{}) const {
    // In the schema's order, so that of two keys for one field the later one wins.
    const std::vector<OptionField> fields = schema.fields();
    const OptionValues values = option_values(fields);
    for (const auto& field : fields) {
      const auto it = values.find(field.name);
      if (it == values.end()) continue;
      const auto& [name, value] = *it;
      try {
        schema.set(out, {{name, value}});
      } catch (const Error& e) {
        throw InvalidArgument(path_ + ": field '" + prefix_ + name + "': " + e.what());
      }
    }
    return out;
  }

  /// The values of the present, non-null keys among `fields`, for an OptionSchema. A value of a
  /// kind JSON cannot give a field (an object, a list) is an error naming the key.
  OptionValues option_values(const std::vector<OptionField>& fields) const {
    OptionValues values;
    for (const auto& field : fields) {
      const nlohmann::json* v = find(field.name.c_str());
      if (!v) continue;
      if (v->is_boolean())
        values[field.name] = v->get<bool>();
      else if (v->is_number_integer())
        values[field.name] = v->get<int64_t>();
      else if (v->is_number())
        values[field.name] = v->get<double>();
      else if (v->is_string())
        values[field.name] = v->get<std::string>();
      else
        bad(field.name.c_str(), "a boolean, number or string");
    }
    return values;
  }
  bool has(const char* key) const { return find(key) != nullptr; }
  /// Whether the key is written at all, null included ("sliding_window": null turns off a
  /// window that an absent key would give).
  bool written(const char* key) const { return json_.contains(key); }
  const nlohmann::json* find(const char* key) const {
    auto it = json_.find(key);
    return it == json_.end() || it->is_null() ? nullptr : &*it;
  }

  void read(const char* key, int& out) const {
    int64_t wide = out;
    read(key, wide);
    out = static_cast<int>(wide);
  }
  void read(const char* key, int64_t& out) const {
    if (const nlohmann::json* v = find(key)) {
      // transformers writes some integers as floats (16000.0); accept them when integral.
      if (v->is_number_integer())
        out = v->get<int64_t>();
      else if (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>())
        out = static_cast<int64_t>(v->get<double>());
      else
        bad(key, "an integer");
    }
  }
  void read(const char* key, double& out) const {
    if (const nlohmann::json* v = find(key)) {
      if (!v->is_number()) bad(key, "a number");
      out = v->get<double>();
    }
  }
  void read(const char* key, bool& out) const {
    if (const nlohmann::json* v = find(key)) {
      if (!v->is_boolean()) bad(key, "true or false");
      out = v->get<bool>();
    }
  }
  void read(const char* key, std::string& out) const {
    if (const nlohmann::json* v = find(key)) {
      if (!v->is_string()) bad(key, "a string");
      out = v->get<std::string>();
    }
  }
  void read(const char* key, std::vector<int64_t>& out) const {
    if (const nlohmann::json* v = find(key)) {
      if (!v->is_array()) bad(key, "a list of integers");
      std::vector<int64_t> values;
      for (const auto& item : *v) {
        if (!item.is_number_integer()) bad(key, "a list of integers");
        values.push_back(item.get<int64_t>());
      }
      out = std::move(values);
    }
  }
  void read(const char* key, std::map<std::string, int64_t>& out) const {
    if (const nlohmann::json* v = find(key)) {
      if (!v->is_object()) bad(key, "an object of integers");
      std::map<std::string, int64_t> values;
      for (const auto& [name, item] : v->items()) {
        if (!item.is_number_integer()) bad(key, "an object of integers");
        values[name] = item.get<int64_t>();
      }
      out = std::move(values);
    }
  }
  template <typename T>
  void read(const char* key, std::optional<T>& out) const {
    if (has(key)) {
      T value{};
      read(key, value);
      out = value;
    }
  }
  /// A string key whose value must be one of `choices`' names.
  template <typename Enum>
  void read_choice(const char* key, const std::map<std::string, Enum>& choices, Enum& out) const {
    if (const nlohmann::json* v = find(key)) {
      auto it = v->is_string() ? choices.find(v->get<std::string>()) : choices.end();
      if (it == choices.end()) {
        std::string names;
        for (const auto& [name, _] : choices)
          names += (names.empty() ? "\"" : ", \"") + name + "\"";
        bad(key, ("one of " + names).c_str());
      }
      out = it->second;
    }
  }
  /// The error for a key that is present but unusable.
  [[noreturn]] void bad(const char* key, const char* expected) const {
    const nlohmann::json* v = find(key);
    throw InvalidArgument(path_ + ": field '" + prefix_ + key + "' must be " + expected + ", got " +
                          (v ? v->dump() : "null"));
  }
  /// The error for a key a model cannot do without.
  void require(const char* key) const {
    ALTO_CHECK(has(key), path_, ": missing field '", prefix_, key, "'");
  }

 private:
  std::string path_;
  std::string prefix_;  // "text_config." inside a nested config
  nlohmann::json json_;
};

}  // namespace alto::detail
