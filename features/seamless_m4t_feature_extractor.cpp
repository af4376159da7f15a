#include "alto/features/seamless_m4t_feature_extractor.h"

#include <torch/torch.h>

#include "alto/core/error.h"

namespace alto::features {

void SeamlessM4TFeatureExtractorOptions::validate() const {
  ALTO_CHECK(sampling_rate > 0,
             "SeamlessM4TFeatureExtractorOptions.sampling_rate must be > 0, got ", sampling_rate);
  ALTO_CHECK(num_mel_bins > 3, "SeamlessM4TFeatureExtractorOptions.num_mel_bins must be > 3, got ",
             num_mel_bins);
  ALTO_CHECK(stride >= 1, "SeamlessM4TFeatureExtractorOptions.stride must be >= 1, got ", stride);
}

const OptionSchema<SeamlessM4TFeatureExtractorOptions>&
SeamlessM4TFeatureExtractorOptions::schema() {
  using O = SeamlessM4TFeatureExtractorOptions;
  static const auto schema =
      OptionSchema<O>("SeamlessM4TFeatureExtractorOptions")
          .field("feature_size", &O::feature_size, "Feature size")
          .field("sampling_rate", &O::sampling_rate, "Sample rate in Hz", {"sample-rate"})
          .field("num_mel_bins", &O::num_mel_bins, "Mel bins")
          .field("padding_value", &O::padding_value, "Value of the padding frames")
          .field("stride", &O::stride, "Frames stacked into one")
          .field("return_attention_mask", &O::return_attention_mask, "Return the frame mask")
          .field("do_normalize_per_mel_bins", &O::do_normalize_per_mel_bins,
                 "Zero-mean unit-variance per mel bin")
          .choice("padding_side", &O::padding_side, "Where padding goes", padding_side_names());
  return schema;
}

namespace {

SeamlessM4TFeatureExtractorOptions validated(SeamlessM4TFeatureExtractorOptions o) {
  o.validate();
  return o;
}

// The extractor's spectrogram() call is Kaldi's fbank: 25 ms povey frames, 512-point FFT,
// pre-emphasis 0.97, DC removal, Kaldi mel banks from 20 Hz to Nyquist, log with the float floor.
KaldiFbankOptions fbank_options(const SeamlessM4TFeatureExtractorOptions& o) {
  KaldiFbankOptions f;
  f.sample_frequency = o.sampling_rate;
  f.num_mel_bins = o.num_mel_bins;
  return f;
}

}  // namespace

SeamlessM4TFeatureExtractor::SeamlessM4TFeatureExtractor(SeamlessM4TFeatureExtractorOptions options)
    : options_(validated(options)), fbank_(fbank_options(options_)) {}

torch::Tensor SeamlessM4TFeatureExtractor::fbank(const torch::Tensor& wave) const {
  const torch::Tensor x = checked_waveform(wave, "SeamlessM4TFeatureExtractor");
  // Kaldi compliance: the extractor scales [-1, 1] audio to the int16 range first.
  return fbank_.compute(x * 32768.0f);
}

BatchFeature SeamlessM4TFeatureExtractor::compute_features(const std::vector<torch::Tensor>& clips,
                                                           const PaddingOptions& padding) const {
  ALTO_CHECK(!clips.empty(), "SeamlessM4TFeatureExtractor: no clips given");
  for (const auto& clip : clips) checked_waveform(clip, "SeamlessM4TFeatureExtractor");
  std::vector<torch::Tensor> features(clips.size());
  detail::for_each_clip(clips.size(), [&](size_t i) {
    torch::Tensor f = fbank(clips[i]);
    if (options_.do_normalize_per_mel_bins) {
      const torch::Tensor f64 = f.to(torch::kFloat64);
      const torch::Tensor mean = f64.mean(0, /*keepdim=*/true);
      const torch::Tensor var = f64.var(0, /*unbiased=*/true, /*keepdim=*/true);
      f = ((f64 - mean) / torch::sqrt(var + 1e-7)).to(torch::kFloat32);
    }
    features[i] = f;
  });
  // __call__ defaults: padding=True (longest), pad_to_multiple_of=2, truncation=False.
  const auto strategy = padding.padding == PaddingOptions::Strategy::kDefault
                            ? PaddingOptions::Strategy::kLongest
                            : padding.padding;
  auto batch = detail::pad_sequences(
      features, strategy, padding.max_length, padding.truncation.value_or(false),
      padding.pad_to_multiple_of.value_or(2), options_.padding_side, options_.padding_value);
  torch::Tensor values = batch.values;  // [B, T, bins]
  torch::Tensor mask = batch.mask();    // [B, T]
  const int64_t stride = options_.stride;
  const int64_t frames =
      values.size(1) - values.size(1) % stride;  // a trailing odd frame is dropped
  values = values.slice(1, 0, frames);
  mask = mask.slice(1, 0, frames);
  BatchFeature out;
  out.input_features =
      values.reshape({values.size(0), frames / stride, values.size(2) * stride}).contiguous();
  if (padding.return_attention_mask.value_or(options_.return_attention_mask)) {
    // Each stacked row keeps the mask of its last frame (indices % stride == 1 for stride 2).
    out.attention_mask = mask.slice(1, stride - 1, frames, stride).contiguous();
  }
  return out;
}

namespace {
const Registration<FeatureExtractorEntry> kRegistration(
    "seamless-m4t",
    extractor_entry<SeamlessM4TFeatureExtractor>("seamless-m4t", "SeamlessM4TFeatureExtractor",
                                                 "SeamlessM4T / w2v-BERT 2.0 input features"));
}  // namespace

}  // namespace alto::features
