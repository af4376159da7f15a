# Source lists, shared with the separately built fuzzers (tests/fuzz).

# The audio layer does not use libtorch, so it builds without the torch precompiled header.
set(ALTO_AUDIO_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/../audio/audio.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../audio/load.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../audio/resample.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../audio/save.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../audio/stream_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../audio/internal/ffmpeg_decoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../audio/internal/ffmpeg_util.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../audio/internal/sndfile_decoder.cpp)

set(ALTO_TORCH_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/../core/audio_tensor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../core/threading.cpp)
