#include "console.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "alto/core/error.h"

namespace alto::cli {

namespace {
bool verbose_output = false;
}  // namespace

void set_verbose(bool verbose) { verbose_output = verbose; }

std::string error_line(const std::exception& e, const std::string& input) {
  if (const std::optional<OutOfMemory> translated = as_out_of_memory(e))
    return error_line(*translated, input);
  std::string text = e.what();
  const bool ours = dynamic_cast<const Error*>(&e) != nullptr;
  if (!ours && !verbose_output) {
    const size_t end = text.find('\n');
    if (end != std::string::npos) text = text.substr(0, end) + " (--verbose prints the full text)";
  }
  if (!input.empty() && text.compare(0, input.size(), input) != 0) text = input + ": " + text;
  return (ours ? "error: " : "internal error: ") + text;
}

std::string clock_text(double seconds, char decimal, bool always_hours) {
  const long long ms = std::llround(std::max(0.0, seconds) * 1000.0);
  const long long h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60, f = ms % 1000;
  char buffer[48];
  if (always_hours || h > 0)
    std::snprintf(buffer, sizeof buffer, "%02lld:%02lld:%02lld%c%03lld", h, m, s, decimal, f);
  else
    std::snprintf(buffer, sizeof buffer, "%02lld:%02lld%c%03lld", m, s, decimal, f);
  return buffer;
}

double LiveReport::mean_latency() const {
  double sum = 0;
  for (double l : latencies_) sum += l;
  return latencies_.empty() ? 0 : sum / static_cast<double>(latencies_.size());
}

double LiveReport::max_latency() const {
  double worst = 0;  // latencies reported are never below zero
  for (double l : latencies_) worst = std::max(worst, l);
  return worst;
}

void LiveReport::print(const std::string& input, double audio_seconds, double real_time_factor,
                       bool paced, int64_t passes) const {
  const std::string in_passes = passes < 0 ? "" : " in " + std::to_string(passes) + " passes";
  std::fprintf(stderr,
               "%s: %.1f s of audio%s, real-time factor %.3f (%s), word latency behind the "
               "audio mean %.2f s, max %.2f s\n",
               input.c_str(), audio_seconds, in_passes.c_str(), real_time_factor,
               paced ? "paced" : "unpaced", mean_latency(), max_latency());
}

ProgressBar::ProgressBar(std::string label, double total, std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      enabled_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() {
  if (!enabled_ || !drawn_) return;
  draw();
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

void ProgressBar::clear() {
  if (!enabled_ || !drawn_) return;
  std::fputs("\r\033[K", stderr);
  drawn_ = false;
}

void ProgressBar::set_label(std::string label) { label_ = std::move(label); }

void ProgressBar::update(double done) {
  done_ = done;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100) && done < total_) return;
  last_draw_ = now;
  draw();
}

void ProgressBar::draw() {
  drawn_ = true;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double scale = unit_ == "B" ? 1e-6 : 1.0;
  const char* shown = unit_ == "B" ? "MB" : unit_.c_str();
  const double fraction = total_ > 0 ? std::min(1.0, done_ / total_) : 1.0;
  const int width = 24, filled = static_cast<int>(width * fraction);
  const double rate = elapsed > 0 ? done_ / elapsed : 0;
  std::string left = "--:--";
  if (rate > 0 && done_ < total_) left = clock_text((total_ - done_) / rate).substr(0, 5);
  std::fprintf(stderr, "\r%s [%s%s] %.1f/%.1f %s, %.1f %s/s, %s left \033[K", label_.c_str(),
               std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
               done_ * scale, total_ * scale, shown, rate * scale, shown,
               done_ < total_ ? left.c_str() : "00:00");
  std::fflush(stderr);
}

}  // namespace alto::cli
