#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/core/error.h"
#include "alto/features/kaldi_mfcc.h"
#include "golden.h"

using namespace alto;
using namespace alto::features;

TEST_CASE("Kaldi MFCC equals torchaudio.compliance.kaldi.mfcc on every golden case",
          "[features][kaldi][golden]") {
  for (const char* name : {"kaldi_mfcc13_int16scale__speech_4s", "kaldi_mfcc13__noise_1s"}) {
    SECTION(name) {
      const test::GoldenCase c(name);
      KaldiMfccOptions o;
      o.num_ceps = static_cast<int>(c.meta_number("num_ceps"));
      o.num_mel_bins = static_cast<int>(c.meta_number("num_mel_bins"));
      c.require_matches(KaldiMfcc(o).compute(c.tensor("input") * c.meta_number("input_scale")));
    }
  }
}

TEST_CASE("Kaldi MFCC validates num_ceps against num_mel_bins", "[features][kaldi][errors]") {
  KaldiMfccOptions o;
  o.num_ceps = 40;
  CHECK_THROWS_WITH(KaldiMfcc(o), Catch::Contains("num_ceps"));
}
