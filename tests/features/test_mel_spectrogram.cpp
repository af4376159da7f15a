#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/core/error.h"
#include "alto/features/mel_spectrogram.h"
#include "golden.h"

using namespace alto;
using namespace alto::features;

TEST_CASE("MelSpectrogram equals torchaudio.transforms.MelSpectrogram", "[features][mel][golden]") {
  const char* cases[] = {"melspec_htk_nonorm__chirp_1s", "melspec_htk_slaneynorm__chirp_1s",
                         "melspec_slaney_nonorm__chirp_1s", "melspec_slaney_slaneynorm__chirp_1s",
                         "melspec_htk_nonorm__speech_4s"};
  for (const char* name : cases) {
    SECTION(name) {
      const test::GoldenCase c(name);
      MelSpectrogramOptions o;
      o.n_fft = 400;
      o.hop_length = 160;
      o.f_max = 8000;
      o.n_mels = 80;
      o.mel_scale = parse_mel_scale(c.meta("mel_scale"));
      o.norm = c.meta("norm") == "slaney" ? MelNorm::kSlaney : MelNorm::kNone;
      const MelSpectrogram mel(o);
      c.require_matches(mel.mel_filters(), "mel_filters");
      c.require_matches(mel.compute(c.tensor("input")));
    }
  }
}

TEST_CASE("MelSpectrogram batches zero-pad frames and mask them", "[features][mel]") {
  MelSpectrogramOptions o;
  o.n_mels = 40;
  const MelSpectrogram mel(o);
  const torch::Tensor a = torch::randn({3200}), b = torch::randn({1600});
  const BatchFeature batch = mel.compute_batch({a, b});
  CHECK(batch.input_features.sizes() == torch::IntArrayRef({2, 40, 17}));
  CHECK(batch.attention_mask[1].sum().item<int64_t>() == 9);
  CHECK(torch::equal(batch.input_features[1].slice(1, 0, 9), mel.compute(b)));
  CHECK(batch.input_features[1].slice(1, 9).abs().sum().item<float>() == 0.0f);
}

TEST_CASE("MelSpectrogram options are checked by name", "[features][mel][errors]") {
  MelSpectrogramOptions o;
  o.win_length = 800;
  CHECK_THROWS_WITH(MelSpectrogram(o), Catch::Contains("win_length"));
  o = {};
  o.f_max = 9000;
  CHECK_THROWS_WITH(MelSpectrogram(o), Catch::Contains("f_max"));
  o = {};
  o.hop_length = -1;
  CHECK_THROWS_WITH(MelSpectrogram(o), Catch::Contains("hop_length"));
}
