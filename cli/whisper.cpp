// alto embed --model DIR IN... -o OUT.safetensors|--output-dir DIR
// alto transcribe --model DIR IN... [--language xx|name|auto] [--task ...] [--beam N]
//                 [--timestamps] [--json] [--srt|--vtt] [--output-dir DIR] [--offset S]
//                 [--duration S] [thresholds] [--live [--no-pace] [--step S]]
// alto transcribe --model DIR IN --raw --max-new-tokens N -o OUT.safetensors
// (Kyutai STT folders go to speech_to_text.cpp: --stream, --resample, raw PCM input)

#include "alto/models/whisper/whisper.h"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/audio/stream_reader.h"
#include "alto/core/error.h"
#include "alto/core/safetensors.h"
#include "alto/core/text.h"
#include "alto/features/whisper_feature_extractor.h"
#include "alto/models/audio_encoder.h"
#include "alto/models/whisper/decoding.h"
#include "alto/models/whisper/live_transcriber.h"
#include "alto/models/whisper/transcriber.h"
#include "alto/tokenizers/bpe_tokenizer.h"
#include "commands.h"
#include "console.h"
#include "inputs.h"
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
    cmd->add_option("--dtype", dtype,
                    "float32, float16 (CUDA), bfloat16, or int8: int8 linear weights with float32 "
                    "activations in the decoder of Whisper, an audio LM or Kyutai (default "
                    "float32)");
  }
};

// Mono samples at `rate`, resampled from whatever the file holds, as openai-whisper's ffmpeg
// call does.
audio::DecodeOptions mono_at(int rate, const RawAudioInput& raw) {
  audio::DecodeOptions load;
  load.mono = true;
  load.sample_rate = rate;
  raw.apply(load);
  return load;
}

torch::Tensor load_mono(const std::string& path, const audio::DecodeOptions& load) {
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
  Inputs inputs;
  RawAudioInput raw;
};

void run_embed(const EmbedArgs& a) {
  const std::vector<std::string> inputs = a.inputs.all();
  a.inputs.check_outputs(inputs.size(), ".safetensors");
  stage("load model");
  const auto encoder = models::AudioEncoder::from_pretrained(a.model.model, a.model.load_options());
  const int rate = encoder->feature_extractor().sampling_rate();
  for_each_input(inputs, [&](const std::string& input) {
    const std::string output = a.inputs.output_for(input, inputs.size(), ".safetensors");
    stage("read audio");
    const torch::Tensor wave = load_mono(input, mono_at(rate, a.raw));
    if (wave.size(0) > encoder->max_seconds() * rate)
      std::cerr << "alto embed: " << input << " is longer than one " << encoder->max_seconds()
                << " s window: only its start is encoded\n";
    stage("features + encoder");
    const models::AudioEmbedding e = encoder->embed(wave);
    stage("write");
    write_metadata_safetensors(
        output, {{"last_hidden_state", e.last_hidden_state}, {"input_features", e.input_features}},
        a.model, input, "alto embed");
  }).throw_if_failed();
}

struct TranscribeArgs {
  ModelArgs model;
  Inputs inputs;
  RawAudioInput raw;
  std::string tokenizer, language = "auto", task = "transcribe", output, initial_prompt;
  int beam = 5, best_of = 5;
  std::optional<double> length_penalty, temperature;
  double patience = 1.0;
  uint64_t seed = 0;
  bool timestamps = false, json = false, srt = false, vtt = false, raw_tokens = false;
  int64_t max_new_tokens = 0;
  // openai-whisper's thresholds ("none" turns one off) and prompt conditioning.
  std::string compression_ratio_threshold = "2.4", logprob_threshold = "-1.0",
              no_speech_threshold = "0.6";
  bool condition_on_previous_text = true;
  double offset = 0;
  std::optional<double> duration;
  // Live transcription (Whisper) and streaming models.
  bool live = false, stream = false, no_pace = false, resample = false;
  double step = 1.0;
};

