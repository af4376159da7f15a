#pragma once
// The audio libraries alto decodes and resamples with, as loaded at run time.

#include <string>

namespace alto::audio {

/// "FFmpeg 5.1.6 (libavformat 59.27.100, libavcodec 59.37.100, libswresample 4.7.100);
/// libsndfile-1.2.0".
std::string library_versions();

}  // namespace alto::audio
