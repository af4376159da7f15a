#pragma once
// The in-memory audio type shared by every alto module.

#include <cstdint>
#include <string>
#include <vector>

namespace alto::audio {

/// Planar float32 audio: `samples` holds `channels` rows of `frames` samples each
/// (row-major `[channels, frames]`), nominally in [-1, 1].
struct Audio {
  std::vector<float> samples;
  int channels = 0;
  int64_t frames = 0;
  int sample_rate = 0;

  Audio() = default;
  Audio(int channels, int64_t frames, int sample_rate);

  float* channel(int c) { return samples.data() + c * frames; }
  const float* channel(int c) const { return samples.data() + c * frames; }
  double duration_seconds() const;
  bool empty() const { return frames == 0; }
  /// Frames [begin, begin + count) of every channel.
  Audio slice(int64_t begin, int64_t count) const;
  /// Appends `tail` (same channels and sample rate) after the last frame.
  void append(const Audio& tail);
};

/// What a file holds, as its container and decoder report it.
struct AudioInfo {
  std::string path;
  std::string container;  // FFmpeg's demuxer name, e.g. "wav", "mov,mp4,m4a,3gp,3g2,mj2"
  std::string codec;      // FFmpeg's codec name, e.g. "pcm_s16le", "mp3", "aac", "opus"
  int sample_rate = 0;
  int channels = 0;
  int64_t frames = 0;  // as decoded, after encoder delay and padding are removed
  double duration_seconds() const;
};

}  // namespace alto::audio
