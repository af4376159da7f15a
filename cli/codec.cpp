// alto encode --model DIR IN... -o OUT.safetensors|--output-dir DIR [--bandwidth KBPS]
//             [--num-quantizers N] [--stream]
// alto decode --model DIR CODES.safetensors... -o OUT.wav|.flac|.raw|.safetensors|-
//             [--output-dir DIR] [--output-format ...] [--bits ...] [--stream]
//
// Any codec AudioTokenizer::from_pretrained knows (EnCodec, Mimi, DAC); the codes file holds
// `codes` int64 in the layout transformers returns as audio_codes, `scales` when the codec
// normalises, and metadata naming the model, its rates and the input length.

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/audio/save.h"
#include "alto/core/error.h"
#include "alto/core/safetensors.h"
#include "alto/tokenizers/audio_tokenizer.h"
#include "commands.h"
#include "console.h"
#include "inputs.h"
#include "stages.h"

namespace alto::cli {

namespace {

using tokenizers::AudioCodes;
using tokenizers::AudioTokenizer;
using tokenizers::load_codes;
using tokenizers::save_codes;

struct CodecArgs {
  std::string model, device = "cpu", dtype = "float32";
  Inputs inputs;
  RawAudioInput raw;
  std::string output_format, bits;  // decode's audio output
  double bandwidth = 0;
  int64_t num_quantizers = 0;
  bool stream = false;

