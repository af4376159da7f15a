#include "alto/features/kaldi_fbank.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "alto/core/error.h"
#include "alto/features/mel.h"

namespace alto::features {

namespace {
constexpr float kEpsilon = std::numeric_limits<float>::epsilon();  // torch.finfo(float).eps

int next_power_of_two(int x) {
  int p = 1;
  while (p < x) p *= 2;
  return p;
}
}  // namespace

int KaldiFbankOptions::window_size() const {
  return static_cast<int>(sample_frequency * frame_length * 0.001);
}
int KaldiFbankOptions::window_shift() const {
  return static_cast<int>(sample_frequency * frame_shift * 0.001);
}
int KaldiFbankOptions::padded_window_size() const {
  return round_to_power_of_two ? next_power_of_two(window_size()) : window_size();
}

void KaldiFbankOptions::validate(const char* type) const {
  ALTO_CHECK(sample_frequency > 0, type, ".sample_frequency must be > 0, got ", sample_frequency);
  ALTO_CHECK(window_size() >= 2, type, ".frame_length (", frame_length, " ms) gives a window of ",
             window_size(), " samples; it must be >= 2");
  ALTO_CHECK(window_shift() > 0, type, ".frame_shift (", frame_shift, " ms) gives a shift of ",
             window_shift(), " samples; it must be > 0");
  ALTO_CHECK(padded_window_size() % 2 == 0, type, ".frame_length: the padded window (",
             padded_window_size(), " samples) must be even; use round_to_power_of_two");
  ALTO_CHECK(preemphasis_coefficient >= 0 && preemphasis_coefficient <= 1, type,
             ".preemphasis_coefficient must be in [0, 1], got ", preemphasis_coefficient);
  ALTO_CHECK(dither >= 0, type, ".dither must be >= 0, got ", dither);
  ALTO_CHECK(energy_floor >= 0, type, ".energy_floor must be >= 0, got ", energy_floor);
  ALTO_CHECK(num_mel_bins > 3, type, ".num_mel_bins must be > 3, got ", num_mel_bins);
  ALTO_CHECK(min_duration >= 0, type, ".min_duration must be >= 0, got ", min_duration);
  const double nyquist = 0.5 * sample_frequency;
  const double high = high_freq <= 0 ? high_freq + nyquist : high_freq;
  ALTO_CHECK(low_freq >= 0 && low_freq < nyquist, type, ".low_freq (", low_freq,
             ") must be in [0, ", nyquist, ") (Nyquist)");
  ALTO_CHECK(high > 0 && high <= nyquist, type, ".high_freq (", high_freq,
             ") must be in (0, Nyquist ", nyquist, "], or <= 0 as an offset from Nyquist");
  ALTO_CHECK(low_freq < high, type, ".low_freq (", low_freq, ") must be below high_freq (", high,
             ")");
}

const OptionSchema<KaldiFbankOptions>& KaldiFbankOptions::schema() {
  using O = KaldiFbankOptions;
  static const auto schema =
      OptionSchema<O>("KaldiFbankOptions")
          .field("sample_frequency", &O::sample_frequency, "Sample rate in Hz", {"sample-rate"})
          .field("frame_length", &O::frame_length, "Frame length in ms")
          .field("frame_shift", &O::frame_shift, "Frame shift in ms")
          .field("dither", &O::dither, "Dither std")
          .field("dither_seed", &O::dither_seed, "Seed of the dither noise")
          .field("preemphasis_coefficient", &O::preemphasis_coefficient, "Pre-emphasis")
          .field("remove_dc_offset", &O::remove_dc_offset, "Subtract each frame's mean")
          .choice("window_type", &O::window_type, "Window", window_type_names())
          .field("blackman_coeff", &O::blackman_coeff, "Blackman window coefficient")
          .field("round_to_power_of_two", &O::round_to_power_of_two, "Pad the FFT to 2^k")
          .field("snip_edges", &O::snip_edges, "Only frames that fit the signal")
          .field("energy_floor", &O::energy_floor, "Floor of the log energy")
          .field("raw_energy", &O::raw_energy, "Energy before pre-emphasis and window")
          .field("use_energy", &O::use_energy, "Add the log energy")
          .field("htk_compat", &O::htk_compat, "Energy last, as HTK")
          .field("low_freq", &O::low_freq, "Lowest mel frequency in Hz")
          .field("high_freq", &O::high_freq, "Highest mel frequency (<= 0: offset from Nyquist)")
          .field("num_mel_bins", &O::num_mel_bins, "Mel bins")
          .field("use_log_fbank", &O::use_log_fbank, "Log of the mel energies")
          .field("use_power", &O::use_power, "Power instead of magnitude")
          .field("subtract_mean", &O::subtract_mean, "Subtract the mean over frames")
          .field("min_duration", &O::min_duration, "Seconds below which no frames come");
  return schema;
}

namespace {

// One Kaldi frame: DC removal, raw log energy, pre-emphasis, window, power spectrum, mel.
class KaldiFbankFrames : public FrameProcessor {
 public:
  explicit KaldiFbankFrames(const KaldiFbankOptions& o)
      : o_(o),
        layout_(FrameLayout::kaldi(o.window_size(), o.window_shift(), o.snip_edges)),
        window_(make_window(o.window_type, o.window_size(), /*periodic=*/false, o.blackman_coeff)),
        fft_(o.padded_window_size()),
        mel_(kaldi_mel_banks(o.num_mel_bins, o.padded_window_size(), o.sample_frequency, o.low_freq,
                             o.high_freq)
                 .t()),
        log_energy_floor_(o.energy_floor > 0 ? std::log(static_cast<float>(o.energy_floor))
                                             : -std::numeric_limits<float>::infinity()) {}

