// Times alto's Whisper encoder on one 30 s window (and the cached decoder per token) at each
// requested thread count, and measures libtorch's GEMM on the BLAS core OpenBLAS loaded, on
// Prescott (a wrong detection) and on the core alto then chooses. Driven by bench/whisper, which
// times PyTorch eager on the same weights in the same run and reports the ratios.
//
// alto_bench_whisper MODEL_DIR INPUT.safetensors [--threads 1,2] [--repeat N]
//     [--output OUT.safetensors] [--profile TRACE.json] [--decode-tokens N]
//     [--dtype float32|bfloat16]
//
// INPUT holds `input_features` [1, num_mel_bins, 3000]. OUT receives `last_hidden_state` and, with
// --decode-tokens, `tokens` and `logits` of the decoded steps. --profile writes a Chrome trace of
// one encoder pass (libtorch's profiler) for the driver's time breakdown. --dtype loads the model
// in that compute dtype (alto::LoadOptions); the input features are converted to it.

#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "alto/core/activation_memory.h"
#include "alto/core/error.h"
#include "alto/core/internal/blas.h"
#include "alto/core/safetensors.h"
#include "alto/core/threading.h"
#include "alto/models/whisper/whisper.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double best_seconds(int repeat, const std::function<void()>& fn) {
  fn();  // warm-up: allocator, OpenBLAS buffers
  double best = 1e30;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = Clock::now();
    fn();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

// A Whisper-tiny projection shape: 1500 frames x d_model 384 -> ffn 1536.
double gemm_gflops(int repeat) {
  const auto a = torch::randn({1500, 384}), b = torch::randn({384, 1536});
  const double s = best_seconds(repeat, [&] { torch::mm(a, b); });
  return 2.0 * 1500 * 384 * 1536 / s / 1e9;
}

std::vector<int> parse_threads(const std::string& list) {
  std::vector<int> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

nlohmann::json gemm_report(const std::vector<int>& threads, int repeat) {
  nlohmann::json out = nlohmann::json::object();
  const alto::BlasInfo info = alto::blas_info();
  if (!info.dynamic) return out;
  auto measure = [&] {
    nlohmann::json row = {{"core", alto::blas_info().core}};
    for (int t : threads) {
      alto::set_num_threads(t);
      row["gflops"][std::to_string(t)] = gemm_gflops(repeat);
    }
    return row;
  };
  const std::string chosen = info.core;
  alto::set_blas_core(info.loaded_core);
  out["as_loaded"] = measure();
  alto::set_blas_core("Prescott");
  out["prescott"] = measure();
  // What alto does with a Prescott detection (unless the user's environment says otherwise).
  const alto::BlasInfo fixed = alto::configure_blas();
  out["after_choice_from_prescott"] = measure();
  out["after_choice_from_prescott"]["reason"] = fixed.reason;
  alto::set_blas_core(chosen);
  out["current"] = measure();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: alto_bench_whisper MODEL_DIR INPUT.safetensors [--threads 1,2] "
                 "[--repeat N] [--output OUT] [--profile TRACE] [--decode-tokens N] "
                 "[--dtype D]\n";
    return 1;
  }
  alto::keep_freed_memory();  // as the alto command does
  try {
    const std::string model_dir = argv[1];
    const std::string input_path = argv[2];
    std::vector<int> threads = {1, 2};
    int repeat = 3, decode_tokens = 0;
    std::string output, profile, dtype = "float32";
    for (int i = 3; i + 1 < argc; i += 2) {
      const std::string flag = argv[i], value = argv[i + 1];
      if (flag == "--threads")
        threads = parse_threads(value);
      else if (flag == "--repeat")
        repeat = std::stoi(value);
      else if (flag == "--output")
        output = value;
      else if (flag == "--profile")
        profile = value;
      else if (flag == "--decode-tokens")
        decode_tokens = std::stoi(value);
      else if (flag == "--dtype")
        dtype = value;
      else
        throw alto::InvalidArgument("unknown option " + flag);
    }
    const auto t_load = Clock::now();
    const alto::models::Whisper model =
        *alto::models::Whisper::from_pretrained(model_dir, alto::LoadOptions::parse("cpu", dtype));
    const double load_s = seconds_since(t_load);
    const torch::Tensor features = alto::SafetensorsFile(input_path)
                                       .tensor("input_features")
                                       .to(model.load_options().dtype)
                                       .contiguous();

    nlohmann::json out = {{"load_s", load_s}, {"blas_at_start", alto::blas_info().to_string()}};
    torch::Tensor hidden;
    for (int t : threads) {
      alto::set_num_threads(t);
      out["encode_s"][std::to_string(t)] =
          best_seconds(repeat, [&] { hidden = model.encode(features); });
    }
    if (!profile.empty()) {
      alto::set_num_threads(threads.front());
      torch::autograd::profiler::RecordProfile guard(profile);
      model.encode(features);
    }

    std::vector<std::pair<std::string, torch::Tensor>> saved = {{"last_hidden_state", hidden}};
    if (decode_tokens > 0) {
      // Greedy from <|startoftranscript|>, one token per call on the KV cache: the steady-state
      // cost of a generated token.
      const auto& config = model.config();
      for (int t : threads) {
        alto::set_num_threads(t);
        auto state = model.start(hidden);
        auto token = torch::full({1, 1}, config.decoder_start_token_id, torch::kInt64);
        std::vector<torch::Tensor> tokens, logits;
        std::vector<double> step_s;
        for (int step = 0; step < decode_tokens; ++step) {
          const auto t0 = Clock::now();
          const torch::Tensor l = model.decode(token, state);
          step_s.push_back(seconds_since(t0));
          tokens.push_back(token);
          logits.push_back(l);
          token = l.select(1, -1).argmax(-1, true);
        }
        // The first step also builds the cross-attention cache; the median is a token's cost.
        const double first = step_s.front();
        std::vector<double> rest(step_s.begin() + 1, step_s.end());
        std::sort(rest.begin(), rest.end());
        out["decode"][std::to_string(t)] = {
            {"first_token_s", first},
            {"median_token_s", rest.empty() ? first : rest[rest.size() / 2]}};
        if (t == threads.front()) {
          saved.emplace_back("tokens", torch::cat(tokens, 1));
          saved.emplace_back("logits", torch::cat(logits, 1));
        }
      }
    }
    out["gemm"] = gemm_report(threads, repeat);
    if (!output.empty()) alto::save_safetensors(output, saved);
    std::cout << out.dump() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "alto_bench_whisper: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
