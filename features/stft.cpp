#include "alto/features/stft.h"

#include <torch/torch.h>

#include <cmath>
#include <sstream>

#include "alto/core/error.h"
#include "alto/core/threading.h"

namespace alto::features {

const ChoiceNames<PadMode>& pad_mode_names() {
  static const ChoiceNames<PadMode> names = {{"reflect", PadMode::kReflect},
                                             {"constant", PadMode::kConstant}};
  return names;
}

PadMode parse_pad_mode(const std::string& name) {
  return parse_choice(pad_mode_names(), name, "pad_mode");
}

std::string to_string(PadMode mode) { return choice_name(pad_mode_names(), mode); }

void StftOptions::validate() const {
  ALTO_CHECK(n_fft >= 1, "StftOptions.n_fft must be >= 1, got ", n_fft);
  ALTO_CHECK(hop_length >= 0, "StftOptions.hop_length must be > 0, got ", hop_length);
  ALTO_CHECK(win_length >= 0 && win_length <= n_fft, "StftOptions.win_length (", win_length,
             ") must be <= n_fft (", n_fft, ")");
  ALTO_CHECK(!power || *power > 0, "StftOptions.power must be > 0 (or unset for complex), got ",
             *power);
}

const OptionSchema<StftOptions>& StftOptions::schema() {
  using O = StftOptions;
  static const auto schema =
      OptionSchema<O>("StftOptions")
          .field("n_fft", &O::n_fft, "FFT size")
          .field("hop_length", &O::hop_length, "Hop (0: n_fft / 4)")
          .field("win_length", &O::win_length, "Window length (0: n_fft)")
          .choice("window", &O::window, "Window", window_type_names())
          .field("periodic", &O::periodic, "Periodic window")
          .field("center", &O::center, "Pad so that frames are centred")
          .choice("pad_mode", &O::pad_mode, "Padding of centred frames", pad_mode_names())
          .field("normalized", &O::normalized, "Multiply by n_fft^-1/2")
          .field("onesided", &O::onesided, "Only the non-negative frequencies")
          .field("power", &O::power, "None: complex; 1: magnitude; 2: power");
  return schema;
}

std::string StftOptions::to_string() const { return schema().to_string(*this); }

namespace {

StftOptions resolved(StftOptions o) {
  o.validate();
  if (o.hop_length == 0) o.hop_length = std::max(o.n_fft / 4, 1);
  if (o.win_length == 0) o.win_length = o.n_fft;
  return o;
}

// Windowed FFT of one frame; writes complex (interleaved) or |X|^power.
class StftFrames : public FrameProcessor {
 public:
  StftFrames(const StftOptions& o, const std::vector<float>& window, const FrameLayout& layout)
      : o_(o), window_(window), layout_(layout), fft_(o.n_fft) {}
  const FrameLayout& layout() const override { return layout_; }
  int n_fft() const override { return o_.n_fft; }
  int num_freq() const { return o_.onesided ? o_.n_fft / 2 + 1 : o_.n_fft; }
  int feature_dim() const override { return o_.power ? num_freq() : 2 * num_freq(); }

  void process(const float* frame, float* out, FrameWorkspace& ws) const override {
    for (int k = 0; k < o_.n_fft; ++k) ws.time[k] = frame[k] * window_[k];
    fft_.forward(ws.time.data(), ws.spectrum.data());
    const float scale = o_.normalized ? 1.0f / std::sqrt(static_cast<float>(o_.n_fft)) : 1.0f;
    const int bins = fft_.num_bins();
    for (int k = 0; k < num_freq(); ++k) {
      // Beyond the onesided half the spectrum is the conjugate mirror of a real signal's.
      const bool mirrored = k >= bins;
      std::complex<float> c = mirrored ? std::conj(ws.spectrum[o_.n_fft - k]) : ws.spectrum[k];
      c *= scale;
      if (!o_.power) {
        out[2 * k] = c.real();
        out[2 * k + 1] = c.imag();
      } else if (*o_.power == 2.0) {
        out[k] = c.real() * c.real() + c.imag() * c.imag();
      } else if (*o_.power == 1.0) {
        out[k] = std::abs(c);
      } else {
        out[k] = std::pow(std::abs(c), static_cast<float>(*o_.power));
      }
    }
  }

