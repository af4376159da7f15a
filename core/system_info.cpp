#include "alto/core/system_info.h"

#include <fstream>
#include <string>

namespace alto {

MemoryInfo memory_info() {
  MemoryInfo info;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) info.resident_kb = std::stol(line.substr(6));
    if (line.rfind("VmHWM:", 0) == 0) info.peak_resident_kb = std::stol(line.substr(6));
  }
  return info;
}

}  // namespace alto
