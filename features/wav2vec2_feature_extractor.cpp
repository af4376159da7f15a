#include "alto/features/wav2vec2_feature_extractor.h"

#include <torch/torch.h>

#include <cmath>

#include "alto/core/error.h"
#include "alto/features/frames.h"

namespace alto::features {

void Wav2Vec2FeatureExtractorOptions::validate() const {
  ALTO_CHECK(feature_size == 1,
             "Wav2Vec2FeatureExtractorOptions.feature_size must be 1 (mono), got ", feature_size);
  ALTO_CHECK(sampling_rate > 0, "Wav2Vec2FeatureExtractorOptions.sampling_rate must be > 0, got ",
             sampling_rate);
}

const OptionSchema<Wav2Vec2FeatureExtractorOptions>& Wav2Vec2FeatureExtractorOptions::schema() {
  using O = Wav2Vec2FeatureExtractorOptions;
  static const auto schema =
      OptionSchema<O>("Wav2Vec2FeatureExtractorOptions")
          .field("feature_size", &O::feature_size, "Feature size")
          .field("sampling_rate", &O::sampling_rate, "Sample rate in Hz", {"sample-rate"})
          .field("padding_value", &O::padding_value, "Value of the padding samples")
          .field("do_normalize", &O::do_normalize, "Zero-mean unit-variance audio")
          .field("return_attention_mask", &O::return_attention_mask, "Return the sample mask")
          .choice("padding_side", &O::padding_side, "Where padding goes", padding_side_names());
  return schema;
}

namespace {
Wav2Vec2FeatureExtractorOptions validated(Wav2Vec2FeatureExtractorOptions o) {
  o.validate();
  return o;
}
}  // namespace

Wav2Vec2FeatureExtractor::Wav2Vec2FeatureExtractor(Wav2Vec2FeatureExtractorOptions options)
    : options_(validated(options)) {}

BatchFeature Wav2Vec2FeatureExtractor::compute_features(const std::vector<torch::Tensor>& clips,
                                                        const PaddingOptions& padding) const {
  ALTO_CHECK(!clips.empty(), "Wav2Vec2FeatureExtractor: no clips given");
  std::vector<torch::Tensor> sequences;
  for (const auto& clip : clips)
    sequences.push_back(checked_waveform(clip, "Wav2Vec2FeatureExtractor").unsqueeze(1));
  // __call__ defaults: padding=False, truncation=False.
  const auto strategy = padding.padding == PaddingOptions::Strategy::kDefault
                            ? PaddingOptions::Strategy::kDoNotPad
                            : padding.padding;
  auto batch = detail::pad_sequences(sequences, strategy, padding.max_length,
                                     padding.truncation.value_or(false), padding.pad_to_multiple_of,
                                     options_.padding_side, options_.padding_value);
  torch::Tensor values = batch.values.squeeze(2).clone();  // [B, L]; unpadded it aliases the input
  const torch::Tensor mask = batch.mask();
  const bool with_mask = padding.return_attention_mask.value_or(options_.return_attention_mask);
  if (options_.do_normalize) {
    // transformers normalises over the real samples only when it has a mask and padded.
    const bool masked = with_mask && strategy != PaddingOptions::Strategy::kDoNotPad;
    for (int64_t b = 0; b < values.size(0); ++b) {
      const torch::Tensor row = values[b].to(torch::kFloat64);
      const torch::Tensor real = masked ? row.masked_select(mask[b] != 0) : row;
      const double mean = real.mean().item<double>();
      const double var = real.var(/*unbiased=*/false).item<double>();
      torch::Tensor normed = (row - mean) / std::sqrt(var + 1e-7);
      if (masked) normed.masked_fill_(mask[b] == 0, options_.padding_value);
      values[b].copy_(normed);
    }
  }
  BatchFeature out;
  out.name = "input_values";
  out.input_features = values;
  if (with_mask) out.attention_mask = mask;
  return out;
}

namespace {
const Registration<FeatureExtractorEntry> kRegistration(
    "wav2vec2",
    extractor_entry<Wav2Vec2FeatureExtractor>("wav2vec2", "Wav2Vec2FeatureExtractor",
                                              "Wav2Vec2 / HuBERT / WavLM input values"));
}  // namespace

}  // namespace alto::features
