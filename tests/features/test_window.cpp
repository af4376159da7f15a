#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/core/error.h"
#include "alto/features/window.h"

using namespace alto;
using namespace alto::features;

namespace {
torch::Tensor as_tensor(const std::vector<float>& w) {
  return torch::tensor(std::vector<float>(w.begin(), w.end()));
}
}  // namespace

TEST_CASE("Windows equal torch's and torchaudio.compliance.kaldi's", "[features][window]") {
  for (int n : {1, 2, 25, 400, 512}) {
    for (bool periodic : {true, false}) {
      INFO("length " << n << " periodic " << periodic);
      CHECK(torch::allclose(as_tensor(make_window(WindowType::kHann, n, periodic)),
                            torch::hann_window(n, periodic), 1e-6, 1e-7));
      CHECK(torch::allclose(as_tensor(make_window(WindowType::kHamming, n, periodic)),
                            torch::hamming_window(n, periodic, 0.54, 0.46), 1e-6, 1e-7));
      CHECK(torch::allclose(as_tensor(make_window(WindowType::kBlackman, n, periodic)),
                            torch::blackman_window(n, periodic), 1e-6, 1e-6));
    }
    CHECK(torch::allclose(as_tensor(make_window(WindowType::kPovey, n, false)),
                          torch::hann_window(n, false).pow(0.85), 1e-6, 1e-7));
    CHECK(torch::equal(as_tensor(make_window(WindowType::kRectangular, n, false)), torch::ones(n)));
  }
}

TEST_CASE("A short window is centred in n_fft as torch.stft pads it", "[features][window]") {
  const std::vector<float> w = center_window(make_window(WindowType::kHann, 5, true), 10);
  REQUIRE(w.size() == 10);
  CHECK(w[0] == 0.0f);
  CHECK(w[1] == 0.0f);
  CHECK(w[2] == 0.0f);  // hann(5)[0] = 0, placed at (10 - 5) / 2 = 2
  CHECK(w[3] > 0.0f);
  CHECK(w[7] == 0.0f);
  CHECK_THROWS_WITH(center_window(std::vector<float>(11, 1.0f), 10), Catch::Contains("win_length"));
  CHECK_THROWS_WITH(parse_window_type("kaiser"), Catch::Contains("kaiser"));
}
