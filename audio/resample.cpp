#include "alto/audio/resample.h"

#include <algorithm>
#include <cstring>

extern "C" {
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
}

#include "alto/audio/internal/ffmpeg_util.h"
#include "alto/core/error.h"

namespace alto::audio {

std::string to_string(ResamplerEngine engine) {
  return engine == ResamplerEngine::kSoxr ? "soxr" : "swr";
}

std::string ResamplerOptions::to_string() const {
  return alto::detail::concat("ResamplerOptions(input_rate=", input_rate,
                              ", output_rate=", output_rate, ", channels=", channels,
                              ", engine=", audio::to_string(engine), ", max_ratio=", max_ratio,
                              ")");
}

struct Resampler::Impl {
  detail::SwrPtr swr;  // null when the rates are equal: then audio passes through unchanged
};

namespace {

void set_option(SwrContext* swr, const char* name, int64_t value) {
  int rc = av_opt_set_int(swr, name, value, 0);
  ALTO_CHECK_AS(Unsupported, rc >= 0, "libswresample rejects ", name, "=", value, ": ",
                detail::av_error_text(rc));
}

detail::SwrPtr make_swr(const ResamplerOptions& o) {
  detail::quiet_ffmpeg_logging();
  detail::SwrPtr swr(swr_alloc());
  ALTO_CHECK_AS(Error, swr != nullptr, "out of memory allocating a resampler");
  // Channels pass through untouched: an unspecified layout of N channels on both sides
  // means no matrixing, only rate conversion.
  AVChannelLayout layout;
  av_channel_layout_default(&layout, o.channels);
  av_opt_set_chlayout(swr.get(), "in_chlayout", &layout, 0);
  av_opt_set_chlayout(swr.get(), "out_chlayout", &layout, 0);
  av_channel_layout_uninit(&layout);
  set_option(swr.get(), "in_sample_rate", o.input_rate);
  set_option(swr.get(), "out_sample_rate", o.output_rate);
  av_opt_set_sample_fmt(swr.get(), "in_sample_fmt", AV_SAMPLE_FMT_FLTP, 0);
  av_opt_set_sample_fmt(swr.get(), "out_sample_fmt", AV_SAMPLE_FMT_FLTP, 0);
  if (o.engine == ResamplerEngine::kSoxr) {
    set_option(swr.get(), "resampler", SWR_ENGINE_SOXR);
  } else {
    // ffmpeg's defaults (32 taps, cutoff 0.97, beta 9) let a tone just above the new Nyquist
    // through at -62 dB; a longer, steeper Kaiser filter keeps it below -100 dB.
    set_option(swr.get(), "filter_size", 128);
    set_option(swr.get(), "phase_shift", 12);
    av_opt_set_double(swr.get(), "cutoff", 0.93, 0);
    av_opt_set_double(swr.get(), "kaiser_beta", 14.0, 0);
  }
  int rc = swr_init(swr.get());
  ALTO_CHECK_AS(Unsupported, rc >= 0, "cannot initialise the ", audio::to_string(o.engine),
                " resampler for ", o.to_string(), ": ", detail::av_error_text(rc),
                o.engine == ResamplerEngine::kSoxr
                    ? " (this FFmpeg was built without libsoxr; use ResamplerEngine::kSwr)"
                    : "");
  return swr;
}

}  // namespace

Resampler::Resampler(const ResamplerOptions& options)
    : options_(options), impl_(std::make_unique<Impl>()) {
  ALTO_CHECK(options.input_rate > 0, "ResamplerOptions.input_rate must be > 0, got ",
             options.input_rate);
  ALTO_CHECK(options.output_rate > 0, "ResamplerOptions.output_rate must be > 0, got ",
             options.output_rate);
  ALTO_CHECK(options.channels > 0, "ResamplerOptions.channels must be > 0, got ", options.channels);
  ALTO_CHECK(options.max_ratio >= 1, "ResamplerOptions.max_ratio must be >= 1, got ",
             options.max_ratio);
  const double ratio = static_cast<double>(std::max(options.input_rate, options.output_rate)) /
                       std::min(options.input_rate, options.output_rate);
  ALTO_CHECK(ratio <= options.max_ratio, "resampling ", options.input_rate, " Hz audio to ",
             options.output_rate, " Hz changes its length ", ratio,
             " times, beyond ResamplerOptions.max_ratio (", options.max_ratio, "): a rate of ",
             options.input_rate, " Hz is unlikely to be the audio's own");
  if (options.input_rate != options.output_rate) impl_->swr = make_swr(options);
}

Resampler::~Resampler() = default;
Resampler::Resampler(Resampler&&) noexcept = default;
Resampler& Resampler::operator=(Resampler&&) noexcept = default;

namespace {

// Runs one swr_convert call (chunk == nullptr flushes) into a fresh Audio.
Audio convert(SwrContext* swr, const ResamplerOptions& o, const Audio* chunk) {
  const int64_t in_frames = chunk ? chunk->frames : 0;
  const int capacity = swr_get_out_samples(swr, static_cast<int>(in_frames));
  ALTO_CHECK_AS(Error, capacity >= 0, "resampler failed: ", detail::av_error_text(capacity));
  Audio out(o.channels, capacity, o.output_rate);
  std::vector<uint8_t*> out_planes(o.channels);
  std::vector<const uint8_t*> in_planes(o.channels);
  for (int c = 0; c < o.channels; ++c) {
    out_planes[c] = reinterpret_cast<uint8_t*>(out.channel(c));
    if (chunk) in_planes[c] = reinterpret_cast<const uint8_t*>(chunk->channel(c));
  }
  int got = swr_convert(swr, out_planes.data(), capacity, chunk ? in_planes.data() : nullptr,
                        static_cast<int>(in_frames));
  ALTO_CHECK_AS(Error, got >= 0, "resampler failed: ", detail::av_error_text(got));
  if (got < capacity) {
    // Rows are contiguous: compact them to the frames actually produced.
    for (int c = 1; c < o.channels; ++c)
      std::memmove(out.samples.data() + c * got, out.channel(c), got * sizeof(float));
    out.samples.resize(static_cast<size_t>(o.channels) * got);
    out.frames = got;
  }
  return out;
}

}  // namespace

Audio Resampler::process(const Audio& chunk) {
  ALTO_CHECK(chunk.channels == options_.channels, "Resampler.process: chunk has ", chunk.channels,
             " channels, the resampler was built for ", options_.channels);
  ALTO_CHECK(chunk.sample_rate == options_.input_rate, "Resampler.process: chunk is at ",
             chunk.sample_rate, " Hz, the resampler was built for ", options_.input_rate, " Hz");
  if (!impl_->swr) return chunk;
  return convert(impl_->swr.get(), options_, &chunk);
}

Audio Resampler::flush() {
  if (!impl_->swr) return Audio(options_.channels, 0, options_.output_rate);
  Audio tail(options_.channels, 0, options_.output_rate);
  // swr hands the tail out in pieces; drain it, then re-arm for a new stream.
  for (Audio piece; (piece = convert(impl_->swr.get(), options_, nullptr)).frames > 0;)
    tail.append(piece);
  impl_->swr = make_swr(options_);
  return tail;
}

Audio resample(const Audio& audio, int output_rate, ResamplerEngine engine) {
  Resampler resampler({audio.sample_rate, output_rate, audio.channels, engine});
  Audio out = resampler.process(audio);
  out.append(resampler.flush());
  return out;
}

}  // namespace alto::audio
