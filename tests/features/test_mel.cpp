#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "alto/core/warning.h"

#include "alto/core/error.h"
#include "alto/features/mel.h"
#include "alto/features/whisper_feature_extractor.h"
#include "golden.h"

using namespace alto;
using namespace alto::features;

TEST_CASE("Whisper mel filters equal transformers' mel_filter_bank and openai's npz",
          "[features][mel][golden]") {
  for (int n_mels : {80, 128}) {
    WhisperFeatureExtractorOptions o;
    o.feature_size = n_mels;
    const torch::Tensor filters = WhisperFeatureExtractor(o).mel_filters();  // [201, n_mels] f64
    const test::GoldenCase hf("mel_filters_hf_whisper" + std::to_string(n_mels));
    hf.require_matches(filters, "expected_float64");
    hf.require_matches(filters.to(torch::kFloat32), "expected");
    const test::GoldenCase openai("mel_filters_openai_" + std::to_string(n_mels));
    openai.require_matches(filters.t().to(torch::kFloat32));
    // Filterbank rows sum as the reference's do (per-filter area under Slaney norm).
    test::require_close(filters.sum(0), hf.tensor("expected_float64").sum(0), 1e-9, 1e-7,
                        std::nullopt, "filter sums");
  }
}

TEST_CASE("Mel scales convert both ways", "[features][mel]") {
  for (MelScale scale : {MelScale::kHtk, MelScale::kSlaney, MelScale::kKaldi}) {
    for (double hz : {0.0, 300.0, 999.0, 1000.0, 4000.0, 8000.0}) {
      CHECK(mel_to_hertz(hertz_to_mel(hz, scale), scale) == Approx(hz).margin(1e-9));
    }
  }
  CHECK(hertz_to_mel(1000.0, MelScale::kSlaney) == Approx(15.0));
  CHECK(hertz_to_mel(700.0, MelScale::kHtk) == Approx(2595.0 * std::log10(2.0)));
}

TEST_CASE("Unnormalised HTK triangles peak at one and sum like torchaudio's",
          "[features][mel][golden]") {
  const test::GoldenCase c("melspec_htk_nonorm__chirp_1s");
  MelFilterBankOptions o;
  o.num_frequency_bins = 201;
  o.num_mel_filters = 80;
  o.max_frequency = 8000;
  const torch::Tensor filters = mel_filter_bank(o);
  CHECK(filters.max().item<double>() <= 1.0);
  test::require_close(filters.sum(0), c.tensor("mel_filters").sum(0), 1e-4, 1e-5, std::nullopt,
                      "row sums vs torchaudio");
}

TEST_CASE("Mel filterbank options are checked", "[features][mel][errors]") {
  MelFilterBankOptions o;
  o.max_frequency = 9000;
  CHECK_THROWS_WITH(mel_filter_bank(o), Catch::Contains("f_max"));
  CHECK_THROWS_WITH(parse_mel_scale("bark"), Catch::Contains("bark"));
}

TEST_CASE("Empty mel filters are kept with a warning, as torchaudio keeps them",
          "[features][mel]") {
  std::vector<std::string> warnings;
  alto::set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  MelFilterBankOptions o;
  o.num_mel_filters = 200;
  const torch::Tensor filters = mel_filter_bank(o);
  alto::set_warning_handler({});
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("n_mels=200"));
  const torch::Tensor per_filter = filters.sum(0);
  const int64_t empty = (per_filter == 0).sum().item<int64_t>();
  CHECK(empty > 0);
  CHECK_THAT(warnings[0], Catch::StartsWith("mel filterbank: " + std::to_string(empty) + " of"));
  CHECK(filters.size(1) == 200);
}