  std::shared_ptr<const AudioTokenizer> load() const {
    return AudioTokenizer::from_pretrained(model, LoadOptions::parse(device, dtype));
  }
};

// Samples streamed per step: about 80 ms, a whole number of frames.
int64_t stream_chunk(const AudioTokenizer& codec) {
  const int64_t frames = std::max<int64_t>(1, codec.sample_rate() * 2 / 25 / codec.hop_length());
  return frames * codec.hop_length();
}

// [1, channels, n] at the codec's rate: resampled by alto's loader; channels remixed to the
// codec's (a mono codec takes the mean of all channels, a stereo one a mono file twice).
torch::Tensor load_for(const AudioTokenizer& codec, const std::string& path,
                       const RawAudioInput& raw) {
  audio::DecodeOptions load;
  raw.apply(load);
  load.sample_rate = static_cast<int>(codec.sample_rate());
  load.mono = codec.channels() == 1;
  torch::Tensor audio = audio::to_tensor(audio::load_audio(path, load));
  if (audio.size(0) == 1 && codec.channels() > 1) audio = audio.expand({codec.channels(), -1});
  ALTO_CHECK(audio.size(0) == codec.channels(), path, " has ", audio.size(0), " channels; the ",
             codec.model_type(), " model takes ", codec.channels());
  return audio.unsqueeze(0).contiguous();
}

void encode_one(const CodecArgs& a, const AudioTokenizer& codec,
                const tokenizers::AudioEncodeOptions& options, const std::string& input,
                size_t count) {
  const std::string output = a.inputs.output_for(input, count, ".safetensors");
  ALTO_CHECK(ends_with(output, ".safetensors") || output == "-",
             "alto encode writes -o OUT.safetensors (or - for standard output), got ", output);
  stage("read audio");
  const torch::Tensor audio = load_for(codec, input, a.raw);
  stage("encode");
  AudioCodes codes;
  if (a.stream) {
    auto stream = codec.stream(options);
    std::vector<torch::Tensor> parts;
    const int64_t chunk = stream_chunk(codec);
    const double rate = static_cast<double>(codec.sample_rate());
    ProgressBar bar(input, audio.size(2) / rate, "s");
    for (int64_t offset = 0; offset < audio.size(2); offset += chunk) {
      parts.push_back(
          stream->encode_step(audio.narrow(2, offset, std::min(chunk, audio.size(2) - offset))));
      bar.update(std::min(offset + chunk, audio.size(2)) / rate);
    }
    if (torch::Tensor last = stream->encode_flush(); last.defined()) parts.push_back(last);
    codes.codes = torch::cat(parts, 2);
    if (codec.chunked_codes()) codes.codes = codes.codes.unsqueeze(0);
    codes.num_samples = audio.size(2);
  } else {
    codes = codec.encode(audio, options);
  }
  stage("write");
  save_codes(output, codes, codec,
             {{"model", a.model},
              {"input", input},
              {"producer", std::string("alto encode") + (a.stream ? " --stream" : "")}});
}

void run_encode(const CodecArgs& a) {
  const std::vector<std::string> inputs = a.inputs.all();
  a.inputs.check_outputs(inputs.size(), ".safetensors");
  stage("load model");
  const auto codec = a.load();
  tokenizers::AudioEncodeOptions options;
  options.bandwidth = a.bandwidth;
  options.num_quantizers = a.num_quantizers;
  // Validates the options before any input is read.
  codec->num_codebooks(options);
  for_each_input(inputs, [&](const std::string& input) {
    encode_one(a, *codec, options, input, inputs.size());
  }).throw_if_failed();
}

void decode_one(const CodecArgs& a, const AudioTokenizer& codec, const std::string& input,
                size_t count) {
  const std::string extension = a.output_format.empty() ? ".wav" : "." + a.output_format;
  const std::string output = a.inputs.output_for(input, count, extension);
  const bool tensors = a.output_format.empty() && ends_with(output, ".safetensors");
  audio::SaveFormat format = audio::SaveFormat::for_path(output);
  if (!a.output_format.empty()) format.file = audio::parse_file_format(a.output_format);
  format.encoding = !a.bits.empty()                           ? audio::parse_sample_encoding(a.bits)
                    : format.file == audio::FileFormat::kFlac ? audio::SampleEncoding::kPcm16
                                                              : audio::SampleEncoding::kFloat32;
  stage("read codes");
  ALTO_CHECK(input != "-", "alto decode reads codes files (.safetensors), not standard input");
  const AudioCodes codes = load_codes(input, codec);
  stage("decode");
  torch::Tensor audio;
  if (a.stream) {
    const bool chunked = codec.chunked_codes();
    ALTO_CHECK(!chunked || (codes.codes.dim() == 4 && codes.codes.size(0) == 1), input,
               ": streaming decode takes codes [1, batch, K, frames] (one chunk), got ",
               codes.codes.sizes());
    ALTO_CHECK(!codes.scales.defined(), input,
               ": codes with scales come from a normalising model, which does not stream");
    const torch::Tensor frames = chunked ? codes.codes[0] : codes.codes;
    auto stream = codec.stream({}, frames.dim() == 3 ? frames.size(0) : 1);
    std::vector<torch::Tensor> parts;
    const int64_t step = stream_chunk(codec) / codec.hop_length();
    ProgressBar bar(input, frames.size(-1) / codec.frame_rate(), "s");
    for (int64_t offset = 0; offset < frames.size(-1); offset += step) {
      parts.push_back(
          stream->decode_step(frames.narrow(-1, offset, std::min(step, frames.size(-1) - offset))));
      bar.update(std::min(offset + step, frames.size(-1)) / codec.frame_rate());
    }
    if (torch::Tensor last = stream->decode_flush(); last.defined()) parts.push_back(last);
    audio = torch::cat(parts, 2);
    if (codes.num_samples > 0 && codes.num_samples < audio.size(2))
      audio = audio.narrow(2, 0, codes.num_samples);
  } else {
    audio = codec.decode(codes);
  }
  stage("write");
  audio = audio.to(torch::kCPU, torch::kFloat32).contiguous();
  if (tensors) {
    save_safetensors(output, {{"audio", audio}},
                     {{"model", a.model},
                      {"model_type", codec.model_type()},
                      {"sample_rate", std::to_string(codec.sample_rate())},
                      {"input", input},
                      {"producer", std::string("alto decode") + (a.stream ? " --stream" : "")}});
    return;
  }
  ALTO_CHECK(audio.size(0) == 1,
             "alto decode writes one waveform to an audio file; the codes hold ", audio.size(0),
             " (write .safetensors)");
  audio::save_audio(
      output, audio::audio_from_tensor(audio[0], static_cast<int>(codec.sample_rate())), format);
}

void run_decode(const CodecArgs& a) {
  const std::vector<std::string> inputs = a.inputs.all();
  a.inputs.check_outputs(inputs.size(), ".wav");
  stage("load model");
  const auto codec = a.load();
  for_each_input(inputs, [&](const std::string& input) {
    decode_one(a, *codec, input, inputs.size());
  }).throw_if_failed();
}

void add_model_options(CLI::App* cmd, CodecArgs& a) {
  cmd->add_option("--model", a.model,
                  "Codec checkpoint folder (config.json, model.safetensors): EnCodec, Mimi, DAC")
      ->required();
  cmd->add_option("--device", a.device, "cpu, cuda or cuda:N (default cpu)");
  cmd->add_option("--dtype", a.dtype, "float32, float16 (CUDA) or bfloat16 (default float32)");
  cmd->add_flag("--stream", a.stream, "Run the frame-by-frame streaming path (same output)");
}

}  // namespace

void add_encode_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("encode", "Audio to codec codes (EnCodec, Mimi, DAC)");
  auto a = std::make_shared<CodecArgs>();
  add_model_options(cmd, *a);
  a->inputs
      .add_to(cmd,
              "Audio files (any format, '-' for standard input; resampled and remixed to the "
              "codec's rate and channels)",
              "Output .safetensors (or - for standard output): codes int64 (transformers' "
              "audio_codes layout), scales")
      ->required();
  a->raw.add_to(cmd);
  cmd->add_option("--bandwidth", a->bandwidth,
                  "EnCodec target bandwidth in kbps (default: the model's smallest)");
  cmd->add_option("--num-quantizers", a->num_quantizers,
                  "Codebooks to keep, a prefix (Mimi, DAC; default all)");
  cmd->callback([a] { run_encode(*a); });
}

void add_decode_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("decode", "Codec codes back to audio (EnCodec, Mimi, DAC)");
  auto a = std::make_shared<CodecArgs>();
  add_model_options(cmd, *a);
  a->inputs
      .add_to(cmd, "Codes .safetensors files written by alto encode",
              "Output .wav, .flac, .raw (headerless PCM), - (standard output, WAV unless "
              "--output-format) or .safetensors (tensor audio float32 [1, C, N])")
      ->required();
  cmd->add_option("--output-format", a->output_format,
                  "wav, flac or raw, whatever the output's name (default: from its extension)")
      ->check(CLI::IsMember({"wav", "flac", "raw"}));
  cmd->add_option("--bits", a->bits, "16, 24 or 32f (default 32f; FLAC 16)")
      ->check(CLI::IsMember({"16", "24", "32f"}));
  cmd->callback([a] { run_decode(*a); });
}

}  // namespace alto::cli
