#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/features/seamless_m4t_feature_extractor.h"
#include "golden.h"

using namespace alto;
using namespace alto::features;

TEST_CASE("SeamlessM4T features equal transformers on single clips",
          "[features][seamless][golden]") {
  for (const char* name : {"seamless_m4t__speech_4s", "seamless_m4t__short_0p3s"}) {
    SECTION(name) {
      const test::GoldenCase c(name);
      const SeamlessM4TFeatureExtractor fe;
      c.require_matches(fe.fbank(c.tensor("input")), "fbank_unnormalized");
      const BatchFeature out = fe.compute(c.tensor("input"));
      c.require_matches(out.input_features);
      CHECK(torch::equal(out.attention_mask, c.tensor("attention_mask")));
    }
  }
}

TEST_CASE("SeamlessM4T batches pad to the longest (multiple of 2) and stack by 2",
          "[features][seamless][golden]") {
  const test::GoldenCase c("seamless_m4t_batch__short_0p3s_and_noise_1s");
  const SeamlessM4TFeatureExtractor fe;
  const BatchFeature out = fe.compute_batch({c.tensor("input"), c.tensor("input_1")});
  c.require_matches(fe.fbank(c.tensor("input")), "fbank_unnormalized_0");
  c.require_matches(fe.fbank(c.tensor("input_1")), "fbank_unnormalized_1");
  c.require_matches(out.input_features);
  CHECK(torch::equal(out.attention_mask, c.tensor("attention_mask")));
}
