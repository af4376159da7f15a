// Times alto's codec tokenizers (EnCodec, Mimi, DAC through alto::tokenizers::AudioTokenizer):
// offline encode and decode of one signal at each requested thread count and, for codecs that
// stream, frame-by-frame encode_step + decode_step latency. Driven by bench/codecs, which times
// the pure-torch references (bench/reference/) on the same checkpoint folders in the same run.
//
// alto_bench_codecs MODEL_DIR INPUT.safetensors [--threads 1,2] [--repeat N] [--bandwidth KBPS]
//     [--num-quantizers N] [--stream-frames N] [--output OUT.safetensors] [--profile PREFIX]
//     [--dtype float32|bfloat16]
//
// INPUT holds `audio` float32 [1, channels, samples] at the codec's rate. OUT receives `codes`
// (encode's layout), `scales` (EnCodec with normalize), `audio` (decode of those codes) and, with
// --stream-frames, `stream_codes` / `stream_audio` of the streaming pass. --profile writes Chrome
// traces PREFIX-encode.json and PREFIX-decode.json of one pass each (libtorch's profiler) on the
// first thread count, for the driver's time breakdown, and with --stream-frames
// PREFIX-stream.json of one streaming pass. --dtype loads the weights in that compute dtype
// (alto::LoadOptions); audio in and out stays float32.
//
// --soak SECONDS instead runs one full-duplex stream (encode_step, then decode_step, a second of
// INPUT's audio at a time, looped) for that much audio and prints its resident memory at the
// start, after one minute and at the end: a stream's memory must stay flat (issue 20).

