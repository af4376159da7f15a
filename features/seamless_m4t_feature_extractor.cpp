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

OptionList SeamlessM4TFeatureExtractorOptions::option_list() const {
  auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  return {{"feature_size", std::to_string(feature_size)},
          {"sampling_rate", std::to_string(sampling_rate)},
          {"num_mel_bins", std::to_string(num_mel_bins)},
          {"padding_value", detail::format_number(padding_value)},
          {"stride", std::to_string(stride)},
          {"return_attention_mask", flag(return_attention_mask)},
          {"do_normalize_per_mel_bins", flag(do_normalize_per_mel_bins)},
          {"padding_side", padding_side == PaddingSide::kRight ? "right" : "left"}};
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

BatchFeature SeamlessM4TFeatureExtractor::compute_batch(const std::vector<torch::Tensor>& clips,
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

}  // namespace alto::features
