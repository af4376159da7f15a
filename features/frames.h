#pragma once
// How STFT-style extractors cut a signal into frames, and the per-frame half of each extractor.
// The offline path (process_frames) and streaming::StreamingFeatureExtractor both run a
// FrameProcessor on frames cut by the same FrameLayout, so streaming equals offline exactly.

#include <torch/types.h>

#include <complex>
#include <cstdint>
#include <memory>
#include <vector>

#include "alto/features/fft.h"

namespace alto::features {

/// What a frame sees beyond the ends of the signal.
enum class FrameEdge {
  kSnip,          // only frames that fit entirely (Kaldi snip_edges=true, center=false)
  kReflect,       // torch.stft center=True pad_mode='reflect' (numpy 'reflect', edge not repeated)
  kConstant,      // torch.stft center=True pad_mode='constant' (zeros)
  kKaldiReflect,  // Kaldi snip_edges=false: reflection that repeats the edge sample
};

struct FrameLayout {
  int frame_length = 400;
  int frame_shift = 160;
  /// Frame i starts at sample i * frame_shift - left_pad (negative samples come from the edge
  /// rule).
  int left_pad = 0;
  FrameEdge edge = FrameEdge::kSnip;
  /// Whisper drops the STFT's last frame.
  bool drop_last = false;

  /// A centred STFT frame layout as torch.stft(center=True) cuts it.
  static FrameLayout centered(int n_fft, int hop_length, FrameEdge edge, bool drop_last = false);
  /// Kaldi's layout for snip_edges true/false.
  static FrameLayout kaldi(int window_size, int window_shift, bool snip_edges);

  int64_t num_frames(int64_t num_samples) const;
  int64_t frame_start(int64_t index) const { return index * frame_shift - left_pad; }
  /// Copies frame `index` of a signal of num_samples samples into out[0, frame_length).
  /// `samples` holds the signal from sample `first` on (a streaming buffer; 0 offline) and must
  /// cover every sample the frame reads. Samples at or past num_samples are only reached through
  /// the edge rule, so a streaming caller may pass the count received so far as long as the
  /// frame ends before it.
  void copy_frame(const float* samples, int64_t first, int64_t num_samples, int64_t index,
                  float* out) const;
};

/// Scratch for one thread: the FFT input and output and the power spectrum.
struct FrameWorkspace {
  explicit FrameWorkspace(int n_fft);
  AlignedBuffer<float> time;
  AlignedBuffer<std::complex<float>> spectrum;
  std::vector<float> power;
  std::vector<float> scratch;  // for processors built on another processor's output
};

class FrameProcessor {
 public:
  virtual ~FrameProcessor() = default;
  virtual const FrameLayout& layout() const = 0;
  virtual int n_fft() const = 0;
  virtual int feature_dim() const = 0;
  /// frame: layout().frame_length raw samples; features: feature_dim() values.
  /// Const and thread-safe: all mutable state is in `workspace`.
  virtual void process(const float* frame, float* features, FrameWorkspace& workspace) const = 0;
};

/// Runs `processor` on every frame of samples[0, num_samples) -> [frames, feature_dim] float32
/// (or [feature_dim, frames] with `feature_major`, the layout Whisper and torchaudio return),
/// spread over alto's threads. `noise`, when given, is [frames, frame_length] and is added to
/// each raw frame first (Kaldi's dither).
torch::Tensor process_frames(const FrameProcessor& processor, const float* samples,
                             int64_t num_samples, const float* noise = nullptr,
                             bool feature_major = false);

/// values[i] = ln(values[i]) for positive normal floats, within 2 ulp of std::log. Written so the
/// compiler vectorises it: the log is most of the arithmetic left once the FFT is done.
void log_in_place(float* values, int count);

/// Index of the first NaN or Inf sample, or -1.
int64_t first_non_finite(const float* samples, int64_t count);

/// Checks a mono waveform for the extractors: 1-D (or [1, N]), non-empty, finite. Returns it as a
/// contiguous float32 CPU tensor [N]. `what` names the extractor in messages.
torch::Tensor checked_waveform(const torch::Tensor& wave, const char* what);

}  // namespace alto::features