#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "alto/core/activation_memory.h"
#include "alto/core/error.h"
#include "alto/core/safetensors.h"
#include "alto/core/threading.h"
#include "alto/tokenizers/audio_tokenizer.h"
#include "timing.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Best of `repeat` runs after one warm-up run (allocator, OpenBLAS buffers); repeat 0 times the
// warm-up run itself, for codecs too slow to run twice.
double best_seconds(int repeat, const std::function<void()>& fn) {
  const auto t_first = Clock::now();
  fn();
  double best = seconds_since(t_first);
  if (repeat > 0) best = 1e30;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = Clock::now();
    fn();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

std::vector<int> parse_threads(const std::string& list) {
  std::vector<int> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

double percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const auto index = static_cast<size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

nlohmann::json latency_ms(const std::vector<double>& seconds) {
  std::vector<double> ms;
  for (double s : seconds) ms.push_back(1e3 * s);
  return {
      {"median", percentile(ms, 0.5)}, {"p99", percentile(ms, 0.99)}, {"max", percentile(ms, 1.0)}};
}

struct StreamResult {
  nlohmann::json timings;
  torch::Tensor codes, audio;
};

// One frame (hop_length samples) per call: encode_step, then decode_step on the codes it
// returned, as a full-duplex speech model would use the codec.
StreamResult run_stream(const alto::tokenizers::AudioTokenizer& model,
                        const alto::tokenizers::AudioEncodeOptions& options,
                        const torch::Tensor& audio, int64_t frames) {
  const int64_t hop = model.hop_length();
  auto stream = model.stream(options);
  std::vector<double> encode_s, decode_s, total_s;
  std::vector<torch::Tensor> codes, out;
  for (int64_t f = 0; f < frames; ++f) {
    const torch::Tensor chunk = audio.narrow(-1, f * hop, hop);
    const auto t0 = Clock::now();
    const torch::Tensor c = stream->encode_step(chunk);
    const double e = seconds_since(t0);
    const auto t1 = Clock::now();
    const torch::Tensor a = stream->decode_step(c);
    const double d = seconds_since(t1);
    encode_s.push_back(e);
    decode_s.push_back(d);
    total_s.push_back(e + d);
    codes.push_back(c);
    out.push_back(a);
  }
  return {{{"frames", frames},
           {"encode_ms", latency_ms(encode_s)},
           {"decode_ms", latency_ms(decode_s)},
           {"total_ms", latency_ms(total_s)}},
          torch::cat(codes, -1),
          torch::cat(out, -1)};
}

nlohmann::json soak(const alto::tokenizers::AudioTokenizer& model, const torch::Tensor& audio,
                    int64_t seconds) {
  const int64_t rate = model.sample_rate();
  ALTO_CHECK(audio.size(-1) >= rate, "--soak needs at least a second of input audio");
  auto stream = model.stream();
  nlohmann::json rss;
  int64_t frames = 0;
  const auto t0 = Clock::now();
  for (int64_t s = 0; s < seconds; ++s) {
    const int64_t at = s * rate % (audio.size(-1) / rate * rate);
    const torch::Tensor codes = stream->encode_step(audio.narrow(-1, at, rate));
    stream->decode_step(codes);
    frames += codes.size(-1);
    if (s == 0) rss["start_kb"] = alto::bench::resident_kb();
    if (s + 1 == 60) rss["after_60s_kb"] = alto::bench::resident_kb();
  }
  rss["end_kb"] = alto::bench::resident_kb();
  return {{"seconds", seconds},
          {"frames", frames},
          {"wall_s", seconds_since(t0)},
          {"real_time_factor", seconds_since(t0) / static_cast<double>(seconds)},
          {"rss", rss}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: alto_bench_codecs MODEL_DIR INPUT.safetensors [--threads 1,2] "
                 "[--repeat N] [--bandwidth KBPS] [--num-quantizers N] [--stream-frames N] "
                 "[--output OUT] [--profile PREFIX] [--soak SECONDS] [--dtype D]\n";
    return 1;
  }
  alto::keep_freed_memory();  // as the alto command does
  try {
    const std::string model_dir = argv[1];
    const std::string input_path = argv[2];
    std::vector<int> threads = {1, 2};
    int repeat = 2;
    int64_t stream_frames = 0, soak_seconds = 0;
    alto::tokenizers::AudioEncodeOptions options;
    std::string output, profile, dtype = "float32";
    for (int i = 3; i + 1 < argc; i += 2) {
      const std::string flag = argv[i], value = argv[i + 1];
      if (flag == "--threads")
        threads = parse_threads(value);
      else if (flag == "--repeat")
        repeat = std::stoi(value);
      else if (flag == "--bandwidth")
        options.bandwidth = std::stod(value);
      else if (flag == "--num-quantizers")
        options.num_quantizers = std::stoll(value);
      else if (flag == "--stream-frames")
        stream_frames = std::stoll(value);
      else if (flag == "--output")
        output = value;
      else if (flag == "--profile")
        profile = value;
      else if (flag == "--soak")
        soak_seconds = std::stoll(value);
      else if (flag == "--dtype")
        dtype = value;
      else
        throw alto::InvalidArgument("unknown option " + flag);
    }
    torch::NoGradGuard no_grad;
    const auto t_load = Clock::now();
    const auto model = alto::tokenizers::AudioTokenizer::from_pretrained(
        model_dir, alto::LoadOptions::parse("cpu", dtype));
    const double load_s = seconds_since(t_load);
    const long load_peak_kb = alto::bench::peak_resident_kb();
    const torch::Tensor audio = alto::SafetensorsFile(input_path).tensor("audio").contiguous();
    if (soak_seconds > 0) {
      alto::set_num_threads(threads.front());
      std::cout << nlohmann::json{{"model_type", model->model_type()},
                                  {"load_s", load_s},
                                  {"load_peak_kb", load_peak_kb},
                                  {"soak", soak(*model, audio, soak_seconds)}}
                       .dump()
                << "\n";
      return 0;
    }

    nlohmann::json out = {{"model_type", model->model_type()},
                          {"dtype", dtype},
                          {"load_s", load_s},
                          {"load_peak_kb", load_peak_kb},
                          {"sample_rate", model->sample_rate()},
                          {"hop_length", model->hop_length()},
                          {"num_codebooks", model->num_codebooks(options)},
                          {"options", options.to_string()}};
    alto::tokenizers::AudioCodes codes;
    torch::Tensor decoded;
    for (int t : threads) {
      alto::set_num_threads(t);
      out["encode_s"][std::to_string(t)] =
          best_seconds(repeat, [&] { codes = model->encode(audio, options); });
      out["decode_s"][std::to_string(t)] =
          best_seconds(repeat, [&] { decoded = model->decode(codes); });
    }
    if (!profile.empty()) {
      alto::set_num_threads(threads.front());
      {
        torch::autograd::profiler::RecordProfile guard(profile + "-encode.json");
        model->encode(audio, options);
      }
      torch::autograd::profiler::RecordProfile guard(profile + "-decode.json");
      model->decode(codes);
    }
    std::vector<std::pair<std::string, torch::Tensor>> saved = {{"codes", codes.codes},
                                                                {"audio", decoded}};
    if (codes.scales.defined()) saved.emplace_back("scales", codes.scales);
    if (stream_frames > 0 && model->supports_streaming()) {
      for (int t : threads) {
        alto::set_num_threads(t);
        run_stream(*model, options, audio, std::min<int64_t>(stream_frames, 8));  // warm-up
        StreamResult result = run_stream(*model, options, audio, stream_frames);
        if (!profile.empty() && t == threads.front()) {
          torch::autograd::profiler::RecordProfile guard(profile + "-stream.json");
          run_stream(*model, options, audio, stream_frames);
        }
        out["stream"][std::to_string(t)] = result.timings;
        if (t == threads.front()) {
          saved.emplace_back("stream_codes", result.codes);
          saved.emplace_back("stream_audio", result.audio);
        }
      }
    }
    if (!output.empty()) alto::save_safetensors(output, saved);
    std::cout << out.dump() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "alto_bench_codecs: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
