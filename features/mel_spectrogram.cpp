#include "alto/features/mel_spectrogram.h"

#include <torch/torch.h>

#include <cmath>

#include "alto/core/error.h"
#include "alto/features/kaldi_fbank.h"
#include "alto/features/window.h"

namespace alto::features {

void MelSpectrogramOptions::validate() const {
  ALTO_CHECK(sample_rate > 0, "MelSpectrogramOptions.sample_rate must be > 0, got ", sample_rate);
  ALTO_CHECK(n_fft >= 2, "MelSpectrogramOptions.n_fft must be >= 2, got ", n_fft);
  ALTO_CHECK(win_length >= 0 && resolved_win_length() <= n_fft,
             "MelSpectrogramOptions.win_length (", win_length, ") must be <= n_fft (", n_fft, ")");
  ALTO_CHECK(hop_length >= 0 && resolved_hop_length() > 0,
             "MelSpectrogramOptions.hop_length must be > 0, got ", hop_length);
  ALTO_CHECK(n_mels >= 1, "MelSpectrogramOptions.n_mels must be >= 1, got ", n_mels);
  ALTO_CHECK(power > 0, "MelSpectrogramOptions.power must be > 0, got ", power);
  ALTO_CHECK(f_min >= 0, "MelSpectrogramOptions.f_min must be >= 0, got ", f_min);
  ALTO_CHECK(resolved_f_max() <= sample_rate / 2.0, "MelSpectrogramOptions.f_max (",
             resolved_f_max(), ") must be <= sample_rate / 2 (", sample_rate / 2.0, ")");
  ALTO_CHECK(f_min < resolved_f_max(), "MelSpectrogramOptions.f_min (", f_min,
             ") must be below f_max (", resolved_f_max(), ")");
}

const OptionSchema<MelSpectrogramOptions>& MelSpectrogramOptions::schema() {
  using O = MelSpectrogramOptions;
  static const auto schema =
      OptionSchema<O>("MelSpectrogramOptions")
          .field("sample_rate", &O::sample_rate, "Sample rate in Hz")
          .field("n_fft", &O::n_fft, "FFT size")
          .field("win_length", &O::win_length, "Window length (0: n_fft)")
          .field("hop_length", &O::hop_length, "Hop (0: win_length / 2)")
          .field("f_min", &O::f_min, "Lowest mel frequency in Hz")
          .field("f_max", &O::f_max, "Highest mel frequency in Hz (None: sample_rate / 2)")
          .field("n_mels", &O::n_mels, "Mel bins")
          .field("power", &O::power, "Exponent of the magnitude")
          .field("normalized", &O::normalized, "Divide by the window's L2 norm")
          .field("center", &O::center, "Pad so that frames are centred")
          .choice("pad_mode", &O::pad_mode, "Padding of centred frames", pad_mode_names())
          .choice("norm", &O::norm, "Filter normalisation", mel_norm_names())
          .choice("mel_scale", &O::mel_scale, "Mel scale", mel_scale_names());
  return schema;
}

namespace {

class MelSpectrogramFrames : public FrameProcessor {
 public:
  MelSpectrogramFrames(const MelSpectrogramOptions& o, const torch::Tensor& filters)
      : power_(static_cast<float>(o.power)),
        window_(
            center_window(make_window(WindowType::kHann, o.resolved_win_length(), true), o.n_fft)),
        fft_(o.n_fft),
        mel_(filters) {
    if (o.center) {
      layout_ = FrameLayout::centered(
          o.n_fft, o.resolved_hop_length(),
          o.pad_mode == PadMode::kReflect ? FrameEdge::kReflect : FrameEdge::kConstant);
    } else {
      layout_ = FrameLayout{o.n_fft, o.resolved_hop_length(), 0, FrameEdge::kSnip, false};
    }
    if (o.normalized) {
      double sum = 0.0;
      for (float w : window_) sum += static_cast<double>(w) * w;
      scale_ = static_cast<float>(1.0 / std::sqrt(sum));
    }
  }

  const FrameLayout& layout() const override { return layout_; }
  int n_fft() const override { return fft_.size(); }
  int feature_dim() const override { return mel_.num_mels(); }

  void process(const float* frame, float* out, FrameWorkspace& ws) const override {
    for (int k = 0; k < fft_.size(); ++k) ws.time[k] = frame[k] * window_[k];
    fft_.forward(ws.time.data(), ws.spectrum.data());
    for (int k = 0; k < fft_.num_bins(); ++k) {
      const std::complex<float> c = ws.spectrum[k] * scale_;
      ws.power[k] = power_ == 2.0f   ? power_of(c)
                    : power_ == 1.0f ? std::abs(c)
                                     : std::pow(std::abs(c), power_);
    }
    mel_.apply(ws.power.data(), out);
  }

 private:
  float power_;
  float scale_ = 1.0f;
  std::vector<float> window_;
  FrameLayout layout_;
  RealFft fft_;
  SparseMelBank mel_;
};

MelSpectrogramOptions validated(MelSpectrogramOptions o) {
  o.validate();
  return o;
}

}  // namespace

MelSpectrogram::MelSpectrogram(MelSpectrogramOptions options) : options_(validated(options)) {
  MelFilterBankOptions mel;
  mel.num_frequency_bins = options_.n_fft / 2 + 1;
  mel.num_mel_filters = options_.n_mels;
  mel.min_frequency = options_.f_min;
  mel.max_frequency = options_.resolved_f_max();
  mel.sampling_rate = options_.sample_rate;
  mel.norm = options_.norm;
  mel.mel_scale = options_.mel_scale;
  mel_filters_ = mel_filter_bank(mel);
  frames_ = std::make_shared<MelSpectrogramFrames>(options_, mel_filters_);
}

torch::Tensor MelSpectrogram::compute(const torch::Tensor& wave) const {
  const torch::Tensor x = checked_waveform(wave, "MelSpectrogram");
  ALTO_CHECK(options_.center || x.numel() >= options_.n_fft, "MelSpectrogram: ", x.numel(),
             " samples are fewer than n_fft=", options_.n_fft, " (with center=false)");
  return process_frames(*frames_, x.data_ptr<float>(), x.numel(), nullptr, /*feature_major=*/true);
}

BatchFeature MelSpectrogram::compute_features(const std::vector<torch::Tensor>& clips,
                                              const PaddingOptions& padding) const {
  for (const auto& clip : clips) checked_waveform(clip, "MelSpectrogram");
  std::vector<torch::Tensor> frames(clips.size());  // [frames, n_mels] each, for padding
  detail::for_each_clip(clips.size(), [&](size_t i) { frames[i] = compute(clips[i]).t(); });
  BatchFeature out = detail::batch_frame_features(std::move(frames), padding);
  out.input_features = out.input_features.transpose(1, 2).contiguous();
  return out;
}

namespace {
const Registration<FeatureExtractorEntry> kRegistration(
    "mel",
    extractor_entry<MelSpectrogram>("mel", "",
                                    "Mel spectrogram (torchaudio.transforms.MelSpectrogram)"));
}  // namespace

}  // namespace alto::features
