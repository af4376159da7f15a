// FFmpeg back end: MP3, AAC/M4A, WebM/Opus, the audio track of MP4/MKV video, raw PCM, pipes.

#include <algorithm>
#include <cstring>
#include <deque>

extern "C" {
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
}

#include "alto/audio/internal/decoder.h"
#include "alto/audio/internal/ffmpeg_util.h"
#include "alto/core/error.h"

namespace alto::audio::detail {
namespace {

constexpr int kIoBufferSize = 1 << 16;
// Seeking lands this far before the requested offset so that codecs with overlapping frames
// (MP3, AAC, Opus) have warmed up by the first sample kept.
constexpr double kSeekPrerollSeconds = 0.5;

struct MemoryInput {
  const uint8_t* data;
  int64_t size;
  int64_t pos = 0;

  static int read(void* self, uint8_t* out, int count) {
    auto* m = static_cast<MemoryInput*>(self);
    int64_t n = std::min<int64_t>(count, m->size - m->pos);
    if (n <= 0) return AVERROR_EOF;
    std::memcpy(out, m->data + m->pos, static_cast<size_t>(n));
    m->pos += n;
    return static_cast<int>(n);
  }
  static int64_t seek(void* self, int64_t offset, int whence) {
    auto* m = static_cast<MemoryInput*>(self);
    if (whence == AVSEEK_SIZE) return m->size;
    int64_t base = (whence & ~AVSEEK_FORCE) == SEEK_CUR   ? m->pos
                   : (whence & ~AVSEEK_FORCE) == SEEK_END ? m->size
                                                          : 0;
    if (base + offset < 0 || base + offset > m->size) return AVERROR(EINVAL);
    m->pos = base + offset;
    return m->pos;
  }
};

class FfmpegDecoder final : public Decoder {
 public:
  FfmpegDecoder(const Source& source, const std::optional<RawPcmFormat>& raw) : name_(source.name) {
    quiet_ffmpeg_logging();
    open_input(source, raw);
    open_codec();
  }

  const AudioInfo& info() const override { return info_; }

  bool seek(int64_t frame) override {
    if (!format_->pb || !(format_->pb->seekable & AVIO_SEEKABLE_NORMAL)) return false;
    const AVRational sample_tb{1, info_.sample_rate};
    int64_t preroll = static_cast<int64_t>(kSeekPrerollSeconds * info_.sample_rate);
    int64_t target =
        av_rescale_q(std::max<int64_t>(0, frame - preroll), sample_tb, stream_->time_base) +
        start_pts_;
    if (avformat_seek_file(format_.get(), stream_->index, INT64_MIN, target, target, 0) < 0)
      return false;
    avcodec_flush_buffers(codec_.get());
    pending_.clear();
    draining_ = finished_ = false;
    skip_until_ = frame;
    position_known_ = false;
    return true;
  }

  bool read(Audio& block) override {
    while (true) {
      if (!pending_.empty()) {
        block = std::move(pending_.front());
        pending_.pop_front();
        return true;
      }
      if (finished_) return false;
      decode_more();
    }
  }

