// libFuzzer harness over the safetensors parsers, which read every checkpoint, codes file and
// features file alto is given. The first byte picks what the rest is:
//   0: a whole .safetensors file (length, JSON header, data) — the header is parsed and every
//      tensor's byte range checked against the data section;
//   1: a sharded checkpoint's model.safetensors.index.json.
// Every outcome must be a result or an alto::Error: no crash, hang, leak or undefined behaviour.

#include <cstdint>
#include <string>

#include "alto/core/error.h"
#include "alto/core/safetensors_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  try {
    if (data[0] % 2 == 0) {
      const alto::SafetensorsHeader header =
          alto::parse_safetensors_header(data + 1, size - 1, "fuzz.safetensors");
      const uint64_t data_bytes = size - 1 - header.data_start;
      for (const auto& t : header.tensors)
        if (t.begin > t.end || t.end > data_bytes) __builtin_trap();  // the parser's promise
    } else {
      alto::parse_safetensors_index(std::string(reinterpret_cast<const char*>(data) + 1, size - 1),
                                    "fuzz.index.json");
    }
  } catch (const alto::Error&) {
  }
  return 0;
}
