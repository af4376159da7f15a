#include "alto/audio/versions.h"

#include <sndfile.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libswresample/swresample.h>
}

namespace alto::audio {

namespace {

std::string dotted(unsigned version) {
  return std::to_string(AV_VERSION_MAJOR(version)) + "." + std::to_string(AV_VERSION_MINOR(version)) +
         "." + std::to_string(AV_VERSION_MICRO(version));
}

}  // namespace

std::string library_versions() {
  return std::string("FFmpeg ") + av_version_info() + " (libavformat " +
         dotted(avformat_version()) + ", libavcodec " + dotted(avcodec_version()) +
         ", libswresample " + dotted(swresample_version()) + "); " + sf_version_string();
}

}  // namespace alto::audio
