// alto features IN... -o OUT.safetensors|--output-dir DIR (--extractor NAME [--OPTION VALUE]... |
//                --config JSON)
// The extractors and their option flags come from the features registry: every field of every
// registered extractor is a flag (`sample_frequency` -> --sample-frequency, plus its aliases).

#include <torch/torch.h>

#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/core/error.h"
#include "alto/core/safetensors.h"
#include "alto/features/feature_extractor.h"
#include "commands.h"
#include "inputs.h"
#include "stages.h"

namespace alto::cli {

namespace {

using namespace alto::features;

struct FeaturesArgs {
  Inputs inputs;
  RawAudioInput raw;
  std::string extractor, config;
  bool resample = false;
  double waveform_scale = 1.0;
  bool no_pad = false;
  /// Each option flag (without "--") and the text the command line gave it last ("" for a
  /// flag given without a value), filled by read_command_line.
  std::map<std::string, CLI::Option*> option_flags;
  std::map<std::string, std::string> given;
};

bool is_bool_text(const std::string& text) {
  return text.empty() || text == "true" || text == "false" || text == "1" || text == "0";
}

/// The inputs and flag values in command-line order. An extractor option may be given without a
/// value (`--use-energy`), so CLI11 lets it take the next word: a word that is no boolean goes
/// back to the inputs, in its place, and the flag reads as given alone.
void read_command_line(const CLI::App& cmd, const CLI::Option* inputs_option, FeaturesArgs& a) {
  std::map<const CLI::Option*, std::string> flag_of_option;
  for (const auto& [flag, option] : a.option_flags) flag_of_option[option] = flag;
  std::map<const CLI::Option*, size_t> seen;
  std::vector<std::string> inputs;
  for (const CLI::Option* option : cmd.parse_order()) {
    const size_t k = seen[option]++;
    if (option == inputs_option) {
      inputs.push_back(a.inputs.files.at(k));
      continue;
    }
    auto flag = flag_of_option.find(option);
    if (flag == flag_of_option.end()) continue;
    std::string text = option->results().at(k);
    if (option->get_expected_min() == 0 && !is_bool_text(text) && text[0] != '-' &&
        std::ifstream(text).good()) {
      inputs.push_back(text);  // an input file taken as a flag's value
      text.clear();
    }
    a.given[flag->second] = text;
  }
  a.inputs.files = inputs;
}

std::string flag_of(const std::string& field_name) {
  std::string flag = field_name;
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

std::shared_ptr<const FeatureExtractor> make_extractor(const FeaturesArgs& a) {
  if (!a.config.empty()) return FeatureExtractor::from_pretrained(a.config);
  const FeatureExtractorEntry& entry = feature_extractors().at(a.extractor, "--extractor");
  return entry.create(option_values_from_text(entry, a.given));
}

void run_features(const FeaturesArgs& a) {
  ALTO_CHECK(a.extractor.empty() != a.config.empty(),
             "give exactly one of --extractor and --config");
  const std::vector<std::string> inputs = a.inputs.all();
  ALTO_CHECK(!inputs.empty(), "alto features: give at least one input file");
  ALTO_CHECK(a.inputs.output.empty() || a.inputs.output_dir.empty(),
             "give -o or --output-dir, not both");
  stage("build extractor");
  const auto extractor = make_extractor(a);
  audio::DecodeOptions load;
  load.mono = true;  // the extractors take mono audio: channels are averaged
  if (a.resample) load.sample_rate = extractor->sampling_rate();
  a.raw.apply(load);
  auto read = [&](const std::string& input) {
    stage("read audio");
    const audio::Audio audio = audio::load_audio(input, load);
    try {
      extractor->check_sampling_rate(audio.sample_rate);
    } catch (const Error& e) {
      throw InvalidArgument(input + ": " + e.what());
    }
    torch::Tensor wave = audio::to_tensor(audio)[0];
    return a.waveform_scale != 1.0 ? wave * a.waveform_scale : wave;
  };
  auto padding_for = [&](size_t clips) {
    PaddingOptions padding;
    // Where the extractor has an attention mask, it is written.
    if (extractor->name() == "whisper" || extractor->name() == "seamless-m4t" ||
        extractor->name() == "wav2vec2")
      padding.return_attention_mask = true;
    if (extractor->name() == "whisper" && a.no_pad) {
      padding.padding = PaddingOptions::Strategy::kLongest;
      padding.truncation = false;
    }
    if (extractor->name() == "wav2vec2" && clips > 1)
      padding.padding = PaddingOptions::Strategy::kLongest;
    return padding;
  };
  auto write = [&](const std::string& output, const BatchFeature& out,
                   const std::vector<std::string>& sources) {
    stage("write");
    std::map<std::string, std::string> metadata;
    metadata["extractor"] = extractor->name();
    for (const auto& [key, value] : extractor->option_list())
      metadata[key] = std::holds_alternative<std::string>(value) ? std::get<std::string>(value)
                                                                 : format_option_value(value);
    metadata["inputs"] = nlohmann::json(sources).dump();
    metadata["input_name"] = out.name;
    metadata["waveform_scale"] = format_number(a.waveform_scale);
    metadata["no_pad"] = a.no_pad ? "true" : "false";
    if (!a.config.empty()) metadata["config"] = a.config;
    metadata["producer"] = "alto features";
    std::vector<std::pair<std::string, torch::Tensor>> tensors = {{"features", out.input_features}};
    if (out.attention_mask.defined()) tensors.emplace_back("attention_mask", out.attention_mask);
    save_safetensors(output, tensors, metadata);
  };
  if (!a.inputs.output_dir.empty()) {  // a file per input
    for_each_input(inputs, [&](const std::string& input) {
      const std::string output = a.inputs.output_for(input, inputs.size(), ".safetensors");
      const torch::Tensor clip = read(input);
      stage("features");
      write(output, extractor->compute_one(clip, padding_for(1)), {input});
    }).throw_if_failed();
    return;
  }
  // One padded batch of the inputs that could be read.
  a.inputs.check_outputs(1, ".safetensors");
  std::vector<torch::Tensor> clips;
  std::vector<std::string> sources;
  const BatchOutcome outcome = for_each_input(inputs, [&](const std::string& input) {
    clips.push_back(read(input));
    sources.push_back(input);
  });
  if (!clips.empty()) {
    stage("features");
    const PaddingOptions padding = padding_for(clips.size());
    write(a.inputs.output,
          clips.size() == 1 ? extractor->compute_one(clips[0], padding)
                            : extractor->compute_batch(clips, padding),
          sources);
  }
  outcome.throw_if_failed();
}

}  // namespace

void add_features_command(CLI::App& app) {
  const auto& registry = feature_extractors();
  std::string names;
  for (const auto& name : registry.keys()) names += (names.empty() ? "" : ", ") + name;
  auto* cmd = app.add_subcommand("features", "Compute features (" + names + ") to safetensors");
  auto a = std::make_shared<FeaturesArgs>();
  // Not required here: read_command_line may take an input back from a flag.
  CLI::Option* inputs = a->inputs.add_to(
      cmd, "Audio files ('-' is standard input); several make one padded batch (-o)",
      "Output .safetensors (tensor 'features'; - for standard output)");
  a->raw.add_to(cmd);
  cmd->add_option("--extractor", a->extractor, "Extractor: " + names)
      ->check(CLI::IsMember(registry.keys()));
  cmd->add_option("--config", a->config, "A preprocessor_config.json (or its model folder)");
  cmd->add_flag("--resample", a->resample, "Resample the input to the extractor's rate");
  cmd->add_option("--waveform-scale", a->waveform_scale,
                  "Multiply the decoded [-1, 1] samples first (32768: Kaldi's int16 range)");
  cmd->add_flag("--no-pad", a->no_pad, "Whisper long-form: no 30 s padding or truncation");
  // One flag per field name or alias over all extractors; its help says which extractors take it
  // and their defaults.
  std::map<std::string, std::string> help;
  std::map<std::string, bool> boolean;  // a flag whose fields are true/false may stand alone
  for (const auto& name : registry.keys()) {
    for (const auto& f : registry.find(name)->fields) {
      std::vector<std::string> flags = f.aliases;
      flags.insert(flags.begin(), flag_of(f.name));
      for (const auto& flag : flags) {
        boolean[flag] = f.kind == OptionKind::kBool;
        std::string& h = help[flag];
        if (h.empty()) {
          h = f.help;
          if (f.kind == OptionKind::kChoice) {
            std::string choices;
            for (const auto& c : f.choices)
              if (!c.empty()) choices += (choices.empty() ? "" : "|") + c;
            h += " (" + choices + ")";
          }
          if (f.kind == OptionKind::kBool) h += " (true|false; alone: true)";
          h += " [" + name + ": " + f.default_text;
        } else {
          h += ", " + name + ": " + f.default_text;
        }
      }
    }
  }
  for (auto& [flag, text] : help) {
    text += "]";
    a->option_flags[flag] =
        cmd->add_option("--" + flag)
            ->description(text)
            ->expected(boolean[flag] ? 0 : 1, 1)
            ->group("Extractor options ([extractor: default] for each that takes it)");
  }
  cmd->callback([a, cmd, inputs] {
    read_command_line(*cmd, inputs, *a);
    run_features(*a);
  });
}

}  // namespace alto::cli
