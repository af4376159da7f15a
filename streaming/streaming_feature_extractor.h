#pragma once
// Frame-synchronous features for live audio, with Kaldi's online-feature verbs. Every frame
// equals the offline extractor's frame with the same options, whatever the chunking, because
// both run the same features::FrameProcessor on frames cut by the same FrameLayout.
//
// What cannot stream exactly, and what the streaming variant does instead:
// - Whisper's dynamic-range clamp max(x, max(x) - 8) needs the maximum over the whole clip, and
//   its 30 s padding needs the clip's end: the streaming frames are the long-form variant
//   (samples / hop_length frames) without the clamp, i.e. WhisperFeatureExtractor with
//   clamp_dynamic_range = false and padding longest without truncation.
// - Kaldi's subtract_mean (per-utterance mean) is refused; apply it to the collected frames.
// - Kaldi dither draws noise per frame from its own generator (seed dither_seed): the frames
//   are a valid dither of the signal but not the offline call's noise.
// - SeamlessM4T's and Wav2Vec2's per-utterance normalisation have no streaming form.

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "alto/features/frames.h"
#include "alto/features/kaldi_fbank.h"
#include "alto/features/mel_spectrogram.h"
#include "alto/features/whisper_feature_extractor.h"

namespace alto::streaming {

class StreamingFeatureExtractor {
 public:
  explicit StreamingFeatureExtractor(features::WhisperFeatureExtractorOptions options);
  explicit StreamingFeatureExtractor(features::KaldiFbankOptions options);
  explicit StreamingFeatureExtractor(features::MelSpectrogramOptions options);

  int sampling_rate() const { return sampling_rate_; }
  int feature_dim() const { return processor_->feature_dim(); }

  /// Appends samples (1-D float, any length including 0) at `sample_rate`, which must be the
  /// extractor's. Computes every frame that is now complete.
  void accept_waveform(int sample_rate, const torch::Tensor& samples);
  /// No more input: computes the frames that reach past the end (reflection, last partial frame).
  void input_finished();
  bool is_finished() const { return finished_; }
  /// Frames computed so far, counting popped ones: the index one past the newest frame.
  int64_t num_frames_ready() const {
    return first_frame_ + static_cast<int64_t>(rows_.size()) / dim_;
  }
  /// Frames [start, start + n) as [n, feature_dim]; they must be ready and not popped.
  torch::Tensor frames(int64_t start, int64_t n) const;
  /// Forgets the oldest n frames (to bound memory on endless streams).
  void pop(int64_t n);
  /// Back to the state after construction.
  void reset();

  /// Convenience: accept_waveform, then return and pop every ready frame.
  torch::Tensor push(const torch::Tensor& samples);
  /// Convenience: input_finished, then return and pop the remaining frames.
  torch::Tensor flush();

 private:
  struct Parts {
    std::shared_ptr<const features::FeatureExtractor> extractor;
    const features::FrameProcessor* processor;
    int sampling_rate;
    double dither;
    uint64_t dither_seed;
  };
  explicit StreamingFeatureExtractor(Parts parts);
  void compute_ready_frames();
  torch::Tensor take_all();

  std::shared_ptr<const features::FeatureExtractor> extractor_;  // owns processor_
  const features::FrameProcessor* processor_;
  int sampling_rate_;
  int dim_;
  double dither_;
  uint64_t dither_seed_;

  features::FrameWorkspace workspace_;
  std::vector<float> frame_;
  std::vector<float> samples_;  // the signal from absolute sample buffer_start_ on
  int64_t buffer_start_ = 0;
  int64_t received_ = 0;
  int64_t next_frame_ = 0;   // next frame to compute
  std::vector<float> rows_;  // computed frames [first_frame_, next_frame_)
  int64_t first_frame_ = 0;
  bool finished_ = false;
  at::Generator generator_;
};

}  // namespace alto::streaming
