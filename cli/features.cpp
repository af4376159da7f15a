// alto features IN... -o OUT.safetensors (--extractor NAME [options] | --config JSON)

#include <torch/torch.h>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "alto/audio/load.h"
#include "alto/core/audio_tensor.h"
#include "alto/core/error.h"
#include "alto/core/safetensors.h"
#include "alto/features/kaldi_mfcc.h"
#include "alto/features/mel_spectrogram.h"
#include "alto/features/seamless_m4t_feature_extractor.h"
#include "alto/features/wav2vec2_feature_extractor.h"
#include "alto/features/whisper_feature_extractor.h"
#include "commands.h"

namespace alto::cli {

namespace {

using namespace alto::features;

struct FeaturesArgs {
  std::vector<std::string> inputs;
  std::string output, extractor, config;
  bool resample = false;
  double waveform_scale = 1.0;
  // Whisper
  std::optional<int> n_mels;
  bool no_pad = false;
  // Kaldi
  KaldiMfccOptions kaldi;
  std::string snip_edges = "true", window_type = "povey";
  std::optional<int> num_mel_bins;
  // mel
  MelSpectrogramOptions mel;
  std::string center = "true", pad_mode = "reflect", mel_scale = "htk", norm = "none";
};

bool parse_bool(const std::string& flag, const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  throw InvalidArgument(flag + " takes true or false, got '" + value + "'");
}

std::unique_ptr<FeatureExtractor> make_extractor(const FeaturesArgs& a) {
  if (!a.config.empty()) return FeatureExtractor::from_pretrained(a.config);
  if (a.extractor == "whisper") {
    WhisperFeatureExtractorOptions o;
    if (a.n_mels) o.feature_size = *a.n_mels;
    return std::make_unique<WhisperFeatureExtractor>(o);
  }
  if (a.extractor == "kaldi-fbank" || a.extractor == "kaldi-mfcc") {
    KaldiMfccOptions o = a.kaldi;
    o.snip_edges = parse_bool("--snip-edges", a.snip_edges);
    o.window_type = parse_window_type(a.window_type);
    if (a.extractor == "kaldi-fbank") {
      o.num_mel_bins = a.num_mel_bins.value_or(23);
      return std::make_unique<KaldiFbank>(static_cast<const KaldiFbankOptions&>(o));
    }
    o.num_mel_bins = a.num_mel_bins.value_or(23);
    return std::make_unique<KaldiMfcc>(o);
  }
  if (a.extractor == "seamless-m4t") return std::make_unique<SeamlessM4TFeatureExtractor>();
  if (a.extractor == "wav2vec2") return std::make_unique<Wav2Vec2FeatureExtractor>();
  MelSpectrogramOptions o = a.mel;
  if (a.n_mels) o.n_mels = *a.n_mels;
  o.center = parse_bool("--center", a.center);
  o.pad_mode = parse_pad_mode(a.pad_mode);
  o.mel_scale = parse_mel_scale(a.mel_scale);
  o.norm = parse_mel_norm(a.norm);
  return std::make_unique<MelSpectrogram>(o);
}

void run_features(const FeaturesArgs& a) {
  ALTO_CHECK(a.extractor.empty() != a.config.empty(),
             "give exactly one of --extractor and --config");
  const auto extractor = make_extractor(a);
  LoadOptions load;
  load.mono = true;  // the extractors take mono audio: channels are averaged
  if (a.resample) load.sample_rate = extractor->sampling_rate();
  const bool progress = a.inputs.size() > 1 && isatty(STDERR_FILENO);
  std::vector<torch::Tensor> clips;
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    if (progress) std::cerr << "\r[" << i + 1 << "/" << a.inputs.size() << "] " << a.inputs[i];
    const Audio audio = load_audio(a.inputs[i], load);
    try {
      extractor->check_sampling_rate(audio.sample_rate);
    } catch (const Error& e) {
      throw InvalidArgument(a.inputs[i] + ": " + e.what());
    }
    torch::Tensor wave = to_tensor(audio)[0];
    if (a.waveform_scale != 1.0) wave = wave * a.waveform_scale;
    clips.push_back(wave);
  }
  if (progress) std::cerr << "\n";
  PaddingOptions padding;
  // Where the extractor has an attention mask, it is written.
  if (extractor->name() == "whisper" || extractor->name() == "seamless-m4t" ||
      extractor->name() == "wav2vec2")
    padding.return_attention_mask = true;
  if (extractor->name() == "whisper" && a.no_pad) {
    padding.padding = PaddingOptions::Strategy::kLongest;
    padding.truncation = false;
  }
  if (extractor->name() == "wav2vec2" && clips.size() > 1)
    padding.padding = PaddingOptions::Strategy::kLongest;
  BatchFeature out = clips.size() == 1 ? extractor->compute_one(clips[0], padding)
                                       : extractor->compute_batch(clips, padding);
  std::map<std::string, std::string> metadata;
  metadata["extractor"] = extractor->name();
  for (const auto& [key, value] : extractor->option_list()) metadata[key] = value;
  metadata["inputs"] = nlohmann::json(a.inputs).dump();
  metadata["input_name"] = out.name;
  metadata["waveform_scale"] = features::detail::format_number(a.waveform_scale);
  metadata["no_pad"] = a.no_pad ? "true" : "false";
  if (!a.config.empty()) metadata["config"] = a.config;
  metadata["producer"] = "alto features";
  std::vector<std::pair<std::string, torch::Tensor>> tensors = {{"features", out.input_features}};
  if (out.attention_mask.defined()) tensors.emplace_back("attention_mask", out.attention_mask);
  save_safetensors(a.output, tensors, metadata);
}

}  // namespace

