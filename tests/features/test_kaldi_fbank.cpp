#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/core/error.h"
#include "alto/features/kaldi_fbank.h"
#include "golden.h"

using namespace alto;
using namespace alto::features;

TEST_CASE("Kaldi fbank equals torchaudio.compliance.kaldi.fbank on every golden case",
          "[features][kaldi][golden]") {
  const char* cases[] = {"kaldi_fbank80__speech_4s", "kaldi_fbank80_int16scale__speech_4s",
                         "kaldi_fbank80_nosnip__short_0p3s",
                         "kaldi_fbank80_int16scale_nosnip__noise_1s", "kaldi_fbank80__silence_1s"};
  for (const char* name : cases) {
    SECTION(name) {
      const test::GoldenCase c(name);
      KaldiFbankOptions o;
      o.num_mel_bins = static_cast<int>(c.meta_number("num_mel_bins"));
      o.snip_edges = c.meta("snip_edges") == "true";
      const KaldiFbank fbank(o);
      c.require_matches(fbank.compute(c.tensor("input") * c.meta_number("input_scale")));
    }
  }
}

TEST_CASE("Kaldi frame counts follow snip_edges", "[features][kaldi]") {
  KaldiFbankOptions o;
  o.num_mel_bins = 40;
  for (int64_t n : {400, 401, 559, 560, 16000, 16079, 16080}) {
    o.snip_edges = true;
    CHECK(KaldiFbank(o).compute(torch::randn({n})).size(0) == 1 + (n - 400) / 160);
    o.snip_edges = false;
    CHECK(KaldiFbank(o).compute(torch::randn({n})).size(0) == (n + 80) / 160);
  }
}

TEST_CASE("Kaldi options are validated and named", "[features][kaldi][errors]") {
  KaldiFbankOptions o;
  o.frame_shift = 0;
  CHECK_THROWS_WITH(KaldiFbank(o), Catch::Contains("frame_shift"));
  o = {};
  o.high_freq = 9000;
  CHECK_THROWS_WITH(KaldiFbank(o), Catch::Contains("high_freq"));
  o = {};
  o.preemphasis_coefficient = 1.5;
  CHECK_THROWS_WITH(KaldiFbank(o), Catch::Contains("preemphasis_coefficient"));
  o = {};
  o.num_mel_bins = 400;  // more triangles than 256 bins resolve
  CHECK_THROWS_WITH(KaldiFbank(o), Catch::Contains("num_mel_bins"));
  CHECK_THROWS_WITH(KaldiFbank().compute(torch::zeros({100})), Catch::Contains("shorter"));
  o = {};
  o.min_duration = 1.0;
  CHECK(KaldiFbank(o).compute(torch::zeros({8000})).size(0) == 0);
}