 private:
  void open_input(const Source& source, const std::optional<RawPcmFormat>& raw) {
    AVFormatContext* raw_ctx = avformat_alloc_context();
    ALTO_CHECK_AS(Error, raw_ctx != nullptr, "out of memory opening ", name_);
    std::string url = source.name == "-" ? "pipe:0" : source.name;
    if (source.in_memory()) {
      memory_ = std::make_unique<MemoryInput>(
          MemoryInput{source.data, static_cast<int64_t>(source.size)});
      auto* buffer = static_cast<uint8_t*>(av_malloc(kIoBufferSize));
      io_.reset(avio_alloc_context(buffer, kIoBufferSize, 0, memory_.get(), MemoryInput::read,
                                   nullptr, MemoryInput::seek));
      ALTO_CHECK_AS(Error, io_ != nullptr, "out of memory opening ", name_);
      raw_ctx->pb = io_.get();
      raw_ctx->flags |= AVFMT_FLAG_CUSTOM_IO;
      url.clear();
    }
    const AVInputFormat* input_format = nullptr;
    AVDictionary* options = nullptr;
    if (raw) {
      input_format = av_find_input_format(raw->sample_format.c_str());
      if (!input_format) avformat_free_context(raw_ctx);
      ALTO_CHECK(input_format != nullptr,
                 "DecodeOptions.raw.sample_format: FFmpeg has no raw "
                 "format \"",
                 raw->sample_format, "\" (try s16le, s24le, s32le, f32le, f64le, u8)");
      AVChannelLayout layout;
      av_channel_layout_default(&layout, raw->channels);
      char layout_name[64] = {0};
      av_channel_layout_describe(&layout, layout_name, sizeof(layout_name));
      av_dict_set_int(&options, "sample_rate", raw->sample_rate, 0);
      av_dict_set(&options, "ch_layout", layout_name, 0);
    }
    int rc = avformat_open_input(&raw_ctx, url.c_str(), input_format, &options);
    av_dict_free(&options);
    // On failure avformat_open_input has freed the context.
    ALTO_CHECK_AS(IoError, rc >= 0, name_, ": not a readable audio file (", av_error_text(rc), ")");
    format_.reset(raw_ctx);
    rc = avformat_find_stream_info(format_.get(), nullptr);
    ALTO_CHECK_AS(IoError, rc >= 0, name_, ": cannot read stream information (", av_error_text(rc),
                  ")");
    int index = av_find_best_stream(format_.get(), AVMEDIA_TYPE_AUDIO, -1, -1, nullptr, 0);
    ALTO_CHECK_AS(IoError, index >= 0, name_, ": no audio stream (", format_->iformat->name,
                  " container)");
    stream_ = format_->streams[index];
    start_pts_ = stream_->start_time == AV_NOPTS_VALUE ? 0 : stream_->start_time;
  }

  void open_codec() {
    const AVCodecParameters* par = stream_->codecpar;
    const AVCodec* codec = avcodec_find_decoder(par->codec_id);
    ALTO_CHECK_AS(Unsupported, codec != nullptr, name_, ": this FFmpeg has no decoder for ",
                  avcodec_get_name(par->codec_id));
    codec_.reset(avcodec_alloc_context3(codec));
    ALTO_CHECK_AS(Error, codec_ != nullptr, "out of memory opening ", name_);
    int rc = avcodec_parameters_to_context(codec_.get(), par);
    ALTO_CHECK_AS(IoError, rc >= 0, name_, ": bad codec parameters (", av_error_text(rc), ")");
    codec_->pkt_timebase = stream_->time_base;
    rc = avcodec_open2(codec_.get(), codec, nullptr);
    ALTO_CHECK_AS(IoError, rc >= 0, name_, ": cannot open the ", codec->name, " decoder (",
                  av_error_text(rc), ")");
    ALTO_CHECK_AS(IoError, codec_->sample_rate > 0 && codec_->ch_layout.nb_channels > 0, name_,
                  ": the ", codec->name, " stream declares no sample rate or channels");
    info_.path = name_;
    info_.container = format_->iformat->name;
    info_.codec = avcodec_get_name(par->codec_id);
    info_.sample_rate = codec_->sample_rate;
    info_.channels = codec_->ch_layout.nb_channels;
    info_.frames = stream_->duration != AV_NOPTS_VALUE
                       ? av_rescale_q(stream_->duration, stream_->time_base, {1, info_.sample_rate})
                       : -1;
    packet_.reset(av_packet_alloc());
    frame_.reset(av_frame_alloc());
    ALTO_CHECK_AS(Error, packet_ && frame_, "out of memory opening ", name_);
  }

  double seconds_at(int64_t pts) const {
    return pts == AV_NOPTS_VALUE ? 0.0 : (pts - start_pts_) * av_q2d(stream_->time_base);
  }

