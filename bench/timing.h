#pragma once
// What the C++ benchmark drivers share: a steady clock in milliseconds, the median of samples
// and the process's resident memory.

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "alto/core/system_info.h"

namespace alto::bench {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// This process's resident memory now and its peak, kB (alto::memory_info()).
inline long resident_kb() { return memory_info().resident_kb; }
inline long peak_resident_kb() { return memory_info().peak_resident_kb; }

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace alto::bench
