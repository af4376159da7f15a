#pragma once
// What every command shows on the terminal: one-line errors, clock times, progress bars.

#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

namespace alto::cli {

/// --verbose: full texts of internal errors.
void set_verbose(bool verbose);

/// One line for `e` — "error: ..." for alto's own errors, "internal error: ..." with the first
/// line of another library's text (libtorch's go on with a backtrace; all of it with --verbose)
/// — naming `input` when the message does not already start with it.
std::string error_line(const std::exception& e, const std::string& input = "");

/// mm:ss.fff, or hh:mm:ss.fff past an hour or when `always_hours` (SubRip); `decimal` is ',' for
/// SubRip and '.' otherwise.
std::string clock_text(double seconds, char decimal = '.', bool always_hours = false);

/// A live run's word latencies behind the audio, and its one line on stderr:
///   INPUT: 12.0 s of audio[ in N passes], real-time factor 0.310 (paced), word latency behind
///   the audio mean 0.52 s, max 1.10 s
class LiveReport {
 public:
  void add_latency(double seconds) { latencies_.push_back(seconds); }
  double mean_latency() const;
  double max_latency() const;
  /// `passes` < 0 leaves the passes out.
  void print(const std::string& input, double audio_seconds, double real_time_factor, bool paced,
             int64_t passes = -1) const;

 private:
  std::vector<double> latencies_;
};

/// A progress bar on stderr — done / total, rate and time left — drawn only when stderr is a
/// terminal, at most ten times a second.
class ProgressBar {
 public:
  /// `unit` names what is counted: "s" (audio seconds) or "B" (bytes, shown in MB).
  ProgressBar(std::string label, double total, std::string unit);
  ~ProgressBar();  // ends the line
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void update(double done);
  void set_label(std::string label);
  /// Erases the bar so that a message can take its line; the next update draws it again.
  void clear();

 private:
  void draw();

  std::string label_, unit_;
  double total_, done_ = 0;
  bool enabled_, drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace alto::cli
