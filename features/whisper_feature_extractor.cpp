#include "alto/features/whisper_feature_extractor.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>

#include "alto/core/error.h"
#include "alto/features/window.h"

namespace alto::features {

void WhisperFeatureExtractorOptions::validate() const {
  ALTO_CHECK(feature_size >= 1, "WhisperFeatureExtractorOptions.feature_size must be >= 1, got ",
             feature_size);
  ALTO_CHECK(sampling_rate > 0, "WhisperFeatureExtractorOptions.sampling_rate must be > 0, got ",
             sampling_rate);
  ALTO_CHECK(hop_length > 0, "WhisperFeatureExtractorOptions.hop_length must be > 0, got ",
             hop_length);
  ALTO_CHECK(n_fft >= 2, "WhisperFeatureExtractorOptions.n_fft must be >= 2, got ", n_fft);
  ALTO_CHECK(chunk_length > 0, "WhisperFeatureExtractorOptions.chunk_length must be > 0, got ",
             chunk_length);
  ALTO_CHECK(dither >= 0, "WhisperFeatureExtractorOptions.dither must be >= 0, got ", dither);
  // Whisper's filters always span 0-8000 Hz.
  ALTO_CHECK(sampling_rate >= 16000, "WhisperFeatureExtractorOptions.sampling_rate (",
             sampling_rate, ") must be >= 16000: Whisper's mel filters reach 8000 Hz");
}

const OptionSchema<WhisperFeatureExtractorOptions>& WhisperFeatureExtractorOptions::schema() {
  using O = WhisperFeatureExtractorOptions;
  static const auto schema =
      OptionSchema<O>("WhisperFeatureExtractorOptions")
          .field("feature_size", &O::feature_size, "Mel bins (80, or 128 for large-v3)", {"n-mels"})
          .field("sampling_rate", &O::sampling_rate, "Sample rate in Hz", {"sample-rate"})
          .field("hop_length", &O::hop_length, "Hop in samples")
          .field("chunk_length", &O::chunk_length, "Seconds clips are padded or cut to")
          .field("n_fft", &O::n_fft, "FFT size")
          .field("padding_value", &O::padding_value, "Value of the padding samples")
          .field("dither", &O::dither, "Gaussian noise std added to each frame")
          .field("dither_seed", &O::dither_seed, "Seed of the dither noise")
          .field("return_attention_mask", &O::return_attention_mask, "Return the frame mask")
          .field("do_normalize", &O::do_normalize, "Zero-mean unit-variance audio first")
          .choice("padding_side", &O::padding_side, "Where padding goes", padding_side_names())
          .field("clamp_dynamic_range", &O::clamp_dynamic_range, "Whisper's max - 8 clamp");
  return schema;
}

namespace {

class WhisperFrames : public FrameProcessor {
 public:
  WhisperFrames(const WhisperFeatureExtractorOptions& o, const torch::Tensor& filters)
      : layout_(FrameLayout::centered(o.n_fft, o.hop_length, FrameEdge::kReflect,
                                      /*drop_last=*/true)),
        window_(make_window(WindowType::kHann, o.n_fft, /*periodic=*/true)),
        fft_(o.n_fft),
        mel_(filters) {}

  const FrameLayout& layout() const override { return layout_; }
  int n_fft() const override { return fft_.size(); }
  int feature_dim() const override { return mel_.num_mels(); }

  void process(const float* frame, float* out, FrameWorkspace& ws) const override {
    const int n = fft_.size();
    for (int k = 0; k < n; ++k) ws.time[k] = frame[k] * window_[k];
    fft_.forward(ws.time.data(), ws.spectrum.data());
    const int bins = fft_.num_bins();
    for (int k = 0; k < bins; ++k) ws.power[k] = power_of(ws.spectrum[k]);
    mel_.apply(ws.power.data(), out);
    const int n_mels = mel_.num_mels();
    for (int m = 0; m < n_mels; ++m) out[m] = std::max(out[m], 1e-10f);
    log_in_place(out, n_mels);
    // (log10(mel) + 4) / 4
    constexpr float kLog10E = 0.434294482f;
    for (int m = 0; m < n_mels; ++m) out[m] = (out[m] * kLog10E + 4.0f) * 0.25f;
  }

