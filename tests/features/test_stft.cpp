#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/core/error.h"
#include "alto/features/stft.h"
#include "golden.h"

using namespace alto;
using namespace alto::features;

TEST_CASE("Stft equals torch.stft on the golden chirp", "[features][stft][golden]") {
  const test::GoldenCase c("stft_512_128__chirp_1s");
  StftOptions o;
  o.n_fft = 512;
  o.hop_length = 128;
  const torch::Tensor s = Stft(o).compute(c.tensor("input"));
  REQUIRE(s.is_complex());
  c.require_matches(torch::real(s), "expected_real");
  c.require_matches(torch::imag(s), "expected_imag");
}

TEST_CASE("InverseStft equals torch.istft on the golden round trip", "[features][stft][golden]") {
  const test::GoldenCase c("istft_roundtrip_512_128__noise_1s");
  StftOptions o;
  o.n_fft = 512;
  o.hop_length = 128;
  const torch::Tensor spectrum = torch::complex(c.tensor("stft_real"), c.tensor("stft_imag"));
  const torch::Tensor x = InverseStft(o).compute(spectrum, c.tensor("input").numel());
  c.require_matches(x);
  test::require_close(x, c.tensor("input"), 1e-6, 0, std::nullopt, "istft(stft(x)) = x");
}

TEST_CASE("Stft matches libtorch's torch::stft across options", "[features][stft]") {
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({4000});
  struct Case {
    int n_fft, hop, win;
    bool center;
    PadMode pad;
    WindowType window;
    bool normalized, onesided;
  };
  const Case cases[] = {
      {400, 160, 400, true, PadMode::kReflect, WindowType::kHann, false, true},
      {512, 128, 300, true, PadMode::kConstant, WindowType::kHamming, false, true},
      {255, 64, 255, false, PadMode::kReflect, WindowType::kHann, true, true},
      {64, 16, 48, true, PadMode::kReflect, WindowType::kBlackman, false, false}};
  for (const Case& k : cases) {
    StftOptions o;
    o.n_fft = k.n_fft;
    o.hop_length = k.hop;
    o.win_length = k.win;
    o.center = k.center;
    o.pad_mode = k.pad;
    o.window = k.window;
    o.normalized = k.normalized;
    o.onesided = k.onesided;
    const torch::Tensor window = k.window == WindowType::kHann      ? torch::hann_window(k.win)
                                 : k.window == WindowType::kHamming ? torch::hamming_window(k.win)
                                                                    : torch::blackman_window(k.win);
    const torch::Tensor expected =
        torch::stft(x, k.n_fft, k.hop, k.win, window, k.center,
                    k.pad == PadMode::kReflect ? "reflect" : "constant", k.normalized, k.onesided,
                    /*return_complex=*/true);
    const torch::Tensor actual = Stft(o).compute(x);
    INFO("n_fft " << k.n_fft << " hop " << k.hop << " win " << k.win);
    test::require_close(torch::view_as_real(actual), torch::view_as_real(expected), 1e-4, 1e-5,
                        std::nullopt, "stft vs torch::stft");
    // Without centring a Hann window's zero first sample leaves the envelope empty there, and
    // torch.istft refuses it too.
    if (k.onesided && k.center) {
      const torch::Tensor back = InverseStft(o).compute(actual, x.numel());
      const torch::Tensor ref = torch::istft(expected, k.n_fft, k.hop, k.win, window, k.center,
                                             k.normalized, k.onesided, x.numel());
      test::require_close(back, ref, 1e-5, 0, std::nullopt, "istft vs torch::istft");
    }
  }
}

TEST_CASE("Stft power spectra obey Parseval frame by frame", "[features][stft]") {
  torch::manual_seed(5);
  const torch::Tensor x = torch::randn({2048});
  StftOptions o;
  o.n_fft = 256;
  o.hop_length = 256;
  o.center = false;
  o.window = WindowType::kRectangular;
  o.power = 2.0;
  const torch::Tensor p = Stft(o).compute(x).to(torch::kFloat64);  // [129, 8]
  // sum_n x[n]^2 = (|X_0|^2 + 2 sum_{0<k<N/2} |X_k|^2 + |X_{N/2}|^2) / N
  const torch::Tensor spectral = (p[0] + 2 * p.slice(0, 1, 128).sum(0) + p[128]) / 256.0;
  const torch::Tensor temporal = x.to(torch::kFloat64).view({8, 256}).pow(2).sum(1);
  test::require_close(spectral, temporal, 1e-3, 1e-5, std::nullopt, "Parseval");
}

TEST_CASE("InverseStft round-trips any hop that satisfies the overlap condition",
          "[features][stft]") {
  torch::manual_seed(7);
  for (int hop : {100, 128, 200}) {
    const torch::Tensor x = torch::randn({5000});
    StftOptions o;
    o.n_fft = 400;
    o.hop_length = hop;
    const torch::Tensor back = InverseStft(o).compute(Stft(o).compute(x), x.numel());
    test::require_close(back, x, 2e-5, 0, std::nullopt, "istft(stft(x))");
  }
}

TEST_CASE("Stft rejects inconsistent options and input", "[features][stft][errors]") {
  StftOptions o;
  o.win_length = 500;
  CHECK_THROWS_WITH(Stft(o), Catch::Contains("win_length") && Catch::Contains("n_fft"));
  o = {};
  o.center = false;
  CHECK_THROWS_WITH(Stft(o).compute(torch::zeros({100})), Catch::Contains("fewer than n_fft"));
  CHECK_THROWS_AS(Stft({}).compute(torch::zeros({0})), InvalidArgument);
  o = {};
  o.n_fft = 8;
  o.hop_length = 8;
  o.window = WindowType::kHann;
  o.win_length = 4;  // hop > window: gaps in the envelope
  CHECK_THROWS_WITH(InverseStft(o).compute(Stft(o).compute(torch::randn({64}))),
                    Catch::Contains("envelope"));
}
