// alto speak --model CSM_DIR [--speaker N] [--context FILE:TEXT]... [--max-frames N]
//            [--temperature T] [--seed S] [--json] -o OUT.wav|- TEXT
// Text to speech with CSM: each --context is an earlier turn by the same speaker (an audio file
// of any format, resampled to the codec's rate, or a codes .safetensors from alto encode) with
// its text. Audio is decoded frame by frame as it is generated: with -o - raw 16-bit 24 kHz PCM
// goes to stdout as each 80 ms frame exists (`alto speak ... -o - | aplay -f S16_LE -r 24000`).

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/audio/save.h"
#include "alto/core/error.h"
#include "alto/models/csm/csm.h"
#include "alto/tokenizers/audio_tokenizer.h"
#include "commands.h"

namespace alto::cli {
namespace {

using models::ChatMessage;
using models::ChatPart;
using models::Csm;

struct SpeakArgs {
  std::string model, device = "cpu", dtype = "float32", output, text;
  std::string speaker = "0";
  std::vector<std::string> contexts;
  std::optional<int64_t> max_frames, top_k;
  std::optional<double> temperature;
  uint64_t seed = 0;
  bool json = false;
};

// --context FILE:TEXT (split at the first ':') -> a turn by `speaker` carrying that clip.
ChatMessage context_turn(const std::string& spec, const std::string& speaker, const Csm& model) {
  const size_t colon = spec.find(':');
  ALTO_CHECK(colon != std::string::npos && colon > 0, "--context '", spec,
             "': expected FILE:TEXT (the clip and what it says)");
  const std::string path = spec.substr(0, colon), text = spec.substr(colon + 1);
  ChatPart clip;
  try {
    if (ends_with(path, ".safetensors")) {
      torch::Tensor codes = tokenizers::load_codes(path, model.codec()).codes;
      // alto encode writes transformers' audio_codes [1, K, frames].
      if (codes.dim() == 3 && codes.size(0) == 1) codes = codes[0];
      clip = ChatPart::codes_part(
          codes.narrow(0, 0, std::min<int64_t>(codes.size(0), model.config().num_codebooks)));
    } else {
      audio::DecodeOptions load;
      load.mono = true;
      load.sample_rate = static_cast<int>(model.sampling_rate());
      clip = ChatPart::audio_part(audio::to_tensor(audio::load_audio(path, load))[0]);
    }
  } catch (const Error& e) {
    throw InvalidArgument("--context " + path + ": " + e.what());
  }
  return {speaker, {ChatPart::text_part(text), clip}};
}

// Writes float samples as 16-bit little-endian PCM to stdout, flushed per frame.
void write_pcm(const torch::Tensor& samples) {
  const torch::Tensor pcm = (samples.clamp(-1.0, 1.0) * 32767.0).round().to(torch::kInt16);
  const size_t n = static_cast<size_t>(pcm.numel());
  ALTO_CHECK_AS(IoError, std::fwrite(pcm.data_ptr<int16_t>(), sizeof(int16_t), n, stdout) == n,
                "alto speak: writing PCM to standard output failed");
  std::fflush(stdout);
}

void run_speak(const SpeakArgs& a) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  const auto model = Csm::from_pretrained(a.model, LoadOptions::parse(a.device, a.dtype));
  const bool to_stdout = a.output == "-";
  ALTO_CHECK(to_stdout || ends_with(a.output, ".wav") || ends_with(a.output, ".flac"),
             "alto speak writes -o OUT.wav, OUT.flac or - (raw PCM on stdout), got '", a.output,
             "'");
  ALTO_CHECK(!(to_stdout && a.json),
             "--json prints to stdout, where -o - writes the audio: "
             "write the audio to a file");
  std::vector<ChatMessage> conversation;
  for (const std::string& spec : a.contexts)
    conversation.push_back(context_turn(spec, a.speaker, *model));
  conversation.push_back({a.speaker, {ChatPart::text_part(a.text)}});
  const models::CsmInputs inputs = model->process(conversation);

  models::CsmGenerationConfig config = model->generation_config();
  if (a.max_frames) config.backbone.max_new_tokens = *a.max_frames;
  if (a.temperature) config.set_temperature(*a.temperature);
  if (a.top_k) config.backbone.top_k = config.depth_decoder.top_k = *a.top_k;
  config.backbone.seed = a.seed;

