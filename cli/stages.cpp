#include "stages.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>
#include <vector>

#include "alto/core/system_info.h"

namespace alto::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct Stages {
  bool enabled = false, printed = false;
  double start_up = -1;  // seconds from the process's start to main(); < 0 when unknown
  Clock::time_point main_entry, current_start;
  std::string current;
  std::vector<std::pair<std::string, double>> done;

  void close_current() {
    if (current.empty()) return;
    const double seconds = std::chrono::duration<double>(Clock::now() - current_start).count();
    // A batch repeats its stages: each name sums over the inputs, in order of first use.
    auto same =
        std::find_if(done.begin(), done.end(), [&](const auto& d) { return d.first == current; });
    if (same == done.end())
      done.emplace_back(current, seconds);
    else
      same->second += seconds;
    current.clear();
  }
};

Stages& stages() {
  static Stages s;
  return s;
}

// Seconds since this process started: /proc/self/stat's starttime (field 22, clock ticks since
// boot) against /proc/uptime.
double seconds_since_process_start() {
  std::ifstream stat("/proc/self/stat"), uptime_file("/proc/uptime");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  double uptime = 0;
  if (!(uptime_file >> uptime)) return -1;
  // Fields after the command name, which is in parentheses and may hold spaces.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) {
      const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
      return ticks > 0 ? uptime - std::stod(field) / ticks : -1;
    }
  return -1;
}

}  // namespace

void start_stages() {
  Stages& s = stages();
  s.main_entry = Clock::now();
  s.start_up = seconds_since_process_start();
}

void enable_stage_report() { stages().enabled = true; }

void stage(const std::string& name) {
  Stages& s = stages();
  s.close_current();
  s.current = name;
  s.current_start = Clock::now();
}

void print_stage_report() {
  Stages& s = stages();
  if (!s.enabled || s.printed) return;
  s.printed = true;
  s.close_current();
  std::string line = "alto:";
  char buffer[96];
  double total = std::chrono::duration<double>(Clock::now() - s.main_entry).count();
  if (s.start_up >= 0) {
    std::snprintf(buffer, sizeof buffer, " start-up %.2f s,", s.start_up);
    line += buffer;
    total += s.start_up;
  }
  for (const auto& [name, seconds] : s.done) {
    std::snprintf(buffer, sizeof buffer, " %s %.2f s,", name.c_str(), seconds);
    line += buffer;
  }
  if (line.back() == ',') line.pop_back();
  std::snprintf(buffer, sizeof buffer, "; total %.2f s; peak RSS %.0f MB", total,
                static_cast<double>(memory_info().peak_resident_kb) * 1024 / 1e6);
  line += buffer;
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace alto::cli
