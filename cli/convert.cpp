// alto convert IN OUT [--sample-rate N] [--mono] [--format wav|flac|raw] [--bits 16|24|32f]
// alto convert IN... --output-dir DIR [...]
// OUT "-" is standard output; raw PCM input is described by --input-format/-rate/-channels
// (--format names the output here).

#include <iostream>
#include <optional>
#include <string>

#include "alto/audio/load.h"
#include "alto/audio/save.h"
#include "alto/core/error.h"
#include "commands.h"
#include "inputs.h"

namespace alto::cli {

namespace {
struct ConvertArgs {
  Inputs inputs;
  RawAudioInput raw;
  std::optional<int> sample_rate;
  bool mono = false;
  std::string format;  // empty: from OUT's extension
  std::string bits = "16";
};

void run_convert(ConvertArgs a) {
  std::vector<std::string> files = a.inputs.all();
  if (a.inputs.output_dir.empty()) {
    ALTO_CHECK(files.size() == 2, "alto convert IN OUT converts one file (", files.size(),
               " paths given); give --output-dir DIR for several");
    a.inputs.output = files.back();
    files.pop_back();
  }
  audio::DecodeOptions options;
  options.sample_rate = a.sample_rate;
  options.mono = a.mono;
  a.raw.apply(options);
  const std::string extension = "." + (a.format.empty() ? std::string("wav") : a.format);
  a.inputs.check_outputs(files.size(), extension);
  for_each_input(files, [&](const std::string& input) {
    const std::string output = a.inputs.output_for(input, files.size(), extension);
    audio::SaveFormat format = audio::SaveFormat::for_path(output);
    if (!a.format.empty()) format.file = audio::parse_file_format(a.format);
    format.encoding = audio::parse_sample_encoding(a.bits);
    audio::save_audio(output, audio::load_audio(input, options), format);
  }).throw_if_failed();
}
}  // namespace

void add_convert_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("convert", "Decode any audio and write WAV, FLAC or raw PCM");
  auto args = std::make_shared<ConvertArgs>();
  args->inputs
      .add_to(cmd,
              "IN OUT: input ('-' is standard input) and output ('-' is standard output); "
              "with --output-dir, only inputs")
      ->required();
  cmd->add_option("--output-dir", args->inputs.output_dir,
                  "Convert every input into this folder, named after the input");
  args->raw.add_to(cmd, "input-");
  cmd->add_option("--sample-rate", args->sample_rate, "Resample to N Hz (soxr)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--mono", args->mono, "Downmix to mono (mean of the channels)");
  cmd->add_option("--format", args->format,
                  "wav, flac or raw (headerless little-endian; default: from OUT's extension)")
      ->check(CLI::IsMember({"wav", "flac", "raw"}));
  cmd->add_option("--bits", args->bits, "16, 24 or 32f (32-bit float, WAV and raw)")
      ->check(CLI::IsMember({"16", "24", "32f"}));
  cmd->callback([args] { run_convert(*args); });
}

}  // namespace alto::cli
