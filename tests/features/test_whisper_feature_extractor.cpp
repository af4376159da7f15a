#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <string>

#include "alto/core/warning.h"

#include "alto/core/error.h"
#include "alto/features/whisper_feature_extractor.h"
#include "golden.h"

using namespace alto;
using namespace alto::features;

namespace {
WhisperFeatureExtractor extractor_for(const test::GoldenCase& c) {
  WhisperFeatureExtractorOptions o;
  o.feature_size = static_cast<int>(c.meta_number("n_mels"));
  return WhisperFeatureExtractor(o);
}
}  // namespace

TEST_CASE("Whisper log-mel equals transformers and openai-whisper on every golden case",
          "[features][whisper][golden]") {
  const char* cases[] = {"whisper_hf_np_80__speech_4s",   "whisper_hf_np_80__speech_33s",
                         "whisper_hf_np_80__short_0p3s",  "whisper_hf_np_80__silence_1s",
                         "whisper_hf_np_128__speech_4s",  "whisper_openai_80__speech_4s",
                         "whisper_openai_128__short_0p3s"};
  for (const char* name : cases) {
    SECTION(name) {
      const test::GoldenCase c(name);
      const torch::Tensor features = extractor_for(c).compute(c.tensor("input"));
      CHECK(features.size(1) == 3000);
      c.require_matches(features);
    }
  }
}

TEST_CASE(
    "Whisper long-form (padding longest, no truncation) gives samples/hop frames and the mask",
    "[features][whisper][golden]") {
  const test::GoldenCase c("whisper_hf_np_80_nopad__speech_4s");
  PaddingOptions padding;
  padding.padding = PaddingOptions::Strategy::kLongest;
  padding.truncation = false;
  padding.return_attention_mask = true;
  const BatchFeature out = extractor_for(c).compute_one(c.tensor("input"), padding);
  c.require_matches(out.input_features);
  REQUIRE(out.attention_mask.defined());
  CHECK(torch::equal(out.attention_mask, c.tensor("attention_mask")));
}

TEST_CASE("Whisper batches pad to 30 s with a frame mask; a length not on the hop trims the mask",
          "[features][whisper]") {
  const WhisperFeatureExtractor fe;
  const torch::Tensor a = torch::randn({16000}) * 0.1;
  const torch::Tensor b = torch::randn({8001}) * 0.1;
  PaddingOptions padding;
  padding.return_attention_mask = true;
  const BatchFeature batch = fe.compute_batch({a, b}, padding);
  CHECK(batch.input_features.sizes() == torch::IntArrayRef({2, 80, 3000}));
  CHECK(batch.attention_mask.sizes() == torch::IntArrayRef({2, 3000}));
  CHECK(batch.attention_mask[0].sum().item<int64_t>() == 100);
  CHECK(batch.attention_mask[1].sum().item<int64_t>() == 51);  // samples 0, 160, ..., 8000
  // Each item equals its own single-clip computation.
  CHECK(torch::allclose(batch.input_features[1], fe.compute(b)));

  padding.padding = PaddingOptions::Strategy::kLongest;
  padding.truncation = false;
  const BatchFeature longest = fe.compute_batch({a, b}, padding);
  CHECK(longest.input_features.sizes() == torch::IntArrayRef({2, 80, 100}));
  const torch::Tensor odd = torch::randn({16001}) * 0.1;
  const BatchFeature trimmed = fe.compute_batch({odd}, padding);
  CHECK(trimmed.input_features.size(2) == 100);  // 16001 / 160, the last STFT frame dropped
  CHECK(trimmed.attention_mask.size(1) == 100);
  padding.pad_to_multiple_of = 480;
  const BatchFeature rounded = fe.compute_batch({odd}, padding);
  CHECK(rounded.input_features.size(2) == 102);  // 16320 samples / 160
  CHECK(rounded.attention_mask.sum().item<int64_t>() == 101);
}

TEST_CASE("Whisper rejects bad options and bad input by name", "[features][whisper][errors]") {
  WhisperFeatureExtractorOptions o;
  o.hop_length = 0;
  CHECK_THROWS_WITH(WhisperFeatureExtractor(o), Catch::Contains("hop_length"));
  o = {};
  o.feature_size = 400;  // far more filters than 201 bins resolve: transformers warns, so do we
  std::string warning;
  alto::set_warning_handler([&](const std::string& m) { warning = m; });
  CHECK_NOTHROW(WhisperFeatureExtractor(o));
  alto::set_warning_handler({});
  CHECK_THAT(warning, Catch::Contains("n_mels=400"));
  const WhisperFeatureExtractor fe;
  CHECK_THROWS_AS(fe.compute(torch::empty({0})), InvalidArgument);
  torch::Tensor nan = torch::zeros({1000});
  nan[10] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(fe.compute(nan), Catch::Contains("NaN") && Catch::Contains("10"));
  CHECK_THROWS_WITH(fe.compute(torch::zeros({2, 100})), Catch::Contains("mono"));
  CHECK_THROWS_WITH(fe.check_sampling_rate(44100), Catch::Contains("resample"));
}