  const bool bar = !a.json && isatty(STDERR_FILENO);
  const double frame_seconds = 1.0 / model->codec().frame_rate();
  models::CsmGenerateOptions options;
  options.on_frame = [&](const models::CsmFrame& frame) {
    if (to_stdout && frame.audio.defined()) write_pcm(frame.audio);
    if (bar)
      std::cerr << "\r" << frame.index + 1 << "/" << config.backbone.max_new_tokens << " frames, "
                << (frame.index + 1) * frame_seconds << " s of audio" << std::flush;
    return true;
  };
  const models::CsmGeneration out = model->generate(inputs, config, options);
  if (bar) std::cerr << "\n";
  if (!to_stdout) {
    audio::save_audio(
        a.output,
        audio::audio_from_tensor(out.audio.unsqueeze(0), static_cast<int>(model->sampling_rate())),
        audio::SaveFormat::for_path(a.output));
  }
  const double total = std::chrono::duration<double>(clock::now() - started).count();
  double generating = out.prefill_seconds;
  for (double s : out.frame_seconds) generating += s;
  const double audio_seconds = static_cast<double>(out.audio.numel()) / model->sampling_rate();
  const double rtf = audio_seconds > 0 ? generating / audio_seconds : 0.0;
  if (!a.json) {
    if (!to_stdout)
      std::cerr << "alto speak: " << out.audio_codes.size(0) << " frames, " << audio_seconds
                << " s of audio to " << a.output << " (first audio after "
                << out.first_audio_seconds << " s, real-time factor " << rtf << ")\n";
    return;
  }
  const torch::Tensor codes = out.audio_codes.contiguous();
  std::vector<std::vector<int64_t>> rows;
  for (int64_t f = 0; f < codes.size(0); ++f)
    rows.emplace_back(codes[f].data_ptr<int64_t>(), codes[f].data_ptr<int64_t>() + codes.size(1));
  std::cout << nlohmann::json{{"model_type", "csm"},
                              {"prompt", inputs.prompt},
                              {"input_ids",
                               std::vector<int64_t>(inputs.input_ids.data_ptr<int64_t>(),
                                                    inputs.input_ids.data_ptr<int64_t>() +
                                                        inputs.input_ids.numel())},
                              {"codes", rows},
                              {"frames", codes.size(0)},
                              {"ended", out.ended},
                              {"audio_seconds", audio_seconds},
                              {"output", a.output},
                              {"time_to_first_audio_s", out.first_audio_seconds},
                              {"real_time_factor", rtf},
                              {"timings",
                               {{"prefill_s", out.prefill_seconds},
                                {"per_frame_s", out.frame_seconds},
                                {"total_s", total}}}}
                   .dump()
            << "\n";
}

}  // namespace

void add_speak_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "speak", "Text to speech with CSM; audio streams out frame by frame as it is generated");
  auto a = std::make_shared<SpeakArgs>();
  cmd->add_option("--model", a->model, "CSM folder as the Hub ships it (sesame/csm-1b)")
      ->required();
  cmd->add_option("--device", a->device, "cpu, cuda or cuda:N (default cpu)");
  cmd->add_option("--dtype", a->dtype,
                  "float32, bfloat16, or int8: int8 linear weights in the decoders with float32 "
                  "activations (default float32)");
  cmd->add_option("--speaker", a->speaker, "Speaker id of every turn (default 0)");
  cmd->add_option("--context", a->contexts,
                  "FILE:TEXT, an earlier turn by the speaker: audio (any format, resampled) or "
                  "a codes .safetensors from alto encode, and its text; repeatable, in order");
  cmd->add_option("--max-frames", a->max_frames, "Frames (80 ms each) to generate at most")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--temperature", a->temperature,
                  "Sampling temperature of both decoders; 0 is greedy (default: "
                  "generation_config.json)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-k", a->top_k, "Sample among the k most likely codes (0: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", a->seed, "Seed of sampling (default 0)");
  cmd->add_flag("--json", a->json,
                "Print one JSON object: codes (frames x codebooks), frames, "
                "time_to_first_audio_s, real_time_factor");
  cmd->add_option("-o,--output", a->output, "OUT.wav, OUT.flac, or - for raw s16le PCM on stdout")
      ->required();
  cmd->add_option("text", a->text, "What to say")->required();
  cmd->callback([a] { run_speak(*a); });
}

}  // namespace alto::cli
