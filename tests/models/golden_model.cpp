#include "models/golden_model.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "features/golden.h"
#include "test_util.h"

namespace alto::test {

GoldenModel::GoldenModel(const std::string& name)
    : dir_(data_path("models/" + name)),
      io_(dir_ + "/io.safetensors"),
      checkpoint_(dir_ + "/model.safetensors") {}

torch::Tensor GoldenModel::tensor(const std::string& name) const { return io_.tensor(name); }

std::string GoldenModel::with_config(const std::string& field,
                                     const std::string& json_value) const {
  namespace fs = std::filesystem;
  const fs::path source = fs::absolute(dir_);
  const fs::path dir = temp_path(source.filename().string() + "-" + field);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(source))
    if (entry.path().filename() != "config.json")
      fs::create_symlink(entry.path(), dir / entry.path().filename());
  nlohmann::json config = nlohmann::json::parse(std::ifstream(source / "config.json"));
  config[field] = nlohmann::json::parse(json_value);
  std::ofstream(dir / "config.json") << config.dump(2);
  return dir.string();
}

torch::Tensor GoldenModel::checkpoint_tensor(const std::string& name) const {
  return checkpoint_.tensor(name);
}

double GoldenModel::tolerance(const std::string& name) const {
  // Two spellings: {"tolerances": {name: {"recommended_atol": x}}} (Whisper, EnCodec) and
  // {"tolerances_abs": {name: x}} (Mimi, DAC, the audio LMs), the flat one preferred.
  const auto& metadata = io_.metadata();
  const bool nested = metadata.count("tolerances_abs") == 0;
  auto it = metadata.find(nested ? "tolerances" : "tolerances_abs");
  INFO(io_.path() << " has no tolerances metadata");
  REQUIRE(it != metadata.end());
  const auto tolerances = nlohmann::json::parse(it->second);
  INFO(io_.path() << " states no numeric tolerance for " << name);
  REQUIRE(tolerances.contains(name));
  const auto& entry = nested ? tolerances[name]["recommended_atol"] : tolerances[name];
  if (entry == "exact") return 0.0;  // a processor's float output given to the model as is
  REQUIRE(entry.is_number());
  return entry.get<double>();
}

std::string GoldenModel::metadata(const std::string& key) const {
  const auto it = io_.metadata().find(key);
  INFO(io_.path() << " has no metadata '" << key << "'");
  REQUIRE(it != io_.metadata().end());
  return it->second;
}

void GoldenModel::require_matches(const torch::Tensor& actual, const std::string& name) const {
  const torch::Tensor expected = tensor(name);
  if (!expected.is_floating_point()) {
    INFO(name << ": " << actual << " vs " << expected);
    CHECK(torch::equal(actual.to(torch::kCPU), expected));
    return;
  }
  require_close(actual.to(torch::kCPU), expected, tolerance(name), 0.0, std::nullopt,
                dir_ + ": " + name);
}

double relative_distance(const torch::Tensor& actual, const torch::Tensor& expected) {
  const torch::Tensor e = expected.to(torch::kCPU, torch::kFloat32);
  return ((actual.to(torch::kCPU, torch::kFloat32) - e).norm() / e.norm()).item<double>();
}

torch::Tensor code_agreement(const torch::Tensor& actual, const torch::Tensor& expected) {
  REQUIRE(actual.sizes() == expected.sizes());
  return actual.to(torch::kCPU).eq(expected).to(torch::kFloat64).mean(-1);
}

}  // namespace alto::test
