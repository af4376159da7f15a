#include "alto/audio/stream_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <deque>
#include <optional>

#include "alto/audio/internal/decoder.h"
#include "alto/audio/resample.h"
#include "alto/core/error.h"

namespace alto::audio {
namespace detail {

std::unique_ptr<Decoder> open_decoder(const Source& source,
                                      const std::optional<RawPcmFormat>& raw) {
  // libsndfile needs to seek: standard input, pipes and FIFOs go straight to FFmpeg.
  bool seekable = source.in_memory();
  if (!source.in_memory() && source.name != "-") {
    struct stat st;
    ALTO_CHECK_AS(IoError, ::stat(source.name.c_str(), &st) == 0, source.name, ": ",
                  std::strerror(errno));
    ALTO_CHECK_AS(IoError, !S_ISDIR(st.st_mode), source.name,
                  ": is a directory, not an audio file");
    seekable = S_ISREG(st.st_mode);
  }
  if (seekable && !raw) {
    if (auto decoder = open_sndfile_decoder(source)) return decoder;
  }
  return open_ffmpeg_decoder(source, raw);
}

}  // namespace detail

struct AudioStreamReader::Impl {
  Impl(detail::Source source, const DecodeOptions& options, int64_t chunk_frames)
      : source(std::move(source)), options(options), chunk_frames(chunk_frames) {
    ALTO_CHECK(chunk_frames > 0, "AudioStreamReader: chunk_frames must be > 0, got ", chunk_frames);
  }

  detail::Source source;
  DecodeOptions options;
  int64_t chunk_frames;
  std::unique_ptr<detail::Decoder> decoder;
  std::optional<Resampler> resampler;
  int out_channels = 0;
  int out_rate = 0;

  int64_t to_skip = 0;       // source frames still to discard (offset on unseekable input)
  int64_t source_left = -1;  // source frames still to read for `duration`; -1: no limit
  int64_t source_read = 0;   // source frames decoded past the offset
  bool source_done = false;
  std::vector<std::deque<float>> fifo;  // per output channel

  void open() {
    options.validate();
    decoder = detail::open_decoder(source, options.raw);
    const AudioInfo& info = decoder->info();
    if (options.channel) {
      ALTO_CHECK(*options.channel < info.channels, "DecodeOptions.channel ", *options.channel,
                 " is out of range: ", source.name, " has ", info.channels, " channel",
                 info.channels == 1 ? "" : "s");
    }
    out_channels = options.mono || options.channel ? 1 : info.channels;
    out_rate = options.sample_rate.value_or(info.sample_rate);
    if (out_rate != info.sample_rate)
      resampler.emplace(
          ResamplerOptions{info.sample_rate, out_rate, out_channels, options.resampler});
    fifo.assign(out_channels, {});

    const int64_t offset = std::llround(options.offset * info.sample_rate);
    if (options.duration) source_left = std::llround(*options.duration * info.sample_rate);
    if (offset > 0) {
      ALTO_CHECK(info.frames < 0 || offset < info.frames, "DecodeOptions.offset ", options.offset,
                 " s is past the end of ", source.name, " (", info.duration_seconds(), " s)");
      if (!decoder->seek(offset)) to_skip = offset;
    }
  }

  // The selected / downmixed channels of a decoded block.
  Audio select_channels(const Audio& block) const {
    if (out_channels == block.channels) return block;
    Audio out(1, block.frames, block.sample_rate);
    float* dst = out.channel(0);
    if (options.channel) {
      std::copy_n(block.channel(*options.channel), block.frames, dst);
      return out;
    }
    const float scale = 1.0f / block.channels;
    for (int c = 0; c < block.channels; ++c) {
      const float* src = block.channel(c);
      for (int64_t i = 0; i < block.frames; ++i) dst[i] += src[i];
    }
    for (int64_t i = 0; i < block.frames; ++i) dst[i] *= scale;
    return out;
  }

  void check_finite(const Audio& block) const {
    for (int c = 0; c < block.channels; ++c) {
      const float* row = block.channel(c);
      for (int64_t i = 0; i < block.frames; ++i) {
        ALTO_CHECK_AS(IoError, std::isfinite(row[i]), source.name, ": sample ", source_read + i,
                      " of channel ", c, " is ", row[i], " (audio must be finite)");
      }
    }
  }

  void push(const Audio& audio) {
    for (int c = 0; c < out_channels; ++c)
      fifo[c].insert(fifo[c].end(), audio.channel(c), audio.channel(c) + audio.frames);
  }

  // Decodes one more block into the FIFO; at the end of the source, flushes the resampler.
  void pull() {
    Audio block;
    bool got = source_left != 0 && decoder->read(block);
    if (got && to_skip > 0) {
      int64_t drop = std::min(to_skip, block.frames);
      to_skip -= drop;
      block = block.slice(drop, block.frames - drop);
      if (block.frames == 0) return;
    }
    if (!got) {
      ALTO_CHECK(to_skip == 0, "DecodeOptions.offset ", options.offset, " s is past the end of ",
                 source.name);
      ALTO_CHECK_AS(
          IoError, source_read > 0, source.name,
          options.offset > 0 ? ": no audio after the offset" : ": contains no audio samples");
      if (resampler) push(resampler->flush());
      source_done = true;
      return;
    }
    if (source_left > 0 && block.frames > source_left) block = block.slice(0, source_left);
    check_finite(block);
    source_read += block.frames;
    if (source_left > 0) source_left -= block.frames;
    Audio selected = select_channels(block);
    push(resampler ? resampler->process(selected) : selected);
  }

  bool read(Audio& chunk) {
    while (!source_done && static_cast<int64_t>(fifo[0].size()) < chunk_frames) pull();
    const int64_t n = std::min<int64_t>(chunk_frames, fifo[0].size());
    chunk = Audio(out_channels, n, out_rate);
    for (int c = 0; c < out_channels; ++c) {
      std::copy_n(fifo[c].begin(), n, chunk.channel(c));
      fifo[c].erase(fifo[c].begin(), fifo[c].begin() + n);
    }
    return n > 0;
  }
};

AudioStreamReader::AudioStreamReader(const std::string& path, const DecodeOptions& options,
                                     int64_t chunk_frames)
    : impl_(std::make_unique<Impl>(detail::Source{path}, options, chunk_frames)) {
  impl_->open();
}

AudioStreamReader::AudioStreamReader(const void* data, size_t size, const DecodeOptions& options,
                                     int64_t chunk_frames, const std::string& name)
    : impl_(std::make_unique<Impl>(detail::Source{name, static_cast<const uint8_t*>(data), size},
                                   options, chunk_frames)) {
  ALTO_CHECK_AS(IoError, data != nullptr && size > 0, name, ": empty buffer, no audio data");
  impl_->open();
}

AudioStreamReader::~AudioStreamReader() = default;
AudioStreamReader::AudioStreamReader(AudioStreamReader&&) noexcept = default;
AudioStreamReader& AudioStreamReader::operator=(AudioStreamReader&&) noexcept = default;

bool AudioStreamReader::read(Audio& chunk) { return impl_->read(chunk); }
const AudioInfo& AudioStreamReader::source_info() const { return impl_->decoder->info(); }
int AudioStreamReader::sample_rate() const { return impl_->out_rate; }
int AudioStreamReader::channels() const { return impl_->out_channels; }

}  // namespace alto::audio