// <|startoftranscript|><|lang|><|task|><|notimestamps|>, then plain argmax: no logit rules, no
// stop at <|endoftext|> — the reference's own greedy loop.
void run_raw(const TranscribeArgs& a) {
  const std::vector<std::string> inputs = a.inputs.all();
  ALTO_CHECK(inputs.size() == 1, "--raw takes one input, got ", inputs.size());
  ALTO_CHECK(!a.output.empty(), "--raw writes -o OUT.safetensors");
  ALTO_CHECK(a.max_new_tokens > 0, "--raw needs --max-new-tokens N (N > 0)");
  const Whisper whisper = *Whisper::from_pretrained(a.model.model, a.model.load_options());
  const auto extractor = features::FeatureExtractor::from_pretrained(a.model.model);
  const auto special = models::WhisperSpecialTokens::for_vocab_size(whisper.config().vocab_size);
  const torch::Tensor features =
      extractor->compute_batch({load_mono(inputs[0], mono_at(extractor->sampling_rate(), a.raw))})
          .input_features;
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
                             a.model, inputs[0], "alto transcribe --raw");
}

std::optional<double> threshold(const std::string& text, const std::string& flag) {
  if (text == "none" || text == "None") return std::nullopt;
  try {
    size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size() && std::isfinite(value)) return value;
  } catch (const std::exception&) {
  }
  throw InvalidArgument(flag + ": expected a number or none, got '" + text + "'");
}

// The extension of a transcript file: what the output options print.
std::string transcript_extension(const TranscribeArgs& a) {
  return a.json ? ".json" : a.srt ? ".srt" : a.vtt ? ".vtt" : ".txt";
}

void print_transcript(const TranscribeArgs& a, const std::string& input,
                      const models::WhisperTranscript& t, std::ostream& out,
                      const nlohmann::json& extra = nlohmann::json::object()) {
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
    nlohmann::json object{
        {"file", input}, {"language", t.language}, {"text", t.text}, {"segments", segments}};
    object.update(extra);
    out << object.dump() << "\n";
  } else if (a.srt || a.vtt) {
    if (a.vtt) out << "WEBVTT\n\n";
    for (size_t i = 0; i < t.segments.size(); ++i) {
      const auto& s = t.segments[i];
      if (a.srt) out << i + 1 << "\n";
      out << clock_text(s.start, a.srt ? ',' : '.', a.srt) << " --> "
          << clock_text(s.end, a.srt ? ',' : '.', a.srt) << "\n"
          << strip(s.text) << "\n\n";
    }
  } else if (a.timestamps) {
    for (const auto& s : t.segments)
      out << "[" << clock_text(s.start) << " --> " << clock_text(s.end) << "] " << strip(s.text)
          << "\n";
  } else {
    out << strip(t.text) << "\n";
  }
  out.flush();
}

// To --output-dir (a file per input) or standard output.
void write_transcript(const TranscribeArgs& a, const std::string& input, size_t count,
                      const models::WhisperTranscript& t,
                      const nlohmann::json& extra = nlohmann::json::object()) {
  if (a.inputs.output_dir.empty()) return print_transcript(a, input, t, std::cout, extra);
  const std::string path = a.inputs.output_for(input, count, transcript_extension(a));
  std::ofstream file(path);
  ALTO_CHECK_AS(IoError, file.good(), path, ": cannot write the transcript");
  print_transcript(a, input, t, file, extra);
  ALTO_CHECK_AS(IoError, file.good(), path, ": cannot write the transcript");
}

void report_language(const TranscribeArgs& a, const std::string& input,
                     const models::WhisperTranscript& t) {
  if (a.language != "auto" || a.json || t.language.empty()) return;
  const auto& codes = tokenizers::whisper_language_codes();
  const auto it = std::find(codes.begin(), codes.end(), t.language);
  std::string name =
      it == codes.end() ? t.language : tokenizers::whisper_language_names()[it - codes.begin()];
  if (!name.empty()) name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
  std::cerr << input << ": detected language: " << name << " (" << t.language << ")" << std::endl;
}

