#pragma once
// What the C++ benchmark drivers share: a steady clock in milliseconds, the median of samples
// and the process's resident memory.

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

namespace alto::bench {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// VmRSS, kB.
inline long resident_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

/// The most resident memory this program has had (VmHWM), kB. Not getrusage's ru_maxrss, which
/// Linux carries over an exec: a program started from a large process reports that one's peak.
inline long peak_resident_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace alto::bench
