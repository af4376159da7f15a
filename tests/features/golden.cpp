#include "golden.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "test_util.h"

namespace alto::test {

GoldenCase::GoldenCase(const std::string& case_name)
    : name_(case_name), file_(data_path("features/" + case_name + ".safetensors")) {}

torch::Tensor GoldenCase::tensor(const std::string& name) const { return file_.tensor(name); }

std::string GoldenCase::meta(const std::string& key) const {
  const auto& metadata = file_.metadata();
  auto it = metadata.find(key);
  INFO("case " << name_ << " metadata key " << key);
  REQUIRE(it != metadata.end());
  return it->second;
}

double GoldenCase::meta_number(const std::string& key) const { return std::stod(meta(key)); }

std::string GoldenCase::wav_path() const { return data_path("features/" + name_ + ".wav"); }

void GoldenCase::require_matches(const torch::Tensor& actual, const std::string& name) const {
  const auto& metadata = file_.metadata();
  std::optional<double> mean_abs;
  if (metadata.count("mean_abs_tol")) mean_abs = meta_number("mean_abs_tol");
  // Per-tensor bounds: mel_filters_atol, fbank_unnormalized_atol (also for fbank_unnormalized_0).
  std::string atol_key = "atol";
  const std::string base = name.substr(0, name.find_last_not_of("0123456789_") + 1);
  if (metadata.count(name + "_atol"))
    atol_key = name + "_atol";
  else if (metadata.count(base + "_atol"))
    atol_key = base + "_atol";
  require_close(actual, tensor(name), meta_number(atol_key), meta_number("rtol"),
                name == "expected" ? mean_abs : std::nullopt, name_ + "/" + name);
}

void require_close(const torch::Tensor& actual, const torch::Tensor& expected, double atol,
                   double rtol, std::optional<double> mean_abs_tol, const std::string& what) {
  INFO(what << ": actual " << actual.sizes() << " vs expected " << expected.sizes());
  REQUIRE(actual.sizes() == expected.sizes());
  const torch::Tensor a = actual.to(torch::kFloat64);
  const torch::Tensor e = expected.to(torch::kFloat64);
  const torch::Tensor err = (a - e).abs();
  const torch::Tensor excess = err - (atol + rtol * e.abs());
  const int64_t worst = excess.flatten().argmax().item<int64_t>();
  INFO("worst element " << worst << ": actual " << a.flatten()[worst].item<double>() << " expected "
                        << e.flatten()[worst].item<double>() << " (atol " << atol << ", rtol "
                        << rtol << "), max abs error " << err.max().item<double>());
  CHECK(excess.flatten()[worst].item<double>() <= 0.0);
  if (mean_abs_tol) {
    INFO("mean abs error " << err.mean().item<double>() << " vs mean_abs_tol " << *mean_abs_tol);
    CHECK(err.mean().item<double>() <= *mean_abs_tol);
  }
}

}  // namespace alto::test