  const FrameLayout& layout() const override { return layout_; }
  int n_fft() const override { return fft_.size(); }
  int feature_dim() const override { return o_.num_mel_bins + (o_.use_energy ? 1 : 0); }

  void process(const float* frame, float* out, FrameWorkspace& ws) const override {
    const int n = layout_.frame_length;
    float* x = ws.time.data();  // the frame is worked on in the FFT buffer
    std::copy_n(frame, n, x);
    if (o_.remove_dc_offset) {
      float sum = 0.0f;
      for (int k = 0; k < n; ++k) sum += x[k];
      const float mean = sum / static_cast<float>(n);
      for (int k = 0; k < n; ++k) x[k] -= mean;
    }
    float energy = 0.0f;
    if (o_.raw_energy) energy = log_energy(x, n);
    if (o_.preemphasis_coefficient != 0.0) {
      const float c = static_cast<float>(o_.preemphasis_coefficient);
      // x[0] is pre-emphasised against itself (torchaudio pads with mode="replicate").
      for (int k = n - 1; k > 0; --k) x[k] -= c * x[k - 1];
      x[0] -= c * x[0];
    }
    for (int k = 0; k < n; ++k) x[k] *= window_[k];
    for (int k = n; k < fft_.size(); ++k) x[k] = 0.0f;
    if (!o_.raw_energy) energy = log_energy(ws.time.data(), fft_.size());
    fft_.forward(ws.time.data(), ws.spectrum.data());
    const int bins = fft_.num_bins();
    for (int k = 0; k < bins; ++k) {
      const float p = power_of(ws.spectrum[k]);
      ws.power[k] = o_.use_power ? p : std::sqrt(p);
    }
    float* mel = out + (o_.use_energy && !o_.htk_compat ? 1 : 0);
    mel_.apply(ws.power.data(), mel);
    if (o_.use_log_fbank) {
      for (int m = 0; m < o_.num_mel_bins; ++m) mel[m] = std::max(mel[m], kEpsilon);
      log_in_place(mel, o_.num_mel_bins);
    }
    if (o_.use_energy) out[o_.htk_compat ? o_.num_mel_bins : 0] = energy;
  }

 private:
  float log_energy(const float* x, int n) const {
    float sum = 0.0f;
    for (int k = 0; k < n; ++k) sum += x[k] * x[k];
    return std::max(std::log(std::max(sum, kEpsilon)), log_energy_floor_);
  }

  KaldiFbankOptions o_;
  FrameLayout layout_;
  std::vector<float> window_;
  RealFft fft_;
  SparseMelBank mel_;
  float log_energy_floor_;
};

KaldiFbankOptions validated(KaldiFbankOptions o) {
  o.validate();
  return o;
}

}  // namespace

KaldiFbank::KaldiFbank(KaldiFbankOptions options)
    : options_(validated(options)), frames_(std::make_shared<KaldiFbankFrames>(options_)) {}

int KaldiFbank::sampling_rate() const { return static_cast<int>(options_.sample_frequency); }

torch::Tensor KaldiFbank::compute(const torch::Tensor& wave) const {
  return detail::kaldi_compute(*frames_, options_, wave, "KaldiFbank");
}

BatchFeature KaldiFbank::compute_features(const std::vector<torch::Tensor>& clips,
                                          const PaddingOptions& padding) const {
  std::vector<torch::Tensor> features(clips.size());
  for (const auto& clip : clips) checked_waveform(clip, "KaldiFbank");
  detail::for_each_clip(clips.size(), [&](size_t i) { features[i] = compute(clips[i]); });
  return detail::batch_frame_features(std::move(features), padding);
}

namespace detail {

torch::Tensor kaldi_compute(const FrameProcessor& frames, const KaldiFbankOptions& o,
                            const torch::Tensor& wave, const char* what) {
  const torch::Tensor x = checked_waveform(wave, what);
  const int64_t n = x.numel();
  if (n < o.min_duration * o.sample_frequency) return torch::empty({0, frames.feature_dim()});
  ALTO_CHECK(n >= o.window_size(), what, ": ", n, " samples are shorter than one ", o.frame_length,
             " ms window (", o.window_size(), " samples)");
  torch::Tensor noise;
  if (o.dither > 0) {
    // torchaudio draws randn(frames, window_size) from torch's global generator.
    auto generator = at::detail::createCPUGenerator(o.dither_seed);
    noise = torch::randn({frames.layout().num_frames(n), o.window_size()}, generator) * o.dither;
  }
  torch::Tensor features = process_frames(frames, x.data_ptr<float>(), n,
                                          noise.defined() ? noise.data_ptr<float>() : nullptr);
  if (o.subtract_mean && features.size(0) > 0) features -= features.mean(0, /*keepdim=*/true);
  return features;
}

BatchFeature batch_frame_features(std::vector<torch::Tensor> features,
                                  const PaddingOptions& padding) {
  const auto strategy = padding.padding == PaddingOptions::Strategy::kDefault
                            ? PaddingOptions::Strategy::kLongest
                            : padding.padding;
  auto batch =
      pad_sequences(features, strategy, padding.max_length, padding.truncation.value_or(false),
                    padding.pad_to_multiple_of, PaddingSide::kRight, 0.0);
  BatchFeature out;
  out.input_features = batch.values;
  if (padding.return_attention_mask.value_or(features.size() > 1))
    out.attention_mask = batch.mask();
  return out;
}

}  // namespace detail

namespace {
const Registration<FeatureExtractorEntry> kRegistration(
    "kaldi-fbank",
    extractor_entry<KaldiFbank>("kaldi-fbank", "",
                                "Kaldi filterbank (torchaudio.compliance.kaldi.fbank)"));
}  // namespace

}  // namespace alto::features