// Segment times from the file's start when --offset skipped its beginning.
void shift(models::WhisperTranscript& t, double seconds) {
  for (auto& s : t.segments) s.start += seconds, s.end += seconds;
}

// --live: the input read as it arrives (a file paced to real time unless --no-pace), words
// printed once two passes agree, the final transcript when it ends.
void transcribe_live(const TranscribeArgs& a,
                     const std::shared_ptr<const models::WhisperTranscriber>& transcriber,
                     const models::WhisperTranscribeOptions& options, const std::string& input,
                     size_t count) {
  models::WhisperLiveOptions live;
  live.transcribe = options;
  live.step_seconds = a.step;
  models::WhisperLiveTranscriber stream(transcriber, live);
  const int rate = 16000;
  audio::DecodeOptions load = mono_at(rate, a.raw);
  load.offset = a.offset;
  load.duration = a.duration;
  const int64_t chunk = std::max<int64_t>(1, std::llround(a.step * rate / 4));
  audio::AudioStreamReader reader(input, load, chunk);
  const bool pace = !a.no_pace && input != "-";
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  LiveReport report;
  auto emit = [&](const std::vector<models::WhisperLiveWord>& words) {
    for (const auto& w : words) {
      const double latency = std::max(0.0, w.decided_at - w.end);
      report.add_latency(latency);
      if (a.json) {
        std::cout << nlohmann::json{{"file", input},
                                    {"word", w.text},
                                    {"start", w.start + a.offset},
                                    {"end", w.end + a.offset},
                                    {"decided_at", w.decided_at + a.offset},
                                    {"latency", latency}}
                         .dump()
                  << "\n";
      } else {
        std::cout << w.text << " ";
      }
    }
    std::cout.flush();
  };
  for (audio::Audio block; reader.read(block);) {
    emit(stream.accept_waveform(audio::to_tensor(block)[0]));
    if (pace) {
      const double ahead = stream.seconds_received() - elapsed();
      if (ahead > 0) std::this_thread::sleep_for(std::chrono::duration<double>(ahead));
    }
  }
  emit(stream.finish());
  models::WhisperTranscript t = stream.transcript();
  shift(t, a.offset);
  const double seconds = stream.seconds_received();
  const double rtf = seconds > 0 ? elapsed() / seconds : 0;
  if (a.json) {
    write_transcript(a, input, count, t,
                     {{"real_time_factor", rtf},
                      {"mean_word_latency", report.mean_latency()},
                      {"max_word_latency", report.max_latency()},
                      {"audio_seconds", seconds},
                      {"passes", stream.passes()}});
  } else {
    std::cout << "\n";
    if (!a.inputs.output_dir.empty()) write_transcript(a, input, count, t);
    report_language(a, input, t);
  }
  report.print(input, seconds, rtf, pace, stream.passes());
}

