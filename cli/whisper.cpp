// alto embed --model DIR IN -o OUT.safetensors
// alto transcribe --model DIR IN... [--language xx|auto] [--task ...] [--beam N] [--timestamps]
//                 [--json] [--srt|--vtt]
// alto transcribe --model DIR IN --raw --max-new-tokens N -o OUT.safetensors
// (Kyutai STT folders go to speech_to_text.cpp: --stream, --resample, raw PCM input)

#include "alto/models/whisper/whisper.h"

#include <torch/torch.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/core/error.h"
#include "alto/core/safetensors.h"
#include "alto/core/text.h"
#include "alto/features/whisper_feature_extractor.h"
#include "alto/models/audio_encoder.h"
#include "alto/models/whisper/decoding.h"
#include "alto/models/whisper/transcriber.h"
#include "commands.h"
#include "stages.h"

namespace alto::cli {

namespace {

using models::Whisper;

struct ModelArgs {
  std::string model, device = "cpu", dtype = "float32";

  LoadOptions load_options() const { return LoadOptions::parse(device, dtype); }
  void add_to(CLI::App* cmd) {
    cmd->add_option("--model", model,
                    "Whisper (or, for transcribe, Qwen2-Audio / Voxtral) checkpoint folder")
        ->required();
    cmd->add_option("--device", device, "cpu, cuda or cuda:N (default cpu)");
    cmd->add_option("--dtype", dtype, "float32, float16 (CUDA) or bfloat16 (default float32)");
  }
};

// Mono samples at `rate`, resampled from whatever the file holds, as openai-whisper's ffmpeg
// call does.
torch::Tensor load_mono(const std::string& path, int rate) {
  audio::DecodeOptions load;
  load.mono = true;
  load.sample_rate = rate;
  return audio::to_tensor(audio::load_audio(path, load))[0];
}

void write_metadata_safetensors(const std::string& path,
                                const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                                const ModelArgs& m, const std::string& input,
                                const std::string& producer) {
  save_safetensors(path, tensors,
                   {{"model", m.model},
                    {"input", input},
                    {"producer", producer},
                    {"device", m.device},
                    {"dtype", m.dtype}});
}

struct EmbedArgs {
  ModelArgs model;
  std::string input, output;
};

void run_embed(const EmbedArgs& a) {
  stage("load model");
  const auto encoder = models::AudioEncoder::from_pretrained(a.model.model, a.model.load_options());
  stage("read audio");
  const torch::Tensor wave = load_mono(a.input, encoder->feature_extractor().sampling_rate());
  if (wave.size(0) > encoder->max_seconds() * encoder->feature_extractor().sampling_rate())
    std::cerr << "alto embed: " << a.input << " is longer than one " << encoder->max_seconds()
              << " s window: only its start is encoded\n";
  stage("features + encoder");
  const models::AudioEmbedding e = encoder->embed(wave);
  stage("write");
  write_metadata_safetensors(
      a.output, {{"last_hidden_state", e.last_hidden_state}, {"input_features", e.input_features}},
      a.model, a.input, "alto embed");
}

struct TranscribeArgs {
  ModelArgs model;
  std::vector<std::string> inputs;
  std::string tokenizer, language = "auto", task = "transcribe", output, initial_prompt;
  int beam = 5, best_of = 5;
  std::optional<double> length_penalty, temperature;
  double patience = 1.0;
  uint64_t seed = 0;
  bool timestamps = false, json = false, srt = false, vtt = false, raw = false;
  int64_t max_new_tokens = 0;
  // Streaming speech-to-text models only.
  bool stream = false, no_pace = false, resample = false;
  std::string format;
  int rate = 0, channels = 0;
};

// <|startoftranscript|><|lang|><|task|><|notimestamps|>, then plain argmax: no logit rules, no
// stop at <|endoftext|> — the reference's own greedy loop.
void run_raw(const TranscribeArgs& a) {
  ALTO_CHECK(a.inputs.size() == 1, "--raw takes one input, got ", a.inputs.size());
  ALTO_CHECK(!a.output.empty(), "--raw writes -o OUT.safetensors");
  ALTO_CHECK(a.max_new_tokens > 0, "--raw needs --max-new-tokens N (N > 0)");
  const Whisper whisper = *Whisper::from_pretrained(a.model.model, a.model.load_options());
  const auto extractor = features::FeatureExtractor::from_pretrained(a.model.model);
  const auto special = models::WhisperSpecialTokens::for_vocab_size(whisper.config().vocab_size);
  const torch::Tensor features =
      extractor->compute_batch({load_mono(a.inputs[0], extractor->sampling_rate())}).input_features;
  const torch::Tensor hidden = whisper.encode(features);
  std::vector<int64_t> sequence = {special.sot};
  if (special.multilingual()) {
    std::string language = a.language;
    if (language == "auto")
      language = models::WhisperDecoder(whisper, special).most_likely_language(hidden);
    sequence.push_back(special.language_token(language));
    sequence.push_back(a.task == "translate" ? special.translate : special.transcribe);
  }
  sequence.push_back(special.no_timestamps);
  auto state = whisper.start(hidden);
  torch::Tensor next = torch::tensor(sequence, torch::kInt64).unsqueeze(0);
  for (int64_t i = 0; i < a.max_new_tokens; ++i) {
    const int64_t token = whisper.decode(next, state).select(1, -1).argmax(-1).item<int64_t>();
    sequence.push_back(token);
    next = torch::tensor({token}, torch::kInt64).view({1, 1});
  }
  write_metadata_safetensors(a.output,
                             {{"sequences", torch::tensor(sequence, torch::kInt64).unsqueeze(0)}},
                             a.model, a.inputs[0], "alto transcribe --raw");
}

std::string clock(double seconds, char decimal, bool always_hours) {
  const int64_t ms = std::llround(seconds * 1000.0);
  const int64_t h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60, f = ms % 1000;
  char buffer[32];
  if (always_hours || h > 0)
    std::snprintf(buffer, sizeof buffer, "%02lld:%02lld:%02lld%c%03lld", (long long)h, (long long)m,
                  (long long)s, decimal, (long long)f);
  else
    std::snprintf(buffer, sizeof buffer, "%02lld:%02lld%c%03lld", (long long)m, (long long)s,
                  decimal, (long long)f);
  return buffer;
}

void print_transcript(const TranscribeArgs& a, const std::string& input,
                      const models::WhisperTranscript& t) {
  if (a.json) {
    nlohmann::json segments = nlohmann::json::array();
    for (size_t i = 0; i < t.segments.size(); ++i) {
      const auto& s = t.segments[i];
      segments.push_back({{"id", i},
                          {"start", s.start},
                          {"end", s.end},
                          {"text", s.text},
                          {"tokens", s.tokens},
                          {"temperature", s.temperature},
                          {"avg_logprob", s.avg_logprob},
                          {"compression_ratio", s.compression_ratio},
                          {"no_speech_prob", s.no_speech_prob}});
    }
    std::cout << nlohmann::json{{"file", input},
                                {"language", t.language},
                                {"text", t.text},
                                {"segments", segments}}
                     .dump()
              << "\n";
  } else if (a.srt || a.vtt) {
    if (a.vtt) std::cout << "WEBVTT\n\n";
    for (size_t i = 0; i < t.segments.size(); ++i) {
      const auto& s = t.segments[i];
      if (a.srt) std::cout << i + 1 << "\n";
      std::cout << clock(s.start, a.srt ? ',' : '.', a.srt) << " --> "
                << clock(s.end, a.srt ? ',' : '.', a.srt) << "\n"
                << strip(s.text) << "\n\n";
    }
  } else if (a.timestamps) {
    for (const auto& s : t.segments)
      std::cout << "[" << clock(s.start, '.', false) << " --> " << clock(s.end, '.', false) << "] "
                << strip(s.text) << "\n";
  } else {
    std::cout << strip(t.text) << "\n";
  }
  std::cout.flush();
}

void run_transcribe(const TranscribeArgs& a) {
  if (is_speech_to_text(a.model.model)) {
    ALTO_CHECK(!a.raw && a.task == "transcribe" && a.max_new_tokens == 0, a.model.model,
               ": a streaming speech-to-text model transcribes (no --raw, --task translate or "
               "--max-new-tokens)");
    SpeechToTextCliOptions o;
    o.model = a.model.model, o.device = a.model.device, o.dtype = a.model.dtype;
    o.inputs = a.inputs;
    o.json = a.json, o.srt = a.srt, o.vtt = a.vtt, o.timestamps = a.timestamps;
    o.stream = a.stream, o.no_pace = a.no_pace, o.resample = a.resample;
    o.format = a.format, o.rate = a.rate, o.channels = a.channels;
    return transcribe_with_speech_to_text(o);
  }
  ALTO_CHECK(!a.stream && a.format.empty(), a.model.model,
             ": --stream and --format are for streaming speech-to-text models (Kyutai STT)");
  if (is_audio_lm(a.model.model)) {
    ALTO_CHECK(!a.raw && !a.timestamps && !a.srt && !a.vtt && a.task == "transcribe", a.model.model,
               ": an audio LM transcribes text only (no --raw, --timestamps, "
               "--srt, --vtt or --task translate)");
    return transcribe_with_audio_lm(
        a.model.model, a.model.device, a.model.dtype, a.inputs, a.language, a.json,
        a.max_new_tokens > 0 ? std::optional<int64_t>(a.max_new_tokens) : std::nullopt);
  }
  if (a.raw) return run_raw(a);
  ALTO_CHECK(a.output.empty(), "-o is for --raw; transcripts go to standard output");
  ALTO_CHECK(a.srt + a.vtt + a.json <= 1, "give at most one of --json, --srt, --vtt");
  stage("load model");
  const auto transcriber = models::WhisperTranscriber::from_pretrained(
      a.model.model, a.model.load_options(), a.tokenizer);
  models::WhisperTranscribeOptions o;
  auto& d = o.decoding;
  d.language = a.language == "auto" ? "" : a.language;
  d.task = a.task;
  d.timestamps = a.timestamps || a.srt || a.vtt || a.json;
  d.beam_size = a.beam;
  d.best_of = a.best_of;
  d.patience = a.patience;
  d.length_penalty = a.length_penalty;
  d.seed = a.seed;
  if (a.temperature) o.temperatures = {*a.temperature};
  o.initial_prompt = a.initial_prompt;
  const bool bar = isatty(STDERR_FILENO);
  for (const std::string& input : a.inputs) {
    if (bar)
      o.progress = [&input](double done, double total) {
        const int width = 30, filled = total > 0 ? static_cast<int>(width * done / total) : width;
        std::fprintf(stderr, "\r%s [%s%s] %5.1f / %.1f s", input.c_str(),
                     std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
                     done, total);
        std::fflush(stderr);
      };
    stage("read audio");
    const torch::Tensor wave = load_mono(input, 16000);
    stage("transcribe");
    const auto transcript = transcriber->transcribe(wave, o);
    if (bar) std::fprintf(stderr, "\n");
    print_transcript(a, input, transcript);
  }
}

}  // namespace

void add_embed_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "embed", "Whisper encoder embeddings of an audio file (last_hidden_state) to safetensors");
  auto a = std::make_shared<EmbedArgs>();
  a->model.add_to(cmd);
  cmd->add_option("input", a->input, "Audio file (any format; resampled to 16 kHz mono)")
      ->required();
  cmd->add_option("-o,--output", a->output,
                  "Output .safetensors: last_hidden_state [1, frames, d_model], input_features")
      ->required();
  cmd->callback([a] { run_embed(*a); });
}

