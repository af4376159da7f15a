#pragma once
// Inputs of the commands that read files: many per call, read from a list, standard input as
// "-" (a container FFmpeg detects, or raw PCM described by --format/--rate/--channels), one
// output each under --output-dir; a failing input is reported in one line and the batch goes on.

#include <CLI/CLI.hpp>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "alto/audio/load.h"

namespace alto::cli {

/// Thrown once a batch has finished with failures already reported: the command exits 1 with
/// nothing more to say.
struct InputsFailed : std::exception {
  const char* what() const noexcept override { return "some inputs failed"; }
};

struct Inputs {
  std::vector<std::string> files;
  std::string list;        // --inputs-from: one path per line
  std::string output;      // -o: the output of a single input ("-": standard output)
  std::string output_dir;  // --output-dir: one output per input

  /// The positional files (their option is returned, `files_help` describes them), and
  /// --inputs-from; --output-dir and -o when `output_help` is given (describing -o).
  CLI::Option* add_to(CLI::App* cmd, const std::string& files_help,
                      const std::string& output_help = "");
  /// The files, then the lines of --inputs-from (blank lines and lines from '#' skipped).
  std::vector<std::string> all() const;
  /// Whether -o or --output-dir can take `count` outputs: alto::InvalidArgument before any
  /// input is read when neither fits.
  void check_outputs(size_t count, const std::string& extension) const;
  /// Where `input`'s output goes: -o for a single input, else --output-dir/NAME`extension` with
  /// NAME the input's file name without its extension ("stdin" for "-").
  std::string output_for(const std::string& input, size_t count,
                         const std::string& extension) const;
};

/// Raw PCM input: --format s16le|f32le|... --rate R --channels C.
struct RawAudioInput {
  std::string format;
  int rate = 0, channels = 0;
  std::string flag_prefix;  // set by add_to, for messages

  /// --format, --rate, --channels, each after `prefix` ("input-" where --format names the output).
  void add_to(CLI::App* cmd, const std::string& prefix = "");
  /// Sets options.raw when --format is given (alto::InvalidArgument without --rate/--channels).
  void apply(audio::DecodeOptions& options) const;
};

/// How a batch went; throw_if_failed() ends the command with status 1 once the good inputs'
/// results are out.
struct BatchOutcome {
  size_t failed = 0;
  void throw_if_failed() const {
    if (failed > 0) throw InputsFailed();
  }
};

/// Runs `each` on every input in order. A failure prints "alto: error: INPUT: ..." and the rest
/// still run; several inputs show a progress bar (inputs and bytes) on a terminal, and a summary
/// line when any failed.
BatchOutcome for_each_input(const std::vector<std::string>& inputs,
                            const std::function<void(const std::string&)>& each);

}  // namespace alto::cli
