#pragma once
// Kaldi filterbank features, equal to torchaudio.compliance.kaldi.fbank.

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "alto/features/feature_extractor.h"
#include "alto/features/frames.h"
#include "alto/features/window.h"

namespace alto::features {

/// torchaudio.compliance.kaldi's argument names and defaults (which differ from Kaldi's
/// binaries: dither 0, energy_floor 1, use_energy false).
struct KaldiFbankOptions {
  double sample_frequency = 16000.0;
  double frame_length = 25.0;  // ms
  double frame_shift = 10.0;   // ms
  double dither = 0.0;
  /// Seed of the dither noise: torch.manual_seed(dither_seed) before torchaudio's call draws the
  /// same noise offline.
  uint64_t dither_seed = 0;
  double preemphasis_coefficient = 0.97;
  bool remove_dc_offset = true;
  WindowType window_type = WindowType::kPovey;
  double blackman_coeff = 0.42;
  bool round_to_power_of_two = true;
  bool snip_edges = true;
  double energy_floor = 1.0;
  bool raw_energy = true;
  bool use_energy = false;
  bool htk_compat = false;
  double low_freq = 20.0;
  double high_freq = 0.0;  // <= 0: offset from Nyquist
  int num_mel_bins = 23;
  bool use_log_fbank = true;
  bool use_power = true;
  bool subtract_mean = false;
  double min_duration = 0.0;  // seconds; shorter input gives no frames

  int window_size() const;   // samples
  int window_shift() const;  // samples
  int padded_window_size() const;
  void validate(const char* type = "KaldiFbankOptions") const;
  static const OptionSchema<KaldiFbankOptions>& schema();
};

class KaldiFbank : public FeatureExtractor {
 public:
  using Options = KaldiFbankOptions;
  explicit KaldiFbank(KaldiFbankOptions options = {});
  /// wave: [samples] -> [frames, num_mel_bins (+1 with use_energy)] float32.
  torch::Tensor compute(const torch::Tensor& wave) const;

  std::string name() const override { return "kaldi-fbank"; }
  int sampling_rate() const override;
  OptionList option_list() const override { return options_.schema().values(options_); }

 protected:
  /// [B, frames, bins], padded with zeros to the longest; attention_mask [B, frames] by default
  /// for more than one clip.
  BatchFeature compute_features(const std::vector<torch::Tensor>& clips,
                                const PaddingOptions& padding) const override;

 public:
  const KaldiFbankOptions& options() const { return options_; }
  const FrameProcessor& frame_processor() const { return *frames_; }

 private:
  KaldiFbankOptions options_;
  std::shared_ptr<const FrameProcessor> frames_;
};

namespace detail {
/// Frames through a FrameProcessor with Kaldi's dither, min_duration and subtract_mean: the
/// offline path shared by fbank and MFCC.
torch::Tensor kaldi_compute(const FrameProcessor& frames, const KaldiFbankOptions& options,
                            const torch::Tensor& wave, const char* what);
/// Batches per-clip [frames, dim] features as alto's Kaldi/mel extractors do: zero padding to the
/// longest, a mask for more than one clip unless told otherwise.
BatchFeature batch_frame_features(std::vector<torch::Tensor> features,
                                  const PaddingOptions& padding);
}  // namespace detail

}  // namespace alto::features
