#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/features/wav2vec2_feature_extractor.h"
#include "golden.h"

using namespace alto;
using namespace alto::features;

namespace {
// transformers' zero_mean_unit_var_norm on one vector, in float64.
torch::Tensor normed(const torch::Tensor& x) {
  const torch::Tensor d = x.to(torch::kFloat64);
  return ((d - d.mean()) / torch::sqrt(d.var(false) + 1e-7)).to(torch::kFloat32);
}
}  // namespace

TEST_CASE("Wav2Vec2 normalises each clip to zero mean and unit variance", "[features][wav2vec2]") {
  torch::manual_seed(1);
  const torch::Tensor x = torch::randn({8000}) * 0.3 + 0.05;
  const torch::Tensor v = Wav2Vec2FeatureExtractor().compute(x);
  test::require_close(v, normed(x), 1e-6, 0, std::nullopt, "input_values");
  CHECK(std::abs(v.mean().item<double>()) < 1e-6);
}

TEST_CASE("Wav2Vec2 padding follows transformers: with a mask the padding is excluded",
          "[features][wav2vec2]") {
  torch::manual_seed(2);
  const torch::Tensor a = torch::randn({1000}), b = torch::randn({600}) + 1.0;
  PaddingOptions padding;
  padding.padding = PaddingOptions::Strategy::kLongest;
  padding.return_attention_mask = true;
  const Wav2Vec2FeatureExtractor fe;
  const BatchFeature masked = fe.compute_batch({a, b}, padding);
  CHECK(masked.name == "input_values");
  CHECK(masked.input_features.sizes() == torch::IntArrayRef({2, 1000}));
  CHECK(masked.attention_mask[1].sum().item<int64_t>() == 600);
  test::require_close(masked.input_features[1].slice(0, 0, 600), normed(b), 1e-6, 0, std::nullopt,
                      "masked item");
  CHECK(masked.input_features[1].slice(0, 600).abs().sum().item<float>() == 0.0f);
  // Without a mask transformers normalises over the zero padding as well.
  padding.return_attention_mask = false;
  const BatchFeature unmasked = fe.compute_batch({a, b}, padding);
  CHECK_FALSE(unmasked.attention_mask.defined());
  test::require_close(unmasked.input_features[1], normed(torch::cat({b, torch::zeros({400})})),
                      1e-6, 0, std::nullopt, "unmasked item");
  // Left padding puts the zeros first.
  Wav2Vec2FeatureExtractorOptions o;
  o.padding_side = PaddingSide::kLeft;
  padding.return_attention_mask = true;
  const BatchFeature left = Wav2Vec2FeatureExtractor(o).compute_batch({a, b}, padding);
  CHECK(left.attention_mask[1].slice(0, 0, 400).sum().item<int64_t>() == 0);
  test::require_close(left.input_features[1].slice(0, 400), normed(b), 1e-6, 0, std::nullopt,
                      "left-padded item");
  // Different lengths cannot batch without padding.
  CHECK_THROWS_WITH(fe.compute_batch({a, b}), Catch::Contains("without padding"));
}
