#pragma once
// The two decoding back ends behind load_audio and AudioStreamReader.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "alto/audio/audio.h"
#include "alto/audio/load.h"

namespace alto::audio::detail {

/// Where encoded audio comes from: a path (a file, a named pipe, "-" for stdin) or memory.
struct Source {
  std::string name;  // the path, or a label for memory input; used in every message
  const uint8_t* data = nullptr;
  size_t size = 0;
  bool in_memory() const { return data != nullptr; }
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  /// frames is the container's estimate until decoding ends (-1 when it has none).
  virtual const AudioInfo& info() const = 0;
  /// Positions the stream so that the next read starts at `frame`; false when the stream
  /// cannot seek (the caller then discards frames instead).
  virtual bool seek(int64_t frame) = 0;
  /// Decodes the next block of frames into `block` (native rate and channels); false at the end.
  virtual bool read(Audio& block) = 0;
};

/// Opens `source` with libsndfile when it reads the format well, else with FFmpeg.
/// Throws alto::IoError naming the source when neither can decode it.
std::unique_ptr<Decoder> open_decoder(const Source& source, const std::optional<RawPcmFormat>& raw);

std::unique_ptr<Decoder> open_sndfile_decoder(const Source& source);  // null if not for sndfile
std::unique_ptr<Decoder> open_ffmpeg_decoder(const Source& source,
                                             const std::optional<RawPcmFormat>& raw);

}  // namespace alto::audio::detail