void add_features_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "features", "Compute Whisper, Kaldi, SeamlessM4T, Wav2Vec2 or mel features to safetensors");
  auto a = std::make_shared<FeaturesArgs>();
  cmd->add_option("inputs", a->inputs, "Audio files; several make one padded batch")->required();
  cmd->add_option("-o,--output", a->output, "Output .safetensors (tensor 'features')")->required();
  cmd->add_option("--extractor", a->extractor, "Extractor")
      ->check(CLI::IsMember(
          {"whisper", "kaldi-fbank", "kaldi-mfcc", "seamless-m4t", "wav2vec2", "mel"}));
  cmd->add_option("--config", a->config, "A preprocessor_config.json (or its model folder)");
  cmd->add_flag("--resample", a->resample, "Resample the input to the extractor's rate");
  cmd->add_option("--waveform-scale", a->waveform_scale,
                  "Multiply the decoded [-1, 1] samples first (32768: Kaldi's int16 range)");
  auto* whisper = "Whisper";
  cmd->add_option("--n-mels", a->n_mels, "Mel bins (whisper: 80 or 128; mel)")->group(whisper);
  cmd->add_flag("--no-pad", a->no_pad, "Whisper long-form: no 30 s padding or truncation")
      ->group(whisper);
  auto* kaldi = "Kaldi (torchaudio.compliance.kaldi names)";
  KaldiMfccOptions& k = a->kaldi;
  cmd->add_option("--num-mel-bins", a->num_mel_bins, "Mel bins (default 23)")->group(kaldi);
  cmd->add_option("--num-ceps", k.num_ceps, "Cepstra (MFCC, default 13)")->group(kaldi);
  cmd->add_option("--frame-length", k.frame_length, "Frame length in ms (default 25)")
      ->group(kaldi);
  cmd->add_option("--frame-shift", k.frame_shift, "Frame shift in ms (default 10)")->group(kaldi);
  cmd->add_option("--snip-edges", a->snip_edges, "true|false (default true)")->group(kaldi);
  cmd->add_option("--dither", k.dither, "Dither std (default 0)")->group(kaldi);
  cmd->add_option("--dither-seed", k.dither_seed, "Seed of the dither noise (default 0)")
      ->group(kaldi);
  cmd->add_option("--preemphasis-coefficient", k.preemphasis_coefficient, "Default 0.97")
      ->group(kaldi);
  cmd->add_option("--window-type", a->window_type, "povey|hann|hamming|blackman|rectangular")
      ->group(kaldi);
  cmd->add_option("--low-freq", k.low_freq, "Default 20 Hz")->group(kaldi);
  cmd->add_option("--high-freq", k.high_freq, "Default 0 (Nyquist; negative: offset)")
      ->group(kaldi);
  cmd->add_flag("--use-energy", k.use_energy, "Add the log energy")->group(kaldi);
  cmd->add_option("--cepstral-lifter", k.cepstral_lifter, "Default 22")->group(kaldi);
  auto* mel = "mel (torchaudio.transforms.MelSpectrogram names)";
  MelSpectrogramOptions& m = a->mel;
  cmd->add_option("--n-fft", m.n_fft, "Default 400")->group(mel);
  cmd->add_option("--win-length", m.win_length, "Default n_fft")->group(mel);
  cmd->add_option("--hop-length", m.hop_length, "Default win_length / 2")->group(mel);
  cmd->add_option("--f-min", m.f_min, "Default 0")->group(mel);
  cmd->add_option("--f-max", m.f_max, "Default sample_rate / 2")->group(mel);
  cmd->add_option("--mel-scale", a->mel_scale, "htk|slaney (default htk)")->group(mel);
  cmd->add_option("--norm", a->norm, "none|slaney (default none)")->group(mel);
  cmd->add_option("--power", m.power, "Default 2")->group(mel);
  cmd->add_option("--center", a->center, "true|false (default true)")->group(mel);
  cmd->add_option("--pad-mode", a->pad_mode, "reflect|constant (default reflect)")->group(mel);
  cmd->callback([a] { run_features(*a); });
}

}  // namespace alto::cli
