// alto convert IN OUT [--sample-rate N] [--mono] [--format wav|flac] [--bits 16|24|32f]

#include <iostream>
#include <optional>
#include <string>

#include "alto/audio/load.h"
#include "alto/audio/save.h"
#include "commands.h"

namespace alto::cli {

namespace {
struct ConvertArgs {
  std::string input, output;
  std::optional<int> sample_rate;
  bool mono = false;
  std::string format;  // empty: from OUT's extension
  std::string bits = "16";
};
}  // namespace

void add_convert_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("convert", "Decode any audio and write WAV or FLAC");
  auto args = std::make_shared<ConvertArgs>();
  cmd->add_option("input", args->input, "Input file ('-' is standard input)")->required();
  cmd->add_option("output", args->output, "Output file")->required();
  cmd->add_option("--sample-rate", args->sample_rate, "Resample to N Hz (soxr)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--mono", args->mono, "Downmix to mono (mean of the channels)");
  cmd->add_option("--format", args->format, "wav or flac (default: from OUT's extension)")
      ->check(CLI::IsMember({"wav", "flac"}));
  cmd->add_option("--bits", args->bits, "16, 24 or 32f (32-bit float, WAV only)")
      ->check(CLI::IsMember({"16", "24", "32f"}));
  cmd->callback([args] {
    audio::DecodeOptions options;
    options.sample_rate = args->sample_rate;
    options.mono = args->mono;
    audio::Audio audio = audio::load_audio(args->input, options);
    audio::SaveFormat format = audio::SaveFormat::for_path(args->output);
    if (!args->format.empty()) format.file = audio::parse_file_format(args->format);
    format.encoding = audio::parse_sample_encoding(args->bits);
    audio::save_audio(args->output, audio, format);
  });
}

}  // namespace alto::cli
