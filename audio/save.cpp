#include "alto/audio/save.h"

#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "alto/core/error.h"
#include "alto/core/internal/output_file.h"

namespace alto::audio {

SaveFormat SaveFormat::for_path(const std::string& path) {
  auto dot = path.find_last_of('.');
  std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  const FileFormat file = ext == "flac"                  ? FileFormat::kFlac
                          : ext == "raw" || ext == "pcm" ? FileFormat::kRaw
                                                         : FileFormat::kWav;
  return SaveFormat{file, SampleEncoding::kPcm16};
}

std::string SaveFormat::to_string() const {
  const char* encodings[] = {"pcm16", "pcm24", "float32"};
  const char* files[] = {"wav", "flac", "raw"};
  return alto::detail::concat("SaveFormat(file=", files[static_cast<int>(file)],
                              ", encoding=", encodings[static_cast<int>(encoding)], ")");
}

FileFormat parse_file_format(const std::string& name) {
  if (name == "wav") return FileFormat::kWav;
  if (name == "flac") return FileFormat::kFlac;
  if (name == "raw") return FileFormat::kRaw;
  throw InvalidArgument("unknown file format \"" + name + "\" (expected wav, flac or raw)");
}

SampleEncoding parse_sample_encoding(const std::string& bits) {
  if (bits == "16") return SampleEncoding::kPcm16;
  if (bits == "24") return SampleEncoding::kPcm24;
  if (bits == "32f") return SampleEncoding::kFloat32;
  throw InvalidArgument("unknown sample encoding \"" + bits + "\" (expected 16, 24 or 32f)");
}

namespace {

struct SndfileCloser {
  void operator()(SNDFILE* f) const { sf_close(f); }
};

// libsndfile scales floats by 2^(bits-1) - 1 on write but by 2^-(bits-1) on read, so values on
// the integer grid drift by one step per round trip; alto converts to integers itself.
std::vector<int32_t> to_int32(const Audio& audio, int bits) {
  const double scale = std::ldexp(1.0, bits - 1);
  const double lo = -scale, hi = scale - 1;
  const int shift = 32 - bits;  // sf_writef_int takes the sample in the top bits
  std::vector<int32_t> out(audio.samples.size());
  for (int64_t i = 0; i < audio.frames; ++i)
    for (int c = 0; c < audio.channels; ++c) {
      double v = std::clamp(std::nearbyint(audio.channel(c)[i] * scale), lo, hi);
      out[i * audio.channels + c] =
          static_cast<int32_t>(static_cast<uint32_t>(static_cast<int32_t>(v)) << shift);
    }
  return out;
}

// libsndfile writes into memory (WAV's header is finished by seeking back, which a pipe cannot
// do); OutputFile then puts the bytes in place whole.
struct MemoryFile {
  std::vector<char> bytes;
  sf_count_t position = 0;

  static SF_VIRTUAL_IO io() {
    SF_VIRTUAL_IO v;
    v.get_filelen = [](void* self) -> sf_count_t {
      return static_cast<sf_count_t>(static_cast<MemoryFile*>(self)->bytes.size());
    };
    v.seek = [](sf_count_t offset, int whence, void* self) -> sf_count_t {
      auto* f = static_cast<MemoryFile*>(self);
      const sf_count_t base = whence == SEEK_SET   ? 0
                              : whence == SEEK_CUR ? f->position
                                                   : static_cast<sf_count_t>(f->bytes.size());
      f->position = std::max<sf_count_t>(0, base + offset);
      return f->position;
    };
    v.read = [](void* out, sf_count_t count, void* self) -> sf_count_t {
      auto* f = static_cast<MemoryFile*>(self);
      const sf_count_t n =
          std::clamp<sf_count_t>(static_cast<sf_count_t>(f->bytes.size()) - f->position, 0, count);
      std::memcpy(out, f->bytes.data() + f->position, static_cast<size_t>(n));
      f->position += n;
      return n;
    };
    v.write = [](const void* in, sf_count_t count, void* self) -> sf_count_t {
      auto* f = static_cast<MemoryFile*>(self);
      if (f->position + count > static_cast<sf_count_t>(f->bytes.size()))
        f->bytes.resize(static_cast<size_t>(f->position + count));
      std::memcpy(f->bytes.data() + f->position, in, static_cast<size_t>(count));
      f->position += count;
      return count;
    };
    v.tell = [](void* self) -> sf_count_t { return static_cast<MemoryFile*>(self)->position; };
    return v;
  }
};

}  // namespace

void save_audio(const std::string& path, const Audio& audio, const SaveFormat& format) {
  ALTO_CHECK(audio.channels > 0, path, ": cannot write audio with ", audio.channels, " channels");
  ALTO_CHECK(audio.sample_rate > 0, path, ": cannot write audio at ", audio.sample_rate, " Hz");
  ALTO_CHECK(audio.samples.size() == static_cast<size_t>(audio.channels) * audio.frames, path,
             ": Audio holds ", audio.samples.size(),
             " samples, expected channels x frames = ", audio.channels * audio.frames);
  ALTO_CHECK(!(format.file == FileFormat::kFlac && format.encoding == SampleEncoding::kFloat32),
             path, ": FLAC stores integers only: use 16 or 24 bits");
  for (int c = 0; c < audio.channels; ++c) {
    const float* row = audio.channel(c);
    for (int64_t i = 0; i < audio.frames; ++i)
      ALTO_CHECK(std::isfinite(row[i]), path, ": sample ", i, " of channel ", c, " is ", row[i],
                 "; only finite samples can be written");
  }

  SF_INFO info;
  std::memset(&info, 0, sizeof(info));
  info.samplerate = audio.sample_rate;
  info.channels = audio.channels;
  const int subtype = format.encoding == SampleEncoding::kPcm16   ? SF_FORMAT_PCM_16
                      : format.encoding == SampleEncoding::kPcm24 ? SF_FORMAT_PCM_24
                                                                  : SF_FORMAT_FLOAT;
  info.format = (format.file == FileFormat::kWav    ? SF_FORMAT_WAV
                 : format.file == FileFormat::kFlac ? SF_FORMAT_FLAC
                                                    : SF_FORMAT_RAW | SF_ENDIAN_LITTLE) |
                subtype;
  MemoryFile memory;
  SF_VIRTUAL_IO io = MemoryFile::io();
  std::unique_ptr<SNDFILE, SndfileCloser> file(sf_open_virtual(&io, SFM_WRITE, &info, &memory));
  ALTO_CHECK_AS(IoError, file != nullptr, path, ": cannot write ", format.to_string(), ": ",
                sf_strerror(nullptr));

  sf_count_t written;
  if (format.encoding == SampleEncoding::kFloat32) {
    std::vector<float> interleaved(audio.samples.size());
    for (int64_t i = 0; i < audio.frames; ++i)
      for (int c = 0; c < audio.channels; ++c)
        interleaved[i * audio.channels + c] = audio.channel(c)[i];
    written = sf_writef_float(file.get(), interleaved.data(), audio.frames);
  } else {
    auto ints = to_int32(audio, format.encoding == SampleEncoding::kPcm16 ? 16 : 24);
    written = sf_writef_int(file.get(), ints.data(), audio.frames);
  }
  ALTO_CHECK_AS(IoError, written == audio.frames, path, ": short write (", written, " of ",
                audio.frames, " frames): ", sf_strerror(file.get()));
  ALTO_CHECK_AS(IoError, sf_close(file.release()) == 0, path, ": cannot finish writing");
  internal::OutputFile out(path);
  out.write(memory.bytes.data(), memory.bytes.size(), "the audio");
  out.commit();
}

}  // namespace alto::audio
