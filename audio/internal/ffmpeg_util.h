#pragma once
// RAII handles and error text for the FFmpeg C API, shared by alto's FFmpeg-based code.

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libswresample/swresample.h>
}

#include <memory>
#include <string>

namespace alto::audio::detail {

struct FormatContextCloser {
  void operator()(AVFormatContext* c) const { avformat_close_input(&c); }
};
struct CodecContextCloser {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct PacketCloser {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct FrameCloser {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct SwrCloser {
  void operator()(SwrContext* s) const { swr_free(&s); }
};
struct IoContextCloser {
  void operator()(AVIOContext* io) const {
    av_freep(&io->buffer);
    avio_context_free(&io);
  }
};

using FormatContextPtr = std::unique_ptr<AVFormatContext, FormatContextCloser>;
using CodecContextPtr = std::unique_ptr<AVCodecContext, CodecContextCloser>;
using PacketPtr = std::unique_ptr<AVPacket, PacketCloser>;
using FramePtr = std::unique_ptr<AVFrame, FrameCloser>;
using SwrPtr = std::unique_ptr<SwrContext, SwrCloser>;
using IoContextPtr = std::unique_ptr<AVIOContext, IoContextCloser>;

/// av_err2str as a std::string.
std::string av_error_text(int code);

/// FFmpeg logs to stderr by default; alto reports through exceptions instead, so it lowers
/// FFmpeg's log level once, the first time alto opens anything with it.
void quiet_ffmpeg_logging();

}  // namespace alto::audio::detail
