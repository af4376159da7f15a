#pragma once
// Fixed-size chunks of decoded, downmixed and resampled audio, for streaming inference.

#include <cstdint>
#include <memory>
#include <string>

#include "alto/audio/audio.h"
#include "alto/audio/load.h"

namespace alto::audio {

/// Reads a file, a named pipe or standard input ("-") incrementally. Decoding, channel
/// selection and resampling all happen chunk by chunk, and the concatenated chunks equal
/// load_audio() with the same options sample for sample.
class AudioStreamReader {
 public:
  AudioStreamReader(const std::string& path, const DecodeOptions& options, int64_t chunk_frames);
  /// Reads from an encoded file held in memory; `data` must outlive the reader.
  AudioStreamReader(const void* data, size_t size, const DecodeOptions& options,
                    int64_t chunk_frames, const std::string& name = "<memory>");
  ~AudioStreamReader();
  AudioStreamReader(AudioStreamReader&&) noexcept;
  AudioStreamReader& operator=(AudioStreamReader&&) noexcept;

  /// Fills `chunk` with the next `chunk_frames` frames (fewer only for the last chunk).
  /// Returns false, leaving `chunk` empty, once the stream is exhausted.
  bool read(Audio& chunk);

  /// The source as its decoder reports it (before the options are applied).
  const AudioInfo& source_info() const;
  int sample_rate() const;  // of the chunks
  int channels() const;     // of the chunks

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace alto::audio
