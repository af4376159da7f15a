#include "alto/core/error.h"

#include <cstdio>
#include <cstdlib>
#include <new>

namespace alto {

std::optional<OutOfMemory> as_out_of_memory(const std::exception& error) {
  if (dynamic_cast<const Error*>(&error)) return std::nullopt;
  const std::string advice =
      ": the input is too long, or a size in the model's config too large, for this machine";
  if (dynamic_cast<const std::bad_alloc*>(&error))
    return OutOfMemory("out of memory (an allocation failed)" + advice);
  const std::string text = error.what();
  // libtorch's CPU allocator: "... DefaultCPUAllocator: not enough memory: you tried to
  // allocate 256000000000000 bytes."
  const std::string cpu = "you tried to allocate ";
  if (const size_t at = text.find(cpu); at != std::string::npos) {
    const double bytes = std::strtod(text.c_str() + at + cpu.size(), nullptr);
    char size[32];
    std::snprintf(size, sizeof size, "%.3g GB", bytes / 1e9);
    return OutOfMemory("out of memory: " + std::string(size) + " asked for at once" + advice);
  }
  // libtorch's CUDA allocator: "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; ...".
  if (const size_t at = text.find("CUDA out of memory."); at != std::string::npos)
    return OutOfMemory(text.substr(at, text.find('\n', at) - at));
  return std::nullopt;
}

}  // namespace alto
