#include "alto/audio/audio.h"

#include <algorithm>

#include "alto/core/error.h"

namespace alto::audio {

Audio::Audio(int channels, int64_t frames, int sample_rate)
    : channels(channels), frames(frames), sample_rate(sample_rate) {
  ALTO_CHECK(channels >= 0, "Audio.channels must be >= 0, got ", channels);
  ALTO_CHECK(frames >= 0, "Audio.frames must be >= 0, got ", frames);
  samples.assign(static_cast<size_t>(channels) * static_cast<size_t>(frames), 0.0f);
}

double Audio::duration_seconds() const {
  return sample_rate > 0 ? static_cast<double>(frames) / sample_rate : 0.0;
}

Audio Audio::slice(int64_t begin, int64_t count) const {
  ALTO_CHECK(begin >= 0 && count >= 0 && begin + count <= frames, "Audio.slice: frames [", begin,
             ", ", begin + count, ") are outside [0, ", frames, ")");
  Audio out(channels, count, sample_rate);
  for (int c = 0; c < channels; ++c) std::copy_n(channel(c) + begin, count, out.channel(c));
  return out;
}

void Audio::append(const Audio& tail) {
  ALTO_CHECK(tail.channels == channels && tail.sample_rate == sample_rate,
             "Audio.append: cannot append ", tail.channels, " channels at ", tail.sample_rate,
             " Hz to ", channels, " channels at ", sample_rate, " Hz");
  std::vector<float> joined(static_cast<size_t>(channels) * (frames + tail.frames));
  for (int c = 0; c < channels; ++c) {
    float* row = joined.data() + c * (frames + tail.frames);
    std::copy_n(channel(c), frames, row);
    std::copy_n(tail.channel(c), tail.frames, row + frames);
  }
  samples = std::move(joined);
  frames += tail.frames;
}

double AudioInfo::duration_seconds() const {
  return sample_rate > 0 ? static_cast<double>(frames) / sample_rate : 0.0;
}

}  // namespace alto::audio
