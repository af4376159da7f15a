// Any byte string given to the in-memory decoder either decodes or raises alto::Error.

#include <cstddef>
#include <cstdint>

#include "alto/audio/load.h"
#include "alto/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  alto::audio::DecodeOptions options;
  options.mono = (size & 1) != 0;
  if (size & 2) options.sample_rate = 16000;
  try {
    alto::audio::load_audio_from_memory(data, size, options);
  } catch (const alto::Error&) {
  }
  return 0;
}
