#pragma once
// Whisper's log-mel spectrogram, as transformers' WhisperFeatureExtractor computes it.

#include <torch/types.h>

#include <memory>
#include <string>

#include "alto/features/feature_extractor.h"
#include "alto/features/frames.h"
#include "alto/features/mel.h"

namespace alto::features {

/// Field names are preprocessor_config.json's.
struct WhisperFeatureExtractorOptions {
  int feature_size = 80;  // n_mels: 80, or 128 for large-v3
  int sampling_rate = 16000;
  int hop_length = 160;
  int chunk_length = 30;  // seconds; clips are padded/truncated to chunk_length * sampling_rate
  int n_fft = 400;
  double padding_value = 0.0;
  double dither = 0.0;  // Gaussian noise std added to each frame (alto's generator, seed below)
  uint64_t dither_seed = 0;
  bool return_attention_mask = false;
  bool do_normalize = false;  // zero-mean unit-variance of the raw audio first
  PaddingSide padding_side = PaddingSide::kRight;
  /// Whisper's dynamic-range clamp, max(x, max(x) - 8) over each clip. It needs the whole clip,
  /// so the streaming extractor turns it off; turn it off here to get the frames it produces.
  bool clamp_dynamic_range = true;

  int64_t n_samples() const { return static_cast<int64_t>(chunk_length) * sampling_rate; }
  int64_t nb_max_frames() const { return n_samples() / hop_length; }
  void validate() const;
  static const OptionSchema<WhisperFeatureExtractorOptions>& schema();
};

class WhisperFeatureExtractor : public FeatureExtractor {
 public:
  using Options = WhisperFeatureExtractorOptions;
  explicit WhisperFeatureExtractor(WhisperFeatureExtractorOptions options = {});

  /// wave: [samples] at sampling_rate -> [feature_size, frames]: 3000 frames by default (30 s of
  /// padding/truncation); with PaddingOptions{kLongest, truncation false} the long-form
  /// variant, samples / hop_length frames.
  torch::Tensor compute(const torch::Tensor& wave, const PaddingOptions& padding = {}) const;

  std::string name() const override { return "whisper"; }
  int sampling_rate() const override { return options_.sampling_rate; }
  OptionList option_list() const override { return options_.schema().values(options_); }

 protected:
  /// input_features [B, feature_size, frames], attention_mask [B, frames] when requested.
  BatchFeature compute_features(const std::vector<torch::Tensor>& clips,
                                const PaddingOptions& padding) const override;

 public:
  const WhisperFeatureExtractorOptions& options() const { return options_; }
  /// The per-frame log-mel, (log10(max(mel, 1e-10)) + 4) / 4 before the clamp.
  const FrameProcessor& frame_processor() const { return *frames_; }
  /// [n_fft / 2 + 1, feature_size] float64, transformers' mel_filter_bank.
  const torch::Tensor& mel_filters() const { return mel_filters_; }

 private:
  WhisperFeatureExtractorOptions options_;
  torch::Tensor mel_filters_;
  std::shared_ptr<const FrameProcessor> frames_;
};

}  // namespace alto::features