void add_transcribe_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "transcribe", "Transcribe or translate speech with Whisper, or transcribe with an audio LM");
  auto a = std::make_shared<TranscribeArgs>();
  a->model.add_to(cmd);
  cmd->add_option("inputs", a->inputs,
                  "Audio files (any format; Whisper resamples to 16 kHz mono), '-' for standard "
                  "input; for Kyutai STT also codes .safetensors as alto encode writes them")
      ->required();
  cmd->add_option("--tokenizer", a->tokenizer,
                  "tokenizer.json / vocab.json+merges.txt folder or .tiktoken file (default: "
                  "the model folder)");
  cmd->add_option("--language", a->language, "Language code, or auto to detect (default auto)");
  cmd->add_option("--task", a->task, "transcribe or translate (to English)")
      ->check(CLI::IsMember({"transcribe", "translate"}));
  cmd->add_option("--beam", a->beam, "Beam size; 0 is greedy (default 5)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--best-of", a->best_of, "Samples per window at temperature > 0 (default 5)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--patience", a->patience, "Beam search patience (default 1)");
  cmd->add_option("--length-penalty", a->length_penalty,
                  "Rank beams by ((5 + length) / 6)^alpha (default: mean logprob)");
  cmd->add_option("--temperature", a->temperature,
                  "One temperature, no fallback (default: 0, 0.2, ..., 1.0 on failure)");
  cmd->add_option("--seed", a->seed, "Seed of temperature sampling (default 0)");
  cmd->add_option("--initial-prompt", a->initial_prompt, "Text that precedes the audio");
  cmd->add_flag("--timestamps", a->timestamps, "Print timed segments");
  cmd->add_flag("--json", a->json, "One JSON object per input: language, text, segments");
  cmd->add_flag("--srt", a->srt, "SubRip subtitles");
  cmd->add_flag("--vtt", a->vtt, "WebVTT subtitles");
  auto* raw = "Reference greedy (no logit rules)";
  cmd->add_flag("--raw", a->raw, "Plain argmax after <|sot|><|lang|><|task|><|notimestamps|>")
      ->group(raw);
  cmd->add_option("--max-new-tokens", a->max_new_tokens, "Tokens --raw generates")->group(raw);
  cmd->add_option("-o,--output", a->output, "--raw: .safetensors with tensor 'sequences'")
      ->group(raw);
  auto* live = "Streaming models (Kyutai STT)";
  cmd->add_flag("--stream", a->stream,
                "Print words as they are decided while reading; several inputs run as "
                "concurrent batched streams")
      ->group(live);
  cmd->add_flag("--no-pace", a->no_pace, "--stream: read files as fast as they decode")
      ->group(live);
  cmd->add_flag("--resample", a->resample, "Resample audio at another rate to the model's")
      ->group(live);
  cmd->add_option("--format", a->format, "Raw PCM input: sample format (s16le, f32le, ...)")
      ->group(live);
  cmd->add_option("--rate", a->rate, "Raw PCM input: sample rate")->group(live);
  cmd->add_option("--channels", a->channels, "Raw PCM input: channels")->group(live);
  cmd->callback([a] { run_transcribe(*a); });
}

}  // namespace alto::cli
