#include "inputs.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "alto/core/error.h"
#include "alto/core/text.h"
#include "console.h"

namespace alto::cli {

namespace fs = std::filesystem;

CLI::Option* Inputs::add_to(CLI::App* cmd, const std::string& files_help,
                            const std::string& output_help) {
  CLI::Option* option = cmd->add_option("inputs", files, files_help);
  cmd->add_option("--inputs-from", list,
                  "A file listing more inputs, one per line ('#' starts a comment)");
  if (!output_help.empty()) {
    cmd->add_option("-o,--output", output, output_help);
    cmd->add_option("--output-dir", output_dir,
                    "One output per input in this folder, named after the input");
  }
  return option;
}

std::vector<std::string> Inputs::all() const {
  std::vector<std::string> result = files;
  if (list.empty()) return result;
  std::ifstream in(list);
  ALTO_CHECK_AS(IoError, in.good(), "--inputs-from ", list, ": cannot read the file");
  for (std::string line; std::getline(in, line);) {
    const std::string path = strip(line);
    if (!path.empty() && path[0] != '#') result.push_back(path);
  }
  return result;
}

void Inputs::check_outputs(size_t count, const std::string& extension) const {
  ALTO_CHECK(output.empty() || output_dir.empty(), "give -o or --output-dir, not both");
  if (!output_dir.empty()) return;
  ALTO_CHECK(!output.empty(), "give -o OUT", extension, " or --output-dir DIR");
  ALTO_CHECK(count == 1, "-o names one output but there are ", count,
             " inputs: give --output-dir DIR for one output each");
}

std::string Inputs::output_for(const std::string& input, size_t count,
                               const std::string& extension) const {
  check_outputs(count, extension);
  if (output_dir.empty()) return output;
  std::error_code error;
  fs::create_directories(output_dir, error);
  ALTO_CHECK_AS(IoError, !error && fs::is_directory(output_dir), "--output-dir ", output_dir,
                ": cannot create the folder", error ? ": " + error.message() : "");
  const std::string name = input == "-" ? "stdin" : fs::path(input).stem().string();
  return (fs::path(output_dir) / (name + extension)).string();
}

void RawAudioInput::add_to(CLI::App* cmd, const std::string& prefix) {
  const std::string group = "Raw PCM input";
  flag_prefix = prefix;
  cmd->add_option("--" + prefix + "format", format,
                  "The input is headerless PCM in this sample format (s16le, s24le, s32le, f32le, "
                  "f64le, u8, s16be, ...); needs --rate and --channels")
      ->group(group);
  cmd->add_option("--" + prefix + "rate", rate, "Raw PCM input: sample rate in Hz")
      ->check(CLI::PositiveNumber)
      ->group(group);
  cmd->add_option("--" + prefix + "channels", channels, "Raw PCM input: channels")
      ->check(CLI::PositiveNumber)
      ->group(group);
}

void RawAudioInput::apply(audio::DecodeOptions& options) const {
  const std::string flag = "--" + flag_prefix;
  if (format.empty()) {
    ALTO_CHECK(rate == 0 && channels == 0, flag, "rate and ", flag,
               "channels describe raw PCM input: give ", flag, "format too");
    return;
  }
  ALTO_CHECK(rate > 0 && channels > 0, flag, "format ", format, " (raw PCM) needs ", flag,
             "rate R and ", flag, "channels C");
  options.raw = audio::RawPcmFormat{format, rate, channels};
}

BatchOutcome for_each_input(const std::vector<std::string>& inputs,
                            const std::function<void(const std::string&)>& each) {
  ALTO_CHECK(!inputs.empty(), "give at least one input");
  std::vector<double> bytes;
  double total = 0;
  for (const auto& input : inputs) {
    std::error_code error;
    const auto size = input == "-" ? 0 : fs::file_size(input, error);
    bytes.push_back(error ? 0.0 : static_cast<double>(size));
    total += bytes.back();
  }
  std::unique_ptr<ProgressBar> bar;
  if (inputs.size() > 1) bar = std::make_unique<ProgressBar>("", total, "B");
  size_t failed = 0;
  double done = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    try {
      each(inputs[i]);
    } catch (const std::exception& e) {
      if (bar) bar->clear();
      std::cerr << "alto: " << error_line(e, inputs[i]) << std::endl;
      ++failed;
    }
    done += bytes[i];
    if (bar) {
      bar->set_label(std::to_string(i + 1) + "/" + std::to_string(inputs.size()) + " inputs");
      bar->update(done);
    }
  }
  bar.reset();
  if (failed > 0 && inputs.size() > 1)
    std::cerr << "alto: " << failed << " of " << inputs.size() << " inputs failed" << std::endl;
  return BatchOutcome{failed};
}

}  // namespace alto::cli
