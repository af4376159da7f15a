#pragma once
// Wav2Vec2 (and HuBERT, WavLM, data2vec-audio) inputs, as transformers' Wav2Vec2FeatureExtractor.

#include <torch/types.h>

#include <string>

#include "alto/features/feature_extractor.h"

namespace alto::features {

struct Wav2Vec2FeatureExtractorOptions {
  int feature_size = 1;
  int sampling_rate = 16000;
  double padding_value = 0.0;
  bool do_normalize = true;
  bool return_attention_mask = false;
  PaddingSide padding_side = PaddingSide::kRight;

  void validate() const;
  static const OptionSchema<Wav2Vec2FeatureExtractorOptions>& schema();
};

class Wav2Vec2FeatureExtractor : public FeatureExtractor {
 public:
  using Options = Wav2Vec2FeatureExtractorOptions;
  explicit Wav2Vec2FeatureExtractor(Wav2Vec2FeatureExtractorOptions options = {});
  /// wave: [samples] -> input_values [samples] (zero mean, unit variance when do_normalize).
  torch::Tensor compute(const torch::Tensor& wave) const {
    return compute_one(wave).input_features;
  }

  std::string name() const override { return "wav2vec2"; }
  int sampling_rate() const override { return options_.sampling_rate; }
  OptionList option_list() const override { return options_.schema().values(options_); }

 protected:
  /// input_values [B, samples]; attention_mask [B, samples] when requested. Without a mask,
  /// normalisation covers the padding too, as transformers does.
  BatchFeature compute_features(const std::vector<torch::Tensor>& clips,
                                const PaddingOptions& padding) const override;

 public:
  const Wav2Vec2FeatureExtractorOptions& options() const { return options_; }

 private:
  Wav2Vec2FeatureExtractorOptions options_;
};

}  // namespace alto::features
