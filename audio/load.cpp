#include "alto/audio/load.h"

#include <cmath>
#include <vector>

#include "alto/audio/internal/decoder.h"
#include "alto/audio/stream_reader.h"
#include "alto/core/error.h"

namespace alto::audio {

void DecodeOptions::validate() const {
  if (sample_rate)
    ALTO_CHECK(*sample_rate > 0, "DecodeOptions.sample_rate must be > 0, got ", *sample_rate);
  if (channel) ALTO_CHECK(*channel >= 0, "DecodeOptions.channel must be >= 0, got ", *channel);
  ALTO_CHECK(!(mono && channel), "DecodeOptions.mono and DecodeOptions.channel exclude each other");
  ALTO_CHECK(std::isfinite(offset) && offset >= 0,
             "DecodeOptions.offset must be >= 0 seconds, got ", offset);
  if (duration)
    ALTO_CHECK(std::isfinite(*duration) && *duration > 0,
               "DecodeOptions.duration must be > 0 seconds, got ", *duration);
  if (raw) {
    ALTO_CHECK(!raw->sample_format.empty(), "DecodeOptions.raw.sample_format must be set");
    ALTO_CHECK(raw->sample_rate > 0, "DecodeOptions.raw.sample_rate must be > 0, got ",
               raw->sample_rate);
    ALTO_CHECK(raw->channels > 0, "DecodeOptions.raw.channels must be > 0, got ", raw->channels);
  }
}

std::string DecodeOptions::to_string() const {
  return alto::detail::concat(
      "DecodeOptions(sample_rate=", sample_rate ? std::to_string(*sample_rate) : "None",
      ", mono=", mono ? "True" : "False", ", channel=", channel ? std::to_string(*channel) : "None",
      ", offset=", offset, ", duration=", duration ? std::to_string(*duration) : "None",
      ", resampler=", audio::to_string(resampler), ", raw=",
      raw ? alto::detail::concat("RawPcmFormat(sample_format=", raw->sample_format,
                                 ", sample_rate=", raw->sample_rate, ", channels=", raw->channels,
                                 ")")
          : "None",
      ")");
}

namespace {

Audio drain(AudioStreamReader& reader) {
  std::vector<std::vector<float>> rows(reader.channels());
  for (Audio chunk; reader.read(chunk);)
    for (int c = 0; c < chunk.channels; ++c)
      rows[c].insert(rows[c].end(), chunk.channel(c), chunk.channel(c) + chunk.frames);
  Audio out(reader.channels(), static_cast<int64_t>(rows[0].size()), reader.sample_rate());
  for (int c = 0; c < out.channels; ++c) std::copy(rows[c].begin(), rows[c].end(), out.channel(c));
  return out;
}

constexpr int64_t kLoadChunkFrames = 1 << 16;

}  // namespace

Audio load_audio(const std::string& path, const DecodeOptions& options) {
  AudioStreamReader reader(path, options, kLoadChunkFrames);
  return drain(reader);
}

Audio load_audio_from_memory(const void* data, size_t size, const DecodeOptions& options,
                             const std::string& name) {
  AudioStreamReader reader(data, size, options, kLoadChunkFrames, name);
  return drain(reader);
}

AudioInfo probe_audio(const std::string& path, const std::optional<RawPcmFormat>& raw) {
  auto decoder = detail::open_decoder(detail::Source{path}, raw);
  AudioInfo info = decoder->info();
  info.frames = 0;
  for (Audio block; decoder->read(block);) info.frames += block.frames;
  return info;
}

}  // namespace alto::audio
