#include <torch/cuda.h>
#include <torch/version.h>

#include "alto/core/system_info.h"

namespace alto {

std::string version() { return ALTO_VERSION; }

std::string torch_version() {
  std::string text = TORCH_VERSION;
  if (!torch::cuda::is_available()) return text + " (CPU)";
  const size_t devices = torch::cuda::device_count();
  return text + " (CUDA, " + std::to_string(devices) + (devices == 1 ? " device)" : " devices)");
}

}  // namespace alto
