#pragma once
// Kaldi MFCCs, equal to torchaudio.compliance.kaldi.mfcc.

#include <torch/types.h>

#include <memory>
#include <string>

#include "alto/features/kaldi_fbank.h"

namespace alto::features {

/// torchaudio.compliance.kaldi.mfcc's arguments: the fbank ones (use_log_fbank and use_power are
/// fixed to true) plus the cepstrum's.
struct KaldiMfccOptions : KaldiFbankOptions {
  int num_ceps = 13;
  double cepstral_lifter = 22.0;  // 0 disables liftering

  void validate() const;
  static const OptionSchema<KaldiMfccOptions>& schema();
};

class KaldiMfcc : public FeatureExtractor {
 public:
  using Options = KaldiMfccOptions;
  explicit KaldiMfcc(KaldiMfccOptions options = {});
  /// wave: [samples] -> [frames, num_ceps] float32.
  torch::Tensor compute(const torch::Tensor& wave) const;

  std::string name() const override { return "kaldi-mfcc"; }
  int sampling_rate() const override { return static_cast<int>(options_.sample_frequency); }
  OptionList option_list() const override { return options_.schema().values(options_); }

 protected:
  BatchFeature compute_features(const std::vector<torch::Tensor>& clips,
                                const PaddingOptions& padding) const override;

 public:
  const KaldiMfccOptions& options() const { return options_; }
  const FrameProcessor& frame_processor() const { return *frames_; }

 private:
  KaldiMfccOptions options_;
  std::shared_ptr<const FrameProcessor> frames_;
};

}  // namespace alto::features