void run_transcribe(const TranscribeArgs& a) {
  const std::vector<std::string> inputs = a.inputs.all();
  if (is_speech_to_text(a.model.model)) {
    ALTO_CHECK(!a.raw_tokens && a.task == "transcribe" && a.max_new_tokens == 0 && !a.live,
               a.model.model,
               ": a streaming speech-to-text model transcribes (no --raw, --task translate, "
               "--max-new-tokens or --live: use --stream)");
    SpeechToTextCliOptions o;
    o.model = a.model.model, o.device = a.model.device, o.dtype = a.model.dtype;
    o.inputs = inputs;
    o.json = a.json, o.srt = a.srt, o.vtt = a.vtt, o.timestamps = a.timestamps;
    o.stream = a.stream, o.no_pace = a.no_pace, o.resample = a.resample;
    o.raw = a.raw;
    return transcribe_with_speech_to_text(o);
  }
  ALTO_CHECK(!a.stream, a.model.model,
             ": --stream is for streaming speech-to-text models (Kyutai STT); Whisper transcribes "
             "audio as it arrives with --live");
  if (is_audio_lm(a.model.model)) {
    ALTO_CHECK(
        !a.raw_tokens && !a.timestamps && !a.srt && !a.vtt && !a.live && a.task == "transcribe",
        a.model.model,
        ": an audio LM transcribes text only (no --raw, --timestamps, "
        "--srt, --vtt, --live or --task translate)");
    return transcribe_with_audio_lm(
        a.model.model, a.model.device, a.model.dtype, inputs, a.language, a.json,
        a.max_new_tokens > 0 ? std::optional<int64_t>(a.max_new_tokens) : std::nullopt);
  }
  if (a.raw_tokens) return run_raw(a);
  ALTO_CHECK(a.output.empty(),
             "-o is for --raw; transcripts go to standard output or --output-dir");
  ALTO_CHECK(a.srt + a.vtt + a.json <= 1, "give at most one of --json, --srt, --vtt");
  models::WhisperTranscribeOptions o;
  auto& d = o.decoding;
  if (a.language != "auto") d.language = tokenizers::whisper_language_code(a.language);
  d.task = a.task;
  d.timestamps = a.timestamps || a.srt || a.vtt || a.json;
  d.beam_size = a.beam;
  d.best_of = a.best_of;
  d.patience = a.patience;
  d.length_penalty = a.length_penalty;
  d.seed = a.seed;
  if (a.temperature) o.temperatures = {*a.temperature};
  o.initial_prompt = a.initial_prompt;
  o.compression_ratio_threshold =
      threshold(a.compression_ratio_threshold, "--compression-ratio-threshold");
  o.logprob_threshold = threshold(a.logprob_threshold, "--logprob-threshold");
  o.no_speech_threshold = threshold(a.no_speech_threshold, "--no-speech-threshold");
  o.condition_on_previous_text = a.condition_on_previous_text;
  o.validate();
  ALTO_CHECK(a.offset >= 0 && std::isfinite(a.offset), "--offset must be >= 0 seconds, got ",
             a.offset);
  ALTO_CHECK(!a.duration || (*a.duration > 0 && std::isfinite(*a.duration)),
             "--duration must be > 0 seconds, got ", a.duration.value_or(0));
  ALTO_CHECK(!a.live || (a.step > 0 && a.step <= 15), "--step must lie in (0, 15] seconds, got ",
             a.step);
  stage("load model");
  const auto transcriber = models::WhisperTranscriber::from_pretrained(
      a.model.model, a.model.load_options(), a.tokenizer);
  for_each_input(inputs, [&](const std::string& input) {
    if (a.live) return transcribe_live(a, transcriber, o, input, inputs.size());
    stage("read audio");
    audio::DecodeOptions load = mono_at(16000, a.raw);
    load.offset = a.offset;
    load.duration = a.duration;
    const torch::Tensor wave = load_mono(input, load);
    ALTO_CHECK(wave.size(0) > 0, input, ": no audio", a.offset > 0 ? " after --offset" : "");
    stage("transcribe");
    models::WhisperTranscribeOptions with_progress = o;
    ProgressBar bar(input, static_cast<double>(wave.size(0)) / 16000, "s");
    with_progress.progress = [&bar](double done, double) { bar.update(done); };
    models::WhisperTranscript transcript = transcriber->transcribe(wave, with_progress);
    shift(transcript, a.offset);
    write_transcript(a, input, inputs.size(), transcript);
    report_language(a, input, transcript);
  }).throw_if_failed();
}

}  // namespace

