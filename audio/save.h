#pragma once
// Writing audio files.

#include <string>

#include "alto/audio/audio.h"

namespace alto::audio {

/// kRaw: headerless interleaved little-endian samples in the encoding.
enum class FileFormat { kWav, kFlac, kRaw };
enum class SampleEncoding { kPcm16, kPcm24, kFloat32 };  // FLAC takes kPcm16 or kPcm24

struct SaveFormat {
  FileFormat file = FileFormat::kWav;
  SampleEncoding encoding = SampleEncoding::kPcm16;

  /// The file format a path's extension names (.wav, .flac, .raw or .pcm), else kWav.
  static SaveFormat for_path(const std::string& path);
  std::string to_string() const;
};

/// Writes `audio` to `path`. PCM samples are scaled by 2^(bits-1), rounded and clipped, so
/// audio on the integer grid (k / 32768 for 16 bits) round-trips exactly; float is bit-exact.
/// The file appears whole or not at all (written beside `path`, renamed into place); "-" is
/// standard output. Throws alto::Error for NaN/Inf samples, an impossible encoding or an
/// unwritable path.
void save_audio(const std::string& path, const Audio& audio,
                const SaveFormat& format = SaveFormat{});

FileFormat parse_file_format(const std::string& name);          // "wav" | "flac" | "raw"
SampleEncoding parse_sample_encoding(const std::string& bits);  // "16" | "24" | "32f"

}  // namespace alto::audio