  // Feeds the decoder one packet (or the end of stream) and collects the frames it returns.
  void decode_more() {
    if (!draining_) {
      int rc = av_read_frame(format_.get(), packet_.get());
      if (rc == AVERROR_EOF) {
        draining_ = true;
        rc = avcodec_send_packet(codec_.get(), nullptr);
      } else {
        ALTO_CHECK_AS(IoError, rc >= 0, name_, ": read error (", av_error_text(rc), ")");
        if (packet_->stream_index != stream_->index) {
          av_packet_unref(packet_.get());
          return;
        }
        const int64_t pts = packet_->pts;
        rc = avcodec_send_packet(codec_.get(), packet_.get());
        av_packet_unref(packet_.get());
        ALTO_CHECK_AS(IoError, rc >= 0 || rc == AVERROR(EAGAIN), name_, ": corrupt ",
                      codec_->codec->name, " data at ", seconds_at(pts), " s (", av_error_text(rc),
                      ")");
      }
    }
    while (true) {
      int rc = avcodec_receive_frame(codec_.get(), frame_.get());
      if (rc == AVERROR(EAGAIN)) return;
      if (rc == AVERROR_EOF) {
        finished_ = true;
        return;
      }
      ALTO_CHECK_AS(IoError, rc >= 0, name_, ": corrupt ", codec_->codec->name, " data (",
                    av_error_text(rc), ")");
      convert_frame();
      av_frame_unref(frame_.get());
    }
  }

  void convert_frame() {
    ALTO_CHECK_AS(
        Unsupported,
        frame_->sample_rate == info_.sample_rate && frame_->ch_layout.nb_channels == info_.channels,
        name_, ": the stream changes from ", info_.sample_rate, " Hz, ", info_.channels,
        " channels to ", frame_->sample_rate, " Hz, ", frame_->ch_layout.nb_channels,
        " channels mid-stream");
    if (!converter_) {
      SwrContext* swr = nullptr;
      int rc = swr_alloc_set_opts2(
          &swr, &frame_->ch_layout, AV_SAMPLE_FMT_FLTP, frame_->sample_rate, &frame_->ch_layout,
          static_cast<AVSampleFormat>(frame_->format), frame_->sample_rate, 0, nullptr);
      converter_.reset(swr);
      ALTO_CHECK_AS(Error, rc >= 0 && swr_init(swr) >= 0, name_, ": cannot convert sample format ",
                    av_get_sample_fmt_name(static_cast<AVSampleFormat>(frame_->format)));
    }
    const int n = frame_->nb_samples;
    Audio block(info_.channels, n, info_.sample_rate);
    std::vector<uint8_t*> planes(info_.channels);
    for (int c = 0; c < info_.channels; ++c)
      planes[c] = reinterpret_cast<uint8_t*>(block.channel(c));
    int got = swr_convert(converter_.get(), planes.data(), n,
                          const_cast<const uint8_t**>(frame_->extended_data), n);
    ALTO_CHECK_AS(Error, got == n, name_, ": sample format conversion failed");

    // After a seek, the first frame's timestamp tells where decoding resumed; from there on
    // frames are counted, which is exact.
    if (!position_known_) {
      int64_t pts = frame_->best_effort_timestamp;
      position_ = pts == AV_NOPTS_VALUE
                      ? 0
                      : av_rescale_q(pts - start_pts_, stream_->time_base, {1, info_.sample_rate});
      position_known_ = true;
    }
    int64_t begin = position_;
    position_ += n;
    int64_t drop = std::clamp<int64_t>(skip_until_ - begin, 0, n);
    if (drop == n) return;
    pending_.push_back(drop > 0 ? block.slice(drop, n - drop) : std::move(block));
  }

  std::string name_;
  std::unique_ptr<MemoryInput> memory_;
  IoContextPtr io_;  // declared before format_ so that it is freed after it
  FormatContextPtr format_;
  AVStream* stream_ = nullptr;
  CodecContextPtr codec_;
  SwrPtr converter_;
  PacketPtr packet_;
  FramePtr frame_;
  AudioInfo info_;
  int64_t start_pts_ = 0;
  std::deque<Audio> pending_;
  bool draining_ = false;
  bool finished_ = false;
  bool position_known_ = true;
  int64_t position_ = 0;
  int64_t skip_until_ = 0;
};

}  // namespace

std::unique_ptr<Decoder> open_ffmpeg_decoder(const Source& source,
                                             const std::optional<RawPcmFormat>& raw) {
  return std::make_unique<FfmpegDecoder>(source, raw);
}

}  // namespace alto::audio::detail