 private:
  FrameLayout layout_;
  std::vector<float> window_;
  RealFft fft_;
  SparseMelBank mel_;
};

WhisperFeatureExtractorOptions validated(WhisperFeatureExtractorOptions o) {
  o.validate();
  return o;
}

}  // namespace

WhisperFeatureExtractor::WhisperFeatureExtractor(WhisperFeatureExtractorOptions options)
    : options_(validated(options)) {
  MelFilterBankOptions mel;
  mel.num_frequency_bins = options_.n_fft / 2 + 1;
  mel.num_mel_filters = options_.feature_size;
  mel.min_frequency = 0.0;
  mel.max_frequency = 8000.0;
  mel.sampling_rate = options_.sampling_rate;
  mel.norm = MelNorm::kSlaney;
  mel.mel_scale = MelScale::kSlaney;
  mel_filters_ = mel_filter_bank(mel);
  frames_ = std::make_shared<WhisperFrames>(options_, mel_filters_);
}

torch::Tensor WhisperFeatureExtractor::compute(const torch::Tensor& wave,
                                               const PaddingOptions& padding) const {
  return compute_one(wave, padding).input_features;
}

BatchFeature WhisperFeatureExtractor::compute_features(const std::vector<torch::Tensor>& clips,
                                                       const PaddingOptions& padding) const {
  ALTO_CHECK(!clips.empty(), "WhisperFeatureExtractor: no clips given");
  std::vector<torch::Tensor> sequences;
  for (const auto& clip : clips)
    sequences.push_back(checked_waveform(clip, "WhisperFeatureExtractor").unsqueeze(1));
  // WhisperFeatureExtractor.__call__ defaults: padding="max_length", max_length=n_samples,
  // truncation=True.
  const auto strategy = padding.padding == PaddingOptions::Strategy::kDefault
                            ? PaddingOptions::Strategy::kMaxLength
                            : padding.padding;
  const int64_t max_length = padding.max_length.value_or(options_.n_samples());
  auto batch = detail::pad_sequences(sequences, strategy, max_length,
                                     padding.truncation.value_or(true), padding.pad_to_multiple_of,
                                     options_.padding_side, options_.padding_value);
  torch::Tensor audio = batch.values.squeeze(2);  // [B, L]
  const int64_t batch_size = audio.size(0);
  const int64_t length = audio.size(1);
  if (options_.do_normalize) {
    const torch::Tensor sample_mask = batch.mask();
    audio = audio.clone();  // unpadded, `audio` is the caller's samples
    // zero_mean_unit_var_norm over each clip's real samples; padding gets padding_value.
    for (int64_t b = 0; b < batch_size; ++b) {
      const int64_t n = batch.lengths[b];
      torch::Tensor real = options_.padding_side == PaddingSide::kRight
                               ? audio[b].slice(0, 0, n)
                               : audio[b].slice(0, length - n, length);
      const torch::Tensor r64 = real.to(torch::kFloat64);
      const double mean = r64.mean().item<double>();
      const double var = r64.var(/*unbiased=*/false).item<double>();
      torch::Tensor normed = ((audio[b].to(torch::kFloat64) - mean) / std::sqrt(var + 1e-7));
      normed.masked_fill_(sample_mask[b] == 0, options_.padding_value);
      audio[b].copy_(normed);
    }
  }
  const int64_t frames = frames_->layout().num_frames(length);
  torch::Tensor features =
      batch_size == 1 ? torch::Tensor()
                      : torch::empty({batch_size, options_.feature_size, frames}, torch::kFloat32);
  detail::for_each_clip(batch_size, [&](size_t b) {
    const torch::Tensor x = audio[b].contiguous();  // a view when unpadded
    torch::Tensor noise;
    if (options_.dither > 0) {
      auto generator = at::detail::createCPUGenerator(options_.dither_seed + b);
      noise = torch::randn({frames, options_.n_fft}, generator) * options_.dither;
    }
    torch::Tensor y = process_frames(*frames_, x.data_ptr<float>(), length,
                                     noise.defined() ? noise.data_ptr<float>() : nullptr,
                                     /*feature_major=*/true);
    if (options_.clamp_dynamic_range && y.numel() > 0) {
      // max(x, max(x) - 8) on log10, i.e. max(y, max(y) - 2) after (x + 4) / 4.
      y.clamp_min_(y.max().item<float>() - 2.0f);
    }
    if (batch_size == 1) {
      features = y.unsqueeze(0);
    } else {
      features[b].copy_(y);
    }
  });
  BatchFeature out;
  out.input_features = features;
  if (padding.return_attention_mask.value_or(options_.return_attention_mask)) {
    // Sample mask rescaled to frames: every hop_length-th sample, less the dropped last frame.
    torch::Tensor mask = batch.mask(options_.hop_length);
    if (length % options_.hop_length != 0) mask = mask.slice(1, 0, mask.size(1) - 1);
    out.attention_mask = mask.contiguous();
  }
  return out;
}

namespace {
const Registration<FeatureExtractorEntry> kRegistration(
    "whisper", extractor_entry<WhisperFeatureExtractor>("whisper", "WhisperFeatureExtractor",
                                                        "Whisper's log-mel spectrogram"));
}  // namespace

}  // namespace alto::features
