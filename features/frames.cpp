#include "alto/features/frames.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "alto/core/error.h"
#include "alto/core/threading.h"

namespace alto::features {

FrameLayout FrameLayout::centered(int n_fft, int hop_length, FrameEdge edge, bool drop_last) {
  FrameLayout layout;
  layout.frame_length = n_fft;
  layout.frame_shift = hop_length;
  layout.left_pad = n_fft / 2;
  layout.edge = edge;
  layout.drop_last = drop_last;
  return layout;
}

FrameLayout FrameLayout::kaldi(int window_size, int window_shift, bool snip_edges) {
  FrameLayout layout;
  layout.frame_length = window_size;
  layout.frame_shift = window_shift;
  layout.left_pad = snip_edges ? 0 : window_size / 2 - window_shift / 2;
  layout.edge = snip_edges ? FrameEdge::kSnip : FrameEdge::kKaldiReflect;
  return layout;
}

int64_t FrameLayout::num_frames(int64_t n) const {
  int64_t frames = 0;
  switch (edge) {
    case FrameEdge::kSnip:
      frames = n >= frame_length ? 1 + (n - frame_length) / frame_shift : 0;
      break;
    case FrameEdge::kReflect:
    case FrameEdge::kConstant: {
      // torch.stft pads n_fft / 2 on both sides.
      const int64_t padded = n + 2 * left_pad;
      frames = padded >= frame_length ? 1 + (padded - frame_length) / frame_shift : 0;
      break;
    }
    case FrameEdge::kKaldiReflect:
      frames = (n + frame_shift / 2) / frame_shift;
      break;
  }
  if (drop_last) frames = std::max<int64_t>(frames - 1, 0);
  return frames;
}

namespace {

// numpy.pad(mode='reflect') index rule, repeated for pads longer than the signal.
int64_t reflect_index(int64_t j, int64_t n) {
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  j %= period;
  if (j < 0) j += period;
  return j < n ? j : period - j;
}

// Kaldi's FeatureWindow reflection: -1 -> 0, n -> n - 1.
int64_t kaldi_reflect_index(int64_t j, int64_t n) {
  while (j < 0 || j >= n) j = j < 0 ? -j - 1 : 2 * n - 1 - j;
  return j;
}

}  // namespace

void FrameLayout::copy_frame(const float* x, int64_t first, int64_t n, int64_t index,
                             float* out) const {
  const int64_t start = frame_start(index);
  if (start >= 0 && start + frame_length <= n) {
    std::memcpy(out, x + (start - first), sizeof(float) * frame_length);
    return;
  }
  for (int k = 0; k < frame_length; ++k) {
    const int64_t j = start + k;
    if (j >= 0 && j < n) {
      out[k] = x[j - first];
      continue;
    }
    switch (edge) {
      case FrameEdge::kSnip:
      case FrameEdge::kConstant:
        out[k] = 0.0f;
        break;
      case FrameEdge::kReflect:
        out[k] = x[reflect_index(j, n) - first];
        break;
      case FrameEdge::kKaldiReflect:
        out[k] = x[kaldi_reflect_index(j, n) - first];
        break;
    }
  }
}

FrameWorkspace::FrameWorkspace(int n_fft)
    : time(n_fft), spectrum(n_fft / 2 + 1), power(n_fft / 2 + 1) {}

torch::Tensor process_frames(const FrameProcessor& processor, const float* samples,
                             int64_t num_samples, const float* noise, bool feature_major) {
  const FrameLayout& layout = processor.layout();
  const int64_t frames = layout.num_frames(num_samples);
  const int dim = processor.feature_dim();
  torch::Tensor out = feature_major ? torch::empty({dim, frames}, torch::kFloat32)
                                    : torch::empty({frames, dim}, torch::kFloat32);
  float* features = out.data_ptr<float>();
  // Frames are independent: split them into chunks, one workspace per chunk. Feature-major
  // output goes through a small block of rows so the transposed writes stay contiguous.
  constexpr int64_t kBlock = 64;
  alto::parallel_for(0, frames, 512, [&](int64_t begin, int64_t end) {
    FrameWorkspace workspace(processor.n_fft());
    std::vector<float> frame(layout.frame_length);
    std::vector<float> block(feature_major ? kBlock * dim : 0);
    for (int64_t first = begin; first < end; first += kBlock) {
      const int64_t count = std::min(kBlock, end - first);
      for (int64_t j = 0; j < count; ++j) {
        const int64_t i = first + j;
        const int64_t start = layout.frame_start(i);
        const float* input = frame.data();
        if (noise == nullptr && start >= 0 && start + layout.frame_length <= num_samples) {
          input = samples + start;  // interior frames are read in place
        } else {
          layout.copy_frame(samples, 0, num_samples, i, frame.data());
          if (noise != nullptr) {
            const float* n = noise + i * layout.frame_length;
            for (int k = 0; k < layout.frame_length; ++k) frame[k] += n[k];
          }
        }
        float* row = feature_major ? block.data() + j * dim : features + i * dim;
        processor.process(input, row, workspace);
      }
      if (feature_major)
        for (int d = 0; d < dim; ++d)
          for (int64_t j = 0; j < count; ++j) features[d * frames + first + j] = block[j * dim + d];
    }
  });
  return out;
}

void log_in_place(float* values, int count) {
  constexpr float kLn2Hi = 0.693145752f;  // ln 2 split so e * kLn2Hi is exact
  constexpr float kLn2Lo = 1.42860677e-06f;
  for (int i = 0; i < count; ++i) {
    int32_t bits;
    std::memcpy(&bits, &values[i], sizeof bits);
    // x = m * 2^e with m in [sqrt(1/2), sqrt(2)): 0x3f3504f3 is sqrt(1/2).
    const int32_t e = (bits - 0x3f3504f3) >> 23;
    const int32_t mantissa_bits = bits - e * (1 << 23);  // not e << 23: UB for e < 0 in C++17
    float m;
    std::memcpy(&m, &mantissa_bits, sizeof m);
    // ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172: the series to s^9 is exact in float.
    const float s = (m - 1.0f) / (m + 1.0f);
    const float s2 = s * s;
    const float series =
        2.0f * s * (1.0f + s2 * (1.0f / 3 + s2 * (1.0f / 5 + s2 * (1.0f / 7 + s2 * (1.0f / 9)))));
    const float ef = static_cast<float>(e);
    values[i] = ef * kLn2Hi + (series + ef * kLn2Lo);
  }
}

int64_t first_non_finite(const float* x, int64_t n) {
  // x * 0 is 0 for finite x and NaN otherwise, so one vectorised sum screens the whole signal.
  constexpr int64_t kBlock = 4096;
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t end = std::min(n, begin + kBlock);
    float screen = 0.0f;
    for (int64_t i = begin; i < end; ++i) screen += x[i] * 0.0f;
    if (screen == 0.0f) continue;
    for (int64_t i = begin; i < end; ++i)
      if (!std::isfinite(x[i])) return i;
  }
  return -1;
}

torch::Tensor checked_waveform(const torch::Tensor& wave, const char* what) {
  ALTO_CHECK(wave.defined(), what, ": the waveform is an undefined tensor");
  torch::Tensor x = wave;
  if (x.dim() == 2 && x.size(0) == 1) x = x[0];
  ALTO_CHECK(x.dim() == 1, what,
             ": expected a mono waveform [samples] (or [1, samples]), got shape ", wave.sizes());
  ALTO_CHECK(x.is_floating_point(), what, ": expected floating-point samples, got ", wave.dtype());
  ALTO_CHECK(x.numel() > 0, what, ": the waveform is empty");
  x = x.to(torch::kCPU, torch::kFloat32).contiguous();
  const int64_t bad = first_non_finite(x.data_ptr<float>(), x.numel());
  ALTO_CHECK(bad < 0, what, ": the waveform contains NaN or Inf samples (first at index ", bad,
             ")");
  return x;
}

}  // namespace alto::features
