#pragma once
// A mel spectrogram equal to torchaudio.transforms.MelSpectrogram.

#include <torch/types.h>

#include <memory>
#include <optional>
#include <string>

#include "alto/features/feature_extractor.h"
#include "alto/features/frames.h"
#include "alto/features/mel.h"
#include "alto/features/stft.h"

namespace alto::features {

/// torchaudio.transforms.MelSpectrogram's arguments and defaults (window: periodic Hann).
struct MelSpectrogramOptions {
  int sample_rate = 16000;
  int n_fft = 400;
  int win_length = 0;  // 0: n_fft
  int hop_length = 0;  // 0: win_length / 2
  double f_min = 0.0;
  std::optional<double> f_max;  // unset: sample_rate / 2
  int n_mels = 128;
  double power = 2.0;
  bool normalized = false;  // divide the spectrum by the window's L2 norm (torchaudio "window")
  bool center = true;
  PadMode pad_mode = PadMode::kReflect;
  MelNorm norm = MelNorm::kNone;
  MelScale mel_scale = MelScale::kHtk;

  int resolved_win_length() const { return win_length > 0 ? win_length : n_fft; }
  int resolved_hop_length() const {
    return hop_length > 0 ? hop_length : resolved_win_length() / 2;
  }
  double resolved_f_max() const { return f_max ? *f_max : sample_rate / 2.0; }
  void validate() const;
  static const OptionSchema<MelSpectrogramOptions>& schema();
};

class MelSpectrogram : public FeatureExtractor {
 public:
  using Options = MelSpectrogramOptions;
  explicit MelSpectrogram(MelSpectrogramOptions options = {});
  /// wave: [samples] -> [n_mels, frames] float32 (linear power).
  torch::Tensor compute(const torch::Tensor& wave) const;

  std::string name() const override { return "mel"; }
  int sampling_rate() const override { return options_.sample_rate; }
  OptionList option_list() const override { return options_.schema().values(options_); }

 protected:
  /// [B, n_mels, frames], zero-padded to the longest; attention_mask [B, frames] for batches.
  BatchFeature compute_features(const std::vector<torch::Tensor>& clips,
                                const PaddingOptions& padding) const override;

 public:
  const MelSpectrogramOptions& options() const { return options_; }
  /// [n_fft / 2 + 1, n_mels], torchaudio's melscale_fbanks (computed in float64).
  const torch::Tensor& mel_filters() const { return mel_filters_; }
  const FrameProcessor& frame_processor() const { return *frames_; }

 private:
  MelSpectrogramOptions options_;
  torch::Tensor mel_filters_;
  std::shared_ptr<const FrameProcessor> frames_;
};

}  // namespace alto::features
