#include "alto/features/window.h"

#include <cmath>

#include "alto/core/error.h"

namespace alto::features {

const ChoiceNames<WindowType>& window_type_names() {
  static const ChoiceNames<WindowType> names = {{"hann", WindowType::kHann},
                                                {"hamming", WindowType::kHamming},
                                                {"povey", WindowType::kPovey},
                                                {"blackman", WindowType::kBlackman},
                                                {"rectangular", WindowType::kRectangular},
                                                {"hanning", WindowType::kHann}};
  return names;
}

WindowType parse_window_type(const std::string& name) {
  return parse_choice(window_type_names(), name, "window type");
}

std::string to_string(WindowType type) { return choice_name(window_type_names(), type); }

std::vector<float> make_window(WindowType type, int length, bool periodic, double blackman_coeff) {
  ALTO_CHECK(length >= 1, "window length must be >= 1, got ", length);
  std::vector<float> window(length, 1.0f);
  if (type == WindowType::kRectangular || length == 1) return window;
  // torch evaluates cos(2 pi n / N) with N = length (periodic) or length - 1 (symmetric).
  const double denominator = periodic ? length : length - 1;
  const double a = 2.0 * M_PI / denominator;
  for (int n = 0; n < length; ++n) {
    double w = 0.0;
    switch (type) {
      case WindowType::kHann:
        w = 0.5 - 0.5 * std::cos(a * n);
        break;
      case WindowType::kPovey:
        w = std::pow(0.5 - 0.5 * std::cos(a * n), 0.85);
        break;
      case WindowType::kHamming:
        w = 0.54 - 0.46 * std::cos(a * n);
        break;
      case WindowType::kBlackman:
        w = blackman_coeff - 0.5 * std::cos(a * n) + (0.5 - blackman_coeff) * std::cos(2 * a * n);
        break;
      case WindowType::kRectangular:
        w = 1.0;
        break;
    }
    window[n] = static_cast<float>(w);
  }
  return window;
}

std::vector<float> center_window(const std::vector<float>& window, int n_fft) {
  const int length = static_cast<int>(window.size());
  ALTO_CHECK(length <= n_fft, "win_length (", length, ") must be <= n_fft (", n_fft, ")");
  std::vector<float> centered(n_fft, 0.0f);
  const int left =
      (n_fft - length) / 2;  // torch.stft pads the window (n_fft - win_length) / 2 left
  for (int n = 0; n < length; ++n) centered[left + n] = window[n];
  return centered;
}

}  // namespace alto::features
