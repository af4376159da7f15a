// alto transcribe --model KYUTAI_STT_DIR FILE|-|CODES.safetensors... [--json|--srt|--vtt]
//                 [--stream [--no-pace]] [--resample] [--format s16le --rate R --channels C]
// Kyutai STT: offline (one pass over each file, with progress on a terminal), or --stream: words
// printed as they are decided while the audio is read (a file paced as if live, standard input
// as it comes), with the real-time factor and each word's latency behind the audio. Several
// inputs with --stream run as concurrent streams of one batch.

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/audio/stream_reader.h"
#include "alto/core/error.h"
#include "alto/models/kyutai_speech_to_text/speech_to_text_stream.h"
#include "alto/tokenizers/audio_tokenizer.h"
#include "commands.h"
#include "console.h"

namespace alto::cli {

namespace {

using models::KyutaiSpeechToText;
using models::SpeechToTextBatch;
using models::SpeechToTextTranscript;
using models::TimedWord;
using Clock = std::chrono::steady_clock;

bool is_codes_file(const std::string& path) {
  return path.size() > 12 && path.compare(path.size() - 12, 12, ".safetensors") == 0;
}

audio::DecodeOptions decode_options(const SpeechToTextCliOptions& o, int model_rate) {
  audio::DecodeOptions d;
  d.mono = true;
  if (o.resample) d.sample_rate = model_rate;
  o.raw.apply(d);
  return d;
}

void check_rate(const std::string& input, int rate, int model_rate) {
  ALTO_CHECK(rate == model_rate, input, " is at ", rate, " Hz, the model takes ", model_rate,
             " Hz: pass --resample to convert it");
}

nlohmann::json word_json(const TimedWord& w) {
  return {{"word", w.text}, {"start", w.start}, {"end", w.end}};
}

// Subtitle cues: words grouped up to 8 per cue, or until a pause of a second.
void print_subtitles(const std::vector<TimedWord>& words, bool srt) {
  if (!srt) std::cout << "WEBVTT\n\n";
  size_t cue = 0;
  for (size_t i = 0; i < words.size();) {
    size_t j = i + 1;
    while (j < words.size() && j - i < 8 && words[j].start - words[j - 1].end < 1.0) ++j;
    std::string text;
    for (size_t k = i; k < j; ++k) text += (k > i ? " " : "") + words[k].text;
    if (srt) std::cout << ++cue << "\n";
    std::cout << clock_text(words[i].start, srt ? ',' : '.', srt) << " --> "
              << clock_text(words[j - 1].end, srt ? ',' : '.', srt) << "\n"
              << text << "\n\n";
    i = j;
  }
}

void print_transcript(const SpeechToTextCliOptions& o, const std::string& input,
                      const SpeechToTextTranscript& t, const nlohmann::json& extra) {
  if (o.json) {
    nlohmann::json words = nlohmann::json::array();
    for (const auto& w : t.words) words.push_back(word_json(w));
    nlohmann::json out{
        {"file", input}, {"text", t.text}, {"words", words}, {"token_ids", t.token_ids}};
    out.update(extra);
    std::cout << out.dump() << "\n";
  } else if (o.srt || o.vtt) {
    print_subtitles(t.words, o.srt);
  } else if (o.timestamps) {
    for (const auto& w : t.words)
      std::cout << "[" << clock_text(w.start) << " --> " << clock_text(w.end) << "] " << w.text
                << "\n";
  } else {
    std::cout << t.text << "\n";
  }
  std::cout.flush();
}

SpeechToTextTranscript transcribe_offline(const std::shared_ptr<const KyutaiSpeechToText>& model,
                                          const SpeechToTextCliOptions& o,
                                          const std::string& input) {
  if (is_codes_file(input)) {
    const torch::Tensor codes = tokenizers::load_codes(input, model->codec()).codes;
    ALTO_CHECK(
        codes.dim() == 3 && codes.size(0) == 1 && codes.size(1) == model->config().num_codebooks,
        input, ": tensor 'codes' must be int64 [1, ", model->config().num_codebooks,
        ", frames] for this model, got ", codes.scalar_type(), " ", codes.sizes());
    return model->transcribe_codes(codes);
  }
  const int rate = static_cast<int>(model->sample_rate());
  const audio::Audio wave = audio::load_audio(input, decode_options(o, rate));
  check_rate(input, wave.sample_rate, rate);
  const torch::Tensor samples = audio::to_tensor(wave)[0];
  // Through a stream (equal to the offline pass) so that a long file shows its progress.
  models::SpeechToTextStream stream(model);
  ProgressBar bar(input, static_cast<double>(samples.size(0)) / rate, "s");
  const int64_t chunk = 10 * rate;
  for (int64_t at = 0; at < samples.size(0); at += chunk) {
    stream.accept_waveform(rate, samples.narrow(0, at, std::min(chunk, samples.size(0) - at)));
    bar.update(static_cast<double>(std::min(at + chunk, samples.size(0))) / rate);
  }
  stream.input_finished();
  return stream.transcript();
}

// Concurrent streams: each input read in 80 ms chunks into its own slot; every tick steps all
// of them in one batch. Files are paced to real time unless --no-pace.
void transcribe_streams(const std::shared_ptr<const KyutaiSpeechToText>& model,
                        const SpeechToTextCliOptions& o) {
  const int rate = static_cast<int>(model->sample_rate());
  const int64_t frame = model->config().frame_size;
  const size_t n = o.inputs.size();
  SpeechToTextBatch batch(model, static_cast<int64_t>(n));
  std::vector<std::unique_ptr<audio::AudioStreamReader>> readers;
  std::vector<int64_t> slots;
  for (const auto& input : o.inputs) {
    ALTO_CHECK(!is_codes_file(input), input, ": --stream reads audio, not a codes file");
    readers.push_back(
        std::make_unique<audio::AudioStreamReader>(input, decode_options(o, rate), frame));
    check_rate(input, readers.back()->sample_rate(), rate);
    slots.push_back(batch.open());
  }
  // Standard input arrives at its own pace; files are read as if they were live.
  const bool pace =
      !o.no_pace && std::find(o.inputs.begin(), o.inputs.end(), "-") == o.inputs.end();
  std::vector<LiveReport> reports(n);
  std::vector<double> audio_seconds(n, 0);
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  for (int64_t tick = 0;; ++tick) {
    bool reading = false;
    for (size_t i = 0; i < n; ++i) {
      if (!readers[i]) continue;
      audio::Audio chunk;
      if (readers[i]->read(chunk)) {
        batch.accept_waveform(slots[i], rate, audio::to_tensor(chunk)[0]);
        audio_seconds[i] += static_cast<double>(chunk.frames) / rate;
        reading = true;
      } else {
        batch.input_finished(slots[i]);
        readers[i].reset();
      }
    }
    const int64_t stepped = batch.step();
    for (size_t i = 0; i < n; ++i)
      for (const TimedWord& w : batch.take_words(slots[i])) {
        const double latency = batch.seconds_received(slots[i]) - w.end;
        reports[i].add_latency(latency);
        if (o.json) {
          nlohmann::json line = word_json(w);
          line["file"] = o.inputs[i];
          line["latency"] = latency;
          std::cout << line.dump() << "\n";
        } else {
          std::cout << (n > 1 ? o.inputs[i] + ": " : "") << w.text << (n > 1 ? "\n" : " ");
        }
        std::cout.flush();
      }
    if (!reading && stepped == 0) break;
    // Paced files arrive no faster than they play.
    if (pace && reading) {
      const double ahead = (tick + 1) * static_cast<double>(frame) / rate - elapsed();
      if (ahead > 0) std::this_thread::sleep_for(std::chrono::duration<double>(ahead));
    }
  }
  if (!o.json) std::cout << (n > 1 ? "" : "\n");
  const double wall = elapsed();
  for (size_t i = 0; i < n; ++i) {
    const double rtf = audio_seconds[i] > 0 ? wall / audio_seconds[i] : 0;
    if (o.json) {
      print_transcript(o, o.inputs[i], batch.transcript(slots[i]),
                       {{"real_time_factor", rtf},
                        {"mean_word_latency", reports[i].mean_latency()},
                        {"max_word_latency", reports[i].max_latency()},
                        {"audio_seconds", audio_seconds[i]}});
    } else {
      reports[i].print(o.inputs[i], audio_seconds[i], rtf, pace);
    }
  }
}

}  // namespace

bool is_speech_to_text(const std::string& dir) { return KyutaiSpeechToText::recognizes(dir); }

void transcribe_with_speech_to_text(const SpeechToTextCliOptions& o) {
  ALTO_CHECK(o.srt + o.vtt + o.json <= 1, "give at most one of --json, --srt, --vtt");
  const auto model =
      KyutaiSpeechToText::from_pretrained(o.model, LoadOptions::parse(o.device, o.dtype));
  if (o.stream) return transcribe_streams(model, o);
  for_each_input(o.inputs, [&](const std::string& input) {
    print_transcript(o, input, transcribe_offline(model, o, input), nlohmann::json::object());
  }).throw_if_failed();
}

}  // namespace alto::cli
