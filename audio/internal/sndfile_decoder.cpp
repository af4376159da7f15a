// libsndfile back end: WAV (8/16/24/32-bit int, float, double), FLAC, Ogg Vorbis/Opus, AIFF.

#include <sndfile.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "alto/audio/internal/decoder.h"
#include "alto/core/error.h"

namespace alto::audio::detail {
namespace {

struct SndfileCloser {
  void operator()(SNDFILE* f) const { sf_close(f); }
};
using SndfilePtr = std::unique_ptr<SNDFILE, SndfileCloser>;

// sf_open_virtual over a memory buffer.
struct MemoryReader {
  const uint8_t* data;
  sf_count_t size;
  sf_count_t pos = 0;

  static sf_count_t length(void* self) { return static_cast<MemoryReader*>(self)->size; }
  static sf_count_t seek(sf_count_t offset, int whence, void* self) {
    auto* m = static_cast<MemoryReader*>(self);
    sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : m->size;
    if (base + offset < 0 || base + offset > m->size) return -1;
    m->pos = base + offset;
    return m->pos;
  }
  static sf_count_t read(void* out, sf_count_t count, void* self) {
    auto* m = static_cast<MemoryReader*>(self);
    sf_count_t n = std::min(count, m->size - m->pos);
    std::memcpy(out, m->data + m->pos, static_cast<size_t>(n));
    m->pos += n;
    return n;
  }
  static sf_count_t write(const void*, sf_count_t, void*) { return 0; }
  static sf_count_t tell(void* self) { return static_cast<MemoryReader*>(self)->pos; }
};

// Names as FFmpeg gives them, so `alto info` reads the same whichever back end decodes.
const char* container_name(int format) {
  switch (format & SF_FORMAT_TYPEMASK) {
    case SF_FORMAT_WAV:
    case SF_FORMAT_WAVEX:
      return "wav";
    case SF_FORMAT_RF64:
      return "rf64";
    case SF_FORMAT_W64:
      return "w64";
    case SF_FORMAT_FLAC:
      return "flac";
    case SF_FORMAT_OGG:
      return "ogg";
    case SF_FORMAT_AIFF:
      return "aiff";
    default:
      return nullptr;  // left to FFmpeg
  }
}

std::string codec_name(int format) {
  if ((format & SF_FORMAT_TYPEMASK) == SF_FORMAT_FLAC) return "flac";
  const bool big_endian = (format & SF_FORMAT_TYPEMASK) == SF_FORMAT_AIFF;
  const char* e = big_endian ? "be" : "le";
  switch (format & SF_FORMAT_SUBMASK) {
    case SF_FORMAT_PCM_U8:
      return "pcm_u8";
    case SF_FORMAT_PCM_S8:
      return "pcm_s8";
    case SF_FORMAT_PCM_16:
      return std::string("pcm_s16") + e;
    case SF_FORMAT_PCM_24:
      return std::string("pcm_s24") + e;
    case SF_FORMAT_PCM_32:
      return std::string("pcm_s32") + e;
    case SF_FORMAT_FLOAT:
      return std::string("pcm_f32") + e;
    case SF_FORMAT_DOUBLE:
      return std::string("pcm_f64") + e;
    case SF_FORMAT_ULAW:
      return "pcm_mulaw";
    case SF_FORMAT_ALAW:
      return "pcm_alaw";
    case SF_FORMAT_VORBIS:
      return "vorbis";
    case SF_FORMAT_OPUS:
      return "opus";
    default:
      return "";
  }
}

class SndfileDecoder final : public Decoder {
 public:
  SndfileDecoder(const Source& source, SndfilePtr file, const SF_INFO& sf,
                 std::unique_ptr<MemoryReader> memory)
      : source_(source), file_(std::move(file)), memory_(std::move(memory)) {
    info_.path = source.name;
    info_.container = container_name(sf.format);
    info_.codec = codec_name(sf.format);
    info_.sample_rate = sf.samplerate;
    info_.channels = sf.channels;
    info_.frames = sf.frames;
    // Without clipping, libsndfile wraps out-of-range floats in int conversions.
    sf_command(file_.get(), SFC_SET_CLIPPING, nullptr, SF_TRUE);
  }

