// Times alto's Kyutai STT streaming step (models/kyutai_speech_to_text): one 80 ms frame through
// Mimi's streaming encoder and one decoder step, for one stream and for N concurrent streams of
// a SpeechToTextBatch (every stream fed one frame per tick, one batched decoder step per tick).
// Driven by bench/kyutai_stt, which times PyTorch eager on the same weights in the same run.
//
// alto_bench_kyutai_stt MODEL_DIR [--dtype float32|bfloat16] [--threads N] [--steps N]
//     [--streams 1,2,4,8] [--input IN.safetensors] [--output OUT.safetensors]
// alto_bench_kyutai_stt MODEL_DIR --long-seconds 3600   (one long stream: memory per minute)
//
// Prints JSON: load_s, step_ms (median ms per frame, one stream: codec and decoder), codec_ms,
// batch_ms {streams: median ms per tick}. INPUT holds `audio` [samples] (else seeded noise);
// OUT receives the single stream's `token_ids` (the audio-BOS step, then one per frame of the
// silence prefix and the audio) for the driver's comparison with the eager side.

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "alto/core/activation_memory.h"
#include "alto/core/error.h"
#include "alto/core/safetensors.h"
#include "alto/core/threading.h"
#include "alto/models/kyutai_speech_to_text/speech_to_text_stream.h"
#include "timing.h"

namespace {

using alto::bench::Clock;
using alto::bench::median;
using alto::bench::ms_since;
using alto::bench::resident_kb;

// One stream fed `seconds` of noise in 80 ms chunks: resident memory every simulated minute.
int long_stream(const std::string& dir, int64_t seconds) {
  const auto model = alto::models::KyutaiSpeechToText::from_pretrained(dir);
  alto::models::SpeechToTextStream stream(model);
  const int64_t frame = model->config().frame_size, rate = model->sample_rate();
  const torch::Tensor noise = torch::randn({rate}) * 0.1;
  nlohmann::json rss = nlohmann::json::array();
  const auto t0 = Clock::now();
  for (int64_t s = 0; s < seconds; ++s) {
    for (int64_t at = 0; at + frame <= rate; at += frame)
      stream.accept_waveform(rate, noise.narrow(0, at, frame));
    stream.accept_waveform(rate, noise.narrow(0, rate / frame * frame, rate % frame));
    if ((s + 1) % 60 == 0) rss.push_back({{"seconds", s + 1}, {"rss_kb", resident_kb()}});
  }
  std::cout << nlohmann::json{{"seconds", seconds},
                              {"wall_s", ms_since(t0) / 1000},
                              {"steps", stream.transcript().token_ids.size()},
                              {"rss", rss}}
                   .dump()
            << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: alto_bench_kyutai_stt MODEL_DIR [--dtype D] [--threads N] [--steps N] "
                 "[--streams 1,2,4] [--input IN.safetensors] [--output OUT.safetensors]\n";
    return 1;
  }
  alto::keep_freed_memory();  // as the alto command does
  try {
    std::string dtype = "float32", streams_list = "1,2,4", input, output;
    int threads = 1, steps = 20;
    int64_t long_seconds = 0;
    for (int i = 2; i + 1 < argc; i += 2) {
      const std::string flag = argv[i], value = argv[i + 1];
      if (flag == "--dtype")
        dtype = value;
      else if (flag == "--threads")
        threads = std::stoi(value);
      else if (flag == "--steps")
        steps = std::stoi(value);
      else if (flag == "--streams")
        streams_list = value;
      else if (flag == "--input")
        input = value;
      else if (flag == "--output")
        output = value;
      else if (flag == "--long-seconds")
        long_seconds = std::stoll(value);
      else
        throw alto::InvalidArgument("unknown option " + flag);
    }
    alto::set_num_threads(threads);
    if (long_seconds > 0) return long_stream(argv[1], long_seconds);
    const auto t_load = Clock::now();
    const auto model = alto::models::KyutaiSpeechToText::from_pretrained(
        argv[1], alto::LoadOptions::parse("cpu", dtype));
    const double load_s = ms_since(t_load) / 1000;
    const int64_t frame = model->config().frame_size;
    // The driver's frames (the eager side encodes the same), or seeded noise.
    const torch::Tensor audio =
        input.empty() ? torch::randn({steps * frame}, torch::Generator()) * 0.1
                      : alto::SafetensorsFile(input).tensor("audio").reshape({-1}).contiguous();
    const int64_t frames = audio.size(0) / frame;

    // One stream: the first frame's call also runs the silence prefix and the audio-BOS step,
    // so it is left out of the timings.
    nlohmann::json result;
    {
      alto::models::SpeechToTextStream stream(model);
      std::vector<double> step_ms, codec_ms;
      auto codec = model->codec().stream();
      for (int64_t f = 0; f < frames; ++f) {
        const torch::Tensor chunk = audio.narrow(0, f * frame, frame);
        auto t0 = Clock::now();
        stream.accept_waveform(model->sample_rate(), chunk);
        if (f > 0) step_ms.push_back(ms_since(t0));
        t0 = Clock::now();
        codec->encode_step(chunk.view({1, 1, -1}));
        if (f > 0) codec_ms.push_back(ms_since(t0));
      }
      result["step_ms"] = median(step_ms);
      result["codec_ms"] = median(codec_ms);
      if (!output.empty()) {
        const auto ids = stream.transcript().token_ids;
        alto::save_safetensors(output, {{"token_ids", torch::tensor(ids, torch::kInt64)}}, {});
      }
    }
    // N streams: each tick feeds every stream one frame and steps them in one batch.
    nlohmann::json batch_ms = nlohmann::json::object();
    std::stringstream list(streams_list);
    for (std::string item; std::getline(list, item, ',');) {
      const int64_t n = std::stoll(item);
      alto::models::SpeechToTextBatch batch(model, n);
      std::vector<int64_t> slots;
      for (int64_t i = 0; i < n; ++i) slots.push_back(batch.open());
      std::vector<double> tick_ms;
      for (int64_t f = -1; f < frames; ++f) {
        const auto t0 = Clock::now();
        for (int64_t s : slots)
          batch.accept_waveform(s, model->sample_rate(),
                                f < 0 ? torch::zeros({frame}) : audio.narrow(0, f * frame, frame));
        batch.run();
        if (f >= 0) tick_ms.push_back(ms_since(t0));
      }
      batch_ms[item] = median(tick_ms);
    }
    result["batch_ms"] = batch_ms;
    result["load_s"] = load_s;
    result["threads"] = threads;
    result["dtype"] = dtype;
    std::cout << result.dump() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "alto_bench_kyutai_stt: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