void add_embed_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "embed", "Whisper encoder embeddings of audio files (last_hidden_state) to safetensors");
  auto a = std::make_shared<EmbedArgs>();
  a->model.add_to(cmd);
  a->inputs
      .add_to(cmd, "Audio files (any format, '-' for standard input; resampled to 16 kHz mono)",
              "Output .safetensors (- for standard output): last_hidden_state [1, frames, "
              "d_model], input_features")
      ->required();
  a->raw.add_to(cmd);
  cmd->callback([a] { run_embed(*a); });
}

void add_transcribe_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "transcribe", "Transcribe or translate speech with Whisper, or transcribe with an audio LM");
  auto a = std::make_shared<TranscribeArgs>();
  a->model.add_to(cmd);
  a->inputs
      .add_to(cmd,
              "Audio files (any format; Whisper resamples to 16 kHz mono), '-' for standard "
              "input; for Kyutai STT also codes .safetensors as alto encode writes them")
      ->required();
  cmd->add_option("--output-dir", a->inputs.output_dir,
                  "A transcript file per input in this folder (.txt, .srt, .vtt or .json)");
  a->raw.add_to(cmd);
  cmd->add_option("--tokenizer", a->tokenizer,
                  "tokenizer.json / vocab.json+merges.txt folder or .tiktoken file (default: "
                  "the model folder)");
  cmd->add_option("--language", a->language,
                  "Language code or English name (en, German, ...), or auto to detect (default "
                  "auto)");
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
  cmd->add_option("--compression-ratio-threshold", a->compression_ratio_threshold,
                  "Fall back to a higher temperature above this gzip ratio; none: never "
                  "(default 2.4)");
  cmd->add_option("--logprob-threshold", a->logprob_threshold,
                  "Fall back below this mean token logprob; none: never (default -1.0)");
  cmd->add_option("--no-speech-threshold", a->no_speech_threshold,
                  "Skip a window as silence above this <|nospeech|> probability (with a failed "
                  "logprob); none: never (default 0.6)");
  cmd->add_option("--condition-on-previous-text", a->condition_on_previous_text,
                  "Prompt each window with the text before it: true or false (default true)");
  cmd->add_option("--offset", a->offset, "Start this many seconds into the input (default 0)");
  cmd->add_option("--duration", a->duration, "Transcribe this many seconds (default: to the end)");
  cmd->add_flag("--timestamps", a->timestamps, "Print timed segments");
  cmd->add_flag("--json", a->json, "One JSON object per input: language, text, segments");
  cmd->add_flag("--srt", a->srt, "SubRip subtitles");
  cmd->add_flag("--vtt", a->vtt, "WebVTT subtitles");
  auto* raw = "Reference greedy (no logit rules)";
  cmd->add_flag("--raw", a->raw_tokens,
                "Plain argmax after <|sot|><|lang|><|task|><|notimestamps|>")
      ->group(raw);
  cmd->add_option("--max-new-tokens", a->max_new_tokens, "Tokens --raw generates")->group(raw);
  cmd->add_option("-o,--output", a->output, "--raw: .safetensors with tensor 'sequences'")
      ->group(raw);
  auto* live = "Live input";
  cmd->add_flag("--live", a->live,
                "Whisper: transcribe while the audio arrives; words print once two passes agree "
                "(--json: one line per word, then the transcript)")
      ->group(live);
  cmd->add_option("--step", a->step, "--live: seconds of audio between passes (default 1)")
      ->group(live);
  cmd->add_flag("--stream", a->stream,
                "Kyutai STT: print words as they are decided while reading; several inputs run "
                "as concurrent batched streams")
      ->group(live);
  cmd->add_flag("--no-pace", a->no_pace,
                "--live, --stream: read files as fast as they decode (standard input is never "
                "paced)")
      ->group(live);
  cmd->add_flag("--resample", a->resample,
                "Kyutai STT: resample audio at another rate to the model's")
      ->group(live);
  cmd->callback([a] { run_transcribe(*a); });
}

}  // namespace alto::cli
