#pragma once
// --verbose: where a command's time and memory went, one line on stderr when it ends —
//   alto: start-up 0.18 s, load model 0.21 s, read audio 0.05 s, encode 1.20 s, write 0.01 s;
//   total 1.65 s; peak RSS 321 MB
// Start-up is the time from the process's start (the kernel's clock) to main(): loading
// libtorch and the other shared libraries.

#include <string>

namespace alto::cli {

/// Called first thing in main(): the clock the stages count from.
void start_stages();
/// Turns the report on (the --verbose flag).
void enable_stage_report();
/// Ends the current stage and begins `name`.
void stage(const std::string& name);
/// Prints the report to stderr when enabled, once.
void print_stage_report();

}  // namespace alto::cli