  const AudioInfo& info() const override { return info_; }

  bool seek(int64_t frame) override {
    if (sf_seek(file_.get(), frame, SEEK_SET) < 0) return false;
    position_ = frame;
    return true;
  }

  bool read(Audio& block) override {
    constexpr sf_count_t kBlockFrames = 8192;
    const int channels = info_.channels;
    interleaved_.resize(static_cast<size_t>(kBlockFrames) * channels);
    sf_count_t got = sf_readf_float(file_.get(), interleaved_.data(), kBlockFrames);
    if (got <= 0) {
      int err = sf_error(file_.get());
      ALTO_CHECK_AS(IoError, err == SF_ERR_NO_ERROR, source_.name, ": decoding failed at frame ",
                    position_, ": ", sf_error_number(err));
      ALTO_CHECK_AS(IoError, info_.frames < 0 || position_ >= info_.frames, source_.name,
                    ": truncated: the header declares ", info_.frames, " frames, the file holds ",
                    position_);
      return false;
    }
    block = Audio(channels, got, info_.sample_rate);
    for (int c = 0; c < channels; ++c) {
      float* row = block.channel(c);
      for (sf_count_t i = 0; i < got; ++i) row[i] = interleaved_[i * channels + c];
    }
    position_ += got;
    return true;
  }

 private:
  Source source_;
  SndfilePtr file_;
  std::unique_ptr<MemoryReader> memory_;  // must outlive file_ when reading from memory
  AudioInfo info_;
  std::vector<float> interleaved_;
  int64_t position_ = 0;
};

// The containers alto leaves to libsndfile, by their first four bytes. Anything else goes to
// FFmpeg without a libsndfile attempt (its MPEG reader would claim MP3 and print to stderr).
bool has_sndfile_signature(const Source& source) {
  char magic[4] = {0};
  if (source.in_memory()) {
    if (source.size < 4) return false;
    std::memcpy(magic, source.data, 4);
  } else {
    std::FILE* f = std::fopen(source.name.c_str(), "rb");
    if (!f) return false;
    size_t got = std::fread(magic, 1, 4, f);
    std::fclose(f);
    if (got != 4) return false;
  }
  for (const char* signature : {"RIFF", "RIFX", "RF64", "BW64", "riff", "FORM", "fLaC", "OggS"})
    if (std::memcmp(magic, signature, 4) == 0) return true;
  return false;
}

}  // namespace

std::unique_ptr<Decoder> open_sndfile_decoder(const Source& source) {
  if (!has_sndfile_signature(source)) return nullptr;
  SF_INFO sf;
  std::memset(&sf, 0, sizeof(sf));
  std::unique_ptr<MemoryReader> memory;
  SndfilePtr file;
  if (source.in_memory()) {
    memory.reset(new MemoryReader{source.data, static_cast<sf_count_t>(source.size)});
    static SF_VIRTUAL_IO io = {MemoryReader::length, MemoryReader::seek, MemoryReader::read,
                               MemoryReader::write, MemoryReader::tell};
    file.reset(sf_open_virtual(&io, SFM_READ, &sf, memory.get()));
  } else {
    file.reset(sf_open(source.name.c_str(), SFM_READ, &sf));
  }
  if (!file || container_name(sf.format) == nullptr || sf.channels <= 0 || sf.samplerate <= 0)
    return nullptr;
  // libsndfile accepts a header whose data chunk runs past the end of the file and shortens
  // the stream silently; alto reports such a file as truncated instead of losing the tail.
  // Its log says so on the data chunk's line: "data : 32000 (should be 200)".
  char log[8192] = {0};
  sf_command(file.get(), SFC_GET_LOG_INFO, log, sizeof(log));
  const char* data_line = std::strstr(log, "\ndata : ");
  const char* line_end = data_line ? std::strchr(data_line + 1, '\n') : nullptr;
  const char* should_be = data_line ? std::strstr(data_line, "(should be") : nullptr;
  ALTO_CHECK_AS(IoError, !should_be || (line_end && should_be > line_end), source.name,
                ": truncated: the data chunk declares more bytes than the file holds");
  return std::make_unique<SndfileDecoder>(source, std::move(file), sf, std::move(memory));
}

}  // namespace alto::audio::detail
