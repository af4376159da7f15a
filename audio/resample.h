#pragma once
// Streaming sample-rate conversion on FFmpeg's libswresample.

#include <memory>
#include <string>

#include "alto/audio/audio.h"

namespace alto::audio {

enum class ResamplerEngine {
  kSoxr,  // libsoxr through libswresample: ~134 dB SNR, alias rejection ~ -144 dB (ffmpeg's soxr)
  kSwr,   // libswresample's own polyphase filter, with a longer filter than ffmpeg's default
};

struct ResamplerOptions {
  int input_rate = 0;
  int output_rate = 0;
  int channels = 1;
  ResamplerEngine engine = ResamplerEngine::kSoxr;
  /// The largest conversion factor either way: a file whose header claims 1 Hz (or 2 GHz) is
  /// refused rather than turned into gigabytes (or nothing). 8 kHz -> 768 kHz is 96.
  double max_ratio = 256;

  std::string to_string() const;
};

/// Converts planar float audio between sample rates, chunk by chunk. The output has zero delay
/// and its length depends only on the total input length (44100 frames at 44.1 kHz give exactly
/// 16000 at 16 kHz): any chunking of the input gives bit-identical output.
class Resampler {
 public:
  explicit Resampler(const ResamplerOptions& options);
  ~Resampler();
  Resampler(Resampler&&) noexcept;
  Resampler& operator=(Resampler&&) noexcept;

  /// chunk: `options.channels` channels at `options.input_rate`. Returns the frames now ready.
  Audio process(const Audio& chunk);
  /// Ends the stream and returns the remaining frames. The resampler can then start a new one.
  Audio flush();

  const ResamplerOptions& options() const { return options_; }

 private:
  struct Impl;
  ResamplerOptions options_;
  std::unique_ptr<Impl> impl_;
};

/// One-shot form of Resampler.
Audio resample(const Audio& audio, int output_rate,
               ResamplerEngine engine = ResamplerEngine::kSoxr);

std::string to_string(ResamplerEngine engine);

}  // namespace alto::audio
