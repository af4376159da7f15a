#include "alto/features/kaldi_mfcc.h"

#include <torch/torch.h>

#include <cmath>

#include "alto/core/error.h"

namespace alto::features {

void KaldiMfccOptions::validate() const {
  KaldiFbankOptions::validate("KaldiMfccOptions");
  ALTO_CHECK(num_ceps >= 1 && num_ceps <= num_mel_bins, "KaldiMfccOptions.num_ceps (", num_ceps,
             ") must be in [1, num_mel_bins=", num_mel_bins, "]");
}

const OptionSchema<KaldiMfccOptions>& KaldiMfccOptions::schema() {
  using O = KaldiMfccOptions;
  static const auto schema =
      OptionSchema<O>("KaldiMfccOptions")
          .include(KaldiFbankOptions::schema(), {"use_log_fbank", "use_power"})
          .field("num_ceps", &O::num_ceps, "Cepstra")
          .field("cepstral_lifter", &O::cepstral_lifter, "Lifter (0: none)");
  return schema;
}

namespace {

KaldiMfccOptions validated(KaldiMfccOptions o) {
  o.validate();
  o.use_log_fbank = true;
  o.use_power = true;
  return o;
}

// The log-mel frame of KaldiFbank, then the DCT-II (orthonormal), lifter and energy placement.
class KaldiMfccFrames : public FrameProcessor {
 public:
  explicit KaldiMfccFrames(const KaldiMfccOptions& o)
      : o_(o), fbank_(static_cast<const KaldiFbankOptions&>(o)) {
    const int bins = o.num_mel_bins;
    dct_.resize(static_cast<size_t>(bins) * o.num_ceps);
    // torchaudio.functional.create_dct(bins, bins, "ortho")[:, :num_ceps], column 0 = sqrt(1/bins).
    for (int m = 0; m < bins; ++m) {
      for (int c = 0; c < o.num_ceps; ++c) {
        const double v = c == 0 ? std::sqrt(1.0 / bins)
                                : std::cos(M_PI / bins * (m + 0.5) * c) * std::sqrt(2.0 / bins);
        dct_[static_cast<size_t>(m) * o.num_ceps + c] = static_cast<float>(v);
      }
    }
    lifter_.assign(o.num_ceps, 1.0f);
    if (o.cepstral_lifter != 0.0)
      for (int c = 0; c < o.num_ceps; ++c)
        lifter_[c] = static_cast<float>(1.0 + 0.5 * o.cepstral_lifter *
                                                  std::sin(M_PI * c / o.cepstral_lifter));
  }

  const FrameLayout& layout() const override { return fbank_.frame_processor().layout(); }
  int n_fft() const override { return fbank_.frame_processor().n_fft(); }
  int feature_dim() const override { return o_.num_ceps; }

  void process(const float* frame, float* out, FrameWorkspace& ws) const override {
    const FrameProcessor& fbank = fbank_.frame_processor();
    ws.scratch.resize(fbank.feature_dim());
    float* fb = ws.scratch.data();
    fbank.process(frame, fb, ws);
    const int bins = o_.num_mel_bins;
    const float* mel = fb + (o_.use_energy && !o_.htk_compat ? 1 : 0);
    for (int c = 0; c < o_.num_ceps; ++c) {
      float sum = 0.0f;
      for (int m = 0; m < bins; ++m) sum += mel[m] * dct_[static_cast<size_t>(m) * o_.num_ceps + c];
      out[c] = sum * lifter_[c];
    }
    if (o_.use_energy) out[0] = fb[o_.htk_compat ? bins : 0];
    if (o_.htk_compat) {
      // HTK order: c1..c(n-1), then c0 (scaled by sqrt 2 when it is the DCT's, not the energy).
      const float c0 = o_.use_energy ? out[0] : out[0] * static_cast<float>(M_SQRT2);
      for (int c = 1; c < o_.num_ceps; ++c) out[c - 1] = out[c];
      out[o_.num_ceps - 1] = c0;
    }
  }

 private:
  KaldiMfccOptions o_;
  KaldiFbank fbank_;
  std::vector<float> dct_;  // [num_mel_bins, num_ceps]
  std::vector<float> lifter_;
};

}  // namespace

KaldiMfcc::KaldiMfcc(KaldiMfccOptions options)
    : options_(validated(options)), frames_(std::make_shared<KaldiMfccFrames>(options_)) {}

torch::Tensor KaldiMfcc::compute(const torch::Tensor& wave) const {
  return detail::kaldi_compute(*frames_, options_, wave, "KaldiMfcc");
}

BatchFeature KaldiMfcc::compute_features(const std::vector<torch::Tensor>& clips,
                                         const PaddingOptions& padding) const {
  for (const auto& clip : clips) checked_waveform(clip, "KaldiMfcc");
  std::vector<torch::Tensor> features(clips.size());
  detail::for_each_clip(clips.size(), [&](size_t i) { features[i] = compute(clips[i]); });
  return detail::batch_frame_features(std::move(features), padding);
}

namespace {
const Registration<FeatureExtractorEntry> kRegistration(
    "kaldi-mfcc",
    extractor_entry<KaldiMfcc>("kaldi-mfcc", "", "Kaldi MFCC (torchaudio.compliance.kaldi.mfcc)"));
}  // namespace

}  // namespace alto::features
