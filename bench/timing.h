#pragma once
// What the C++ benchmark drivers share: a steady clock in milliseconds and the median of samples.

#include <algorithm>
#include <chrono>
#include <vector>

namespace alto::bench {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace alto::bench
