#pragma once
// Analysis windows as torch and torchaudio.compliance.kaldi build them.

#include <string>
#include <vector>

#include "alto/core/options.h"

namespace alto::features {

enum class WindowType { kHann, kHamming, kPovey, kBlackman, kRectangular };

/// "hann" (also Kaldi's "hanning"), "hamming", "povey", "blackman", "rectangular".
const ChoiceNames<WindowType>& window_type_names();
WindowType parse_window_type(const std::string& name);
std::string to_string(WindowType type);

/// A window of `length` samples. `periodic` follows torch.*_window: the periodic form is the
/// symmetric window of length + 1 without its last sample (what torch.stft users pass); Kaldi
/// uses the symmetric form. Povey is Kaldi's hann^0.85; hamming is 0.54 - 0.46 cos; blackman
/// takes Kaldi's `blackman_coeff` (0.42 is the classic window).
std::vector<float> make_window(WindowType type, int length, bool periodic,
                               double blackman_coeff = 0.42);

/// Places a window of win_length <= n_fft in the middle of n_fft zeros, as torch.stft does.
std::vector<float> center_window(const std::vector<float>& window, int n_fft);

}  // namespace alto::features
