#pragma once
// SeamlessM4T / w2v-BERT 2.0 input features, as transformers' SeamlessM4TFeatureExtractor.

#include <torch/types.h>

#include <string>

#include "alto/features/feature_extractor.h"
#include "alto/features/kaldi_fbank.h"

namespace alto::features {

struct SeamlessM4TFeatureExtractorOptions {
  int feature_size = 80;
  int sampling_rate = 16000;
  int num_mel_bins = 80;
  double padding_value = 0.0;
  int stride = 2;
  bool return_attention_mask = true;
  /// Per-utterance, per-bin (x - mean) / sqrt(var(ddof=1) + 1e-7); the __call__ argument
  /// do_normalize_per_mel_bins.
  bool do_normalize_per_mel_bins = true;
  PaddingSide padding_side = PaddingSide::kRight;

  void validate() const;
  static const OptionSchema<SeamlessM4TFeatureExtractorOptions>& schema();
};

class SeamlessM4TFeatureExtractor : public FeatureExtractor {
 public:
  using Options = SeamlessM4TFeatureExtractorOptions;
  explicit SeamlessM4TFeatureExtractor(SeamlessM4TFeatureExtractorOptions options = {});
  /// wave: [samples] -> input_features [frames / stride, num_mel_bins * stride] and
  /// attention_mask [frames / stride] (no batch dimension).
  BatchFeature compute(const torch::Tensor& wave) const { return compute_one(wave); }
  /// The log-mel fbank before normalisation and stacking: [frames, num_mel_bins].
  torch::Tensor fbank(const torch::Tensor& wave) const;

  std::string name() const override { return "seamless-m4t"; }
  int sampling_rate() const override { return options_.sampling_rate; }
  OptionList option_list() const override { return options_.schema().values(options_); }

 protected:
  /// input_features [B, T / stride, num_mel_bins * stride], attention_mask [B, T / stride].
  BatchFeature compute_features(const std::vector<torch::Tensor>& clips,
                                const PaddingOptions& padding) const override;

 public:
  const SeamlessM4TFeatureExtractorOptions& options() const { return options_; }

 private:
  SeamlessM4TFeatureExtractorOptions options_;
  KaldiFbank fbank_;
};

}  // namespace alto::features
