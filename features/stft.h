#pragma once
// torch.stft / torch.istft on FFTW.

#include <torch/types.h>

#include <optional>
#include <string>
#include <vector>

#include "alto/features/frames.h"
#include "alto/features/window.h"

namespace alto::features {

enum class PadMode { kReflect, kConstant };
const ChoiceNames<PadMode>& pad_mode_names();
PadMode parse_pad_mode(const std::string& name);  // "reflect", "constant"
std::string to_string(PadMode mode);

struct StftOptions {
  int n_fft = 400;
  int hop_length = 0;  // 0: n_fft / 4, as torch.stft
  int win_length = 0;  // 0: n_fft; a shorter window is centred in n_fft
  WindowType window = WindowType::kHann;
  bool periodic = true;  // torch.hann_window's default
  bool center = true;
  PadMode pad_mode = PadMode::kReflect;
  bool normalized = false;  // multiply by n_fft^-1/2
  bool onesided = true;
  /// nullopt: complex output (return_complex=True); 1: magnitude; 2: power (torchaudio's power).
  std::optional<double> power;

  void validate() const;
  static const OptionSchema<StftOptions>& schema();
  std::string to_string() const;
};

class Stft {
 public:
  explicit Stft(StftOptions options);
  /// wave: [samples] or [batch, samples] float -> [(batch,) n_freq, frames], complex64 when
  /// power is nullopt, else float32. n_freq = n_fft / 2 + 1 when onesided, else n_fft.
  torch::Tensor compute(const torch::Tensor& wave) const;
  const StftOptions& options() const { return options_; }
  /// The window as applied (length n_fft).
  const std::vector<float>& window() const { return window_; }

 private:
  StftOptions options_;
  std::vector<float> window_;
  FrameLayout layout_;
};

/// torch.istft: overlap-add of the inverse transforms, divided by the summed squared window.
class InverseStft {
 public:
  /// options.power must be nullopt (the input is a complex spectrum); onesided input only.
  explicit InverseStft(StftOptions options);
  /// spectrum: [(batch,) n_fft / 2 + 1, frames] complex -> [(batch,) samples] float32. `length`
  /// trims or zero-pads to that many samples, as torch.istft(length=...).
  torch::Tensor compute(const torch::Tensor& spectrum, std::optional<int64_t> length = {}) const;

 private:
  StftOptions options_;
  std::vector<float> window_;
};

}  // namespace alto::features
