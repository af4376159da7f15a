#pragma once
// Decoding any real audio file (or an in-memory copy of one) into float32 samples.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "alto/audio/audio.h"
#include "alto/audio/resample.h"

namespace alto::audio {

/// Headerless PCM: FFmpeg's raw demuxer name for the sample format ("s16le", "s24le",
/// "s32le", "f32le", "f64le", "u8", "s16be", ...), the rate and the channel count.
struct RawPcmFormat {
  std::string sample_format;
  int sample_rate = 0;
  int channels = 0;
};

struct DecodeOptions {
  std::optional<int> sample_rate;  // resample to this rate; unset keeps the file's
  bool mono = false;               // downmix to one channel: the mean of all channels
  std::optional<int> channel;      // keep only this channel (0-based)
  double offset = 0.0;             // seconds to skip (seeks; the skipped part is not decoded)
  std::optional<double> duration;  // seconds to read from the offset; unset reads to the end
  ResamplerEngine resampler = ResamplerEngine::kSoxr;
  std::optional<RawPcmFormat> raw;  // the input is headerless PCM in this format

  /// Throws alto::InvalidArgument naming the field for an impossible value.
  void validate() const;
  std::string to_string() const;
};

/// Decodes `path` ("-" is standard input). WAV, FLAC, Ogg Vorbis/Opus, AIFF go through
/// libsndfile; everything else (MP3, AAC/M4A, WebM/Opus, the audio of MP4/MKV video, raw PCM)
/// through FFmpeg. Returns `[channels, frames]` float32 after the options are applied.
Audio load_audio(const std::string& path, const DecodeOptions& options = {});

/// The same from an encoded file held in memory. `name` only labels error messages.
Audio load_audio_from_memory(const void* data, size_t size, const DecodeOptions& options = {},
                             const std::string& name = "<memory>");

/// Container, codec, rate, channels and the exact decoded length of `path` ("-" is standard
/// input; `raw` describes headerless PCM). The length is counted by decoding, as FFmpeg reports
/// it after encoder delay and padding.
AudioInfo probe_audio(const std::string& path,
                      const std::optional<RawPcmFormat>& raw = std::nullopt);

}  // namespace alto::audio
