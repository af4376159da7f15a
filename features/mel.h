#pragma once
// Mel filterbanks as transformers (audio_utils.mel_filter_bank), torchaudio
// (functional.melscale_fbanks, librosa's formulas) and torchaudio.compliance.kaldi build them.

#include <torch/types.h>

#include <string>
#include <vector>

#include "alto/core/options.h"

namespace alto::features {

enum class MelScale { kHtk, kSlaney, kKaldi };
enum class MelNorm { kNone, kSlaney };

const ChoiceNames<MelScale>& mel_scale_names();
const ChoiceNames<MelNorm>& mel_norm_names();
MelScale parse_mel_scale(const std::string& name);  // "htk", "slaney", "kaldi"
MelNorm parse_mel_norm(const std::string& name);    // "none", "slaney"
std::string to_string(MelScale scale);
std::string to_string(MelNorm norm);

double hertz_to_mel(double hertz, MelScale scale);
double mel_to_hertz(double mel, MelScale scale);

/// The most weights a mel filterbank may hold (frequency bins x filters, 128 MB in float64): any
/// real configuration fits (n_fft 16384 with 1024 filters is half of it), and a corrupt one
/// (n_fft 4006000 in a preprocessor_config.json) cannot demand gigabytes.
constexpr int64_t kMaxMelFilterBankSize = int64_t{1} << 24;

struct MelFilterBankOptions {
  int num_frequency_bins = 201;  // n_fft / 2 + 1
  int num_mel_filters = 80;
  double min_frequency = 0.0;
  double max_frequency = 8000.0;
  int sampling_rate = 16000;
  MelNorm norm = MelNorm::kNone;
  MelScale mel_scale = MelScale::kHtk;
  /// Triangles in mel space over the FFT bins' mel positions (Kaldi, SeamlessM4T).
  bool triangularize_in_mel_space = false;
};

/// transformers.audio_utils.mel_filter_bank, natively float64: [num_frequency_bins,
/// num_mel_filters]. A filter with no non-zero weight is an error naming n_mels and the FFT size:
/// the options ask for more filters than the FFT resolves.
torch::Tensor mel_filter_bank(const MelFilterBankOptions& options);

/// torchaudio.compliance.kaldi.get_mel_banks evaluated in float32 as torchaudio does, with the
/// zero Nyquist column appended: [num_bins, padded_window_size / 2 + 1].
torch::Tensor kaldi_mel_banks(int num_bins, int padded_window_size, double sample_frequency,
                              double low_freq, double high_freq);

/// A filterbank kept as each filter's non-zero span, so a projection costs only what the
/// triangles cover (a few hundred multiply-adds per frame instead of n_freq x n_mels).
class SparseMelBank {
 public:
  SparseMelBank() = default;
  /// filters: [num_frequency_bins, num_mels] (any floating dtype); weights are kept in float32.
  explicit SparseMelBank(const torch::Tensor& filters);
  int num_bins() const { return num_bins_; }
  int num_mels() const { return static_cast<int>(begin_.size()); }
  /// mel[m] = sum_k power[k] * filters[k, m].
  void apply(const float* power, float* mel) const;

 private:
  int num_bins_ = 0;
  std::vector<int> begin_;
  std::vector<int> offset_;  // into weights_, num_mels + 1 entries
  std::vector<float> weights_;
};

}  // namespace alto::features