 private:
  StftOptions o_;
  const std::vector<float>& window_;
  FrameLayout layout_;
  RealFft fft_;
};

}  // namespace

Stft::Stft(StftOptions options) : options_(resolved(options)) {
  window_ = center_window(make_window(options_.window, options_.win_length, options_.periodic),
                          options_.n_fft);
  if (options_.center) {
    layout_ = FrameLayout::centered(
        options_.n_fft, options_.hop_length,
        options_.pad_mode == PadMode::kReflect ? FrameEdge::kReflect : FrameEdge::kConstant);
  } else {
    layout_ = FrameLayout{options_.n_fft, options_.hop_length, 0, FrameEdge::kSnip, false};
  }
}

torch::Tensor Stft::compute(const torch::Tensor& wave) const {
  ALTO_CHECK(wave.dim() == 1 || (wave.dim() == 2 && wave.size(0) >= 1),
             "Stft: expected wave [samples] or [batch >= 1, samples], got shape ", wave.sizes());
  if (wave.dim() == 2) {
    std::vector<torch::Tensor> items;
    for (int64_t b = 0; b < wave.size(0); ++b) items.push_back(compute(wave[b]));
    return torch::stack(items);
  }
  const torch::Tensor x = checked_waveform(wave, "Stft");
  ALTO_CHECK(options_.center || x.numel() >= options_.n_fft, "Stft: ", x.numel(),
             " samples are fewer than n_fft=", options_.n_fft, " (with center=false)");
  const StftFrames frames(options_, window_, layout_);
  torch::Tensor out = process_frames(frames, x.data_ptr<float>(), x.numel());  // [frames, dim]
  if (!options_.power) {
    out = torch::view_as_complex(out.view({out.size(0), frames.num_freq(), 2}));
  }
  return out.t().contiguous();
}

InverseStft::InverseStft(StftOptions options) : options_(resolved(options)) {
  ALTO_CHECK(!options_.power, "InverseStft: StftOptions.power must be unset (complex input)");
  ALTO_CHECK(options_.onesided, "InverseStft: only onesided spectra are supported");
  window_ = center_window(make_window(options_.window, options_.win_length, options_.periodic),
                          options_.n_fft);
}

torch::Tensor InverseStft::compute(const torch::Tensor& spectrum,
                                   std::optional<int64_t> length) const {
  ALTO_CHECK(spectrum.defined(), "InverseStft: expected a spectrum, got an undefined tensor");
  ALTO_CHECK(
      spectrum.dim() == 2 || (spectrum.dim() == 3 && spectrum.size(0) >= 1),
      "InverseStft: expected spectrum [n_freq, frames] or [batch >= 1, n_freq, frames], got ",
      spectrum.sizes());
  if (spectrum.dim() == 3) {
    std::vector<torch::Tensor> items;
    for (int64_t b = 0; b < spectrum.size(0); ++b) items.push_back(compute(spectrum[b], length));
    return torch::stack(items);
  }
  const int n_fft = options_.n_fft;
  const int hop = options_.hop_length;
  const int bins = n_fft / 2 + 1;
  ALTO_CHECK(spectrum.is_complex(), "InverseStft: expected a complex spectrum, got ",
             spectrum.dtype());
  ALTO_CHECK(spectrum.size(0) == bins, "InverseStft: expected ", bins,
             " frequency bins for n_fft=", n_fft, ", got shape ", spectrum.sizes());
  const torch::Tensor spec = spectrum.to(torch::kCPU, torch::kComplexFloat).t().contiguous();
  ALTO_CHECK(torch::isfinite(torch::view_as_real(spec)).all().item<bool>(),
             "InverseStft: the spectrum contains NaN or Inf");
  const int64_t frames = spec.size(0);
  const int64_t full = n_fft + hop * (frames - 1);
  const auto* in = reinterpret_cast<const std::complex<float>*>(spec.data_ptr());

  // Each frame's inverse is independent; only the overlap-add is serial.
  torch::Tensor framed = torch::empty({frames, n_fft}, torch::kFloat32);
  float* framed_data = framed.data_ptr<float>();
  const RealFft fft(n_fft);
  const float scale = options_.normalized ? 1.0f / std::sqrt(static_cast<float>(n_fft))
                                          : 1.0f / static_cast<float>(n_fft);
  alto::parallel_for(0, frames, 128, [&](int64_t begin, int64_t end) {
    AlignedBuffer<std::complex<float>> c(bins);
    AlignedBuffer<float> t(n_fft);
    for (int64_t i = begin; i < end; ++i) {
      for (int k = 0; k < bins; ++k) c[k] = in[i * bins + k];
      // irfft ignores the imaginary parts of the DC and Nyquist bins.
      c[0] = c[0].real();
      if (n_fft % 2 == 0) c[bins - 1] = c[bins - 1].real();
      fft.inverse(c.data(), t.data());
      float* row = framed_data + i * n_fft;
      for (int k = 0; k < n_fft; ++k) row[k] = t[k] * scale * window_[k];
    }
  });
  std::vector<double> signal(full, 0.0), envelope(full, 0.0);
  for (int64_t i = 0; i < frames; ++i) {
    const float* row = framed_data + i * n_fft;
    for (int k = 0; k < n_fft; ++k) {
      signal[i * hop + k] += row[k];
      envelope[i * hop + k] += static_cast<double>(window_[k]) * window_[k];
    }
  }
  const int64_t begin = options_.center ? n_fft / 2 : 0;
  int64_t end = options_.center ? full - n_fft / 2 : full;
  if (length) end = std::min(full, begin + *length);
  const int64_t count = std::max<int64_t>(end - begin, 0);
  torch::Tensor out = torch::zeros({length ? *length : count}, torch::kFloat32);
  float* o = out.data_ptr<float>();
  for (int64_t j = 0; j < count; ++j) {
    const double env = envelope[begin + j];
    ALTO_CHECK(env > 1e-11, "InverseStft: the window envelope is zero at sample ", j,
               " (hop_length ", hop, " leaves gaps for this window); the STFT is not invertible");
    o[j] = static_cast<float>(signal[begin + j] / env);
  }
  return out;
}

}  // namespace alto::features
