// Times alto's text decoder (models/text_decoder.h): the prefill of a prompt and greedy decoding
// token by token on the KV cache at batch 1, as generate() runs them. Driven by bench/audio_lm,
// which times PyTorch eager on the same weights in the same run and prints the bandwidth bound.
//
// alto_bench_text_decoder MODEL_DIR INPUT.safetensors [--dtype float32|bfloat16] [--threads N]
//     [--decode-tokens N] [--repeat N] [--output OUT.safetensors] [--profile TRACE.json]
//
// INPUT holds `input_ids` [1, T]. OUT receives `prefill_logits` [1, vocab] (the last prompt
// position), `tokens` [1, N] (greedy) and `logits` [N, vocab] of the decoded steps. --profile
// writes a Chrome trace of one more prefill and its decoded steps (libtorch's profiler) for their
// time breakdown.

#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "alto/core/activation_memory.h"
#include "alto/core/error.h"
#include "alto/core/safetensors.h"
#include "alto/core/threading.h"
#include "alto/models/text_decoder.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr
        << "usage: alto_bench_text_decoder MODEL_DIR INPUT.safetensors [--dtype D] "
           "[--threads N] [--decode-tokens N] [--repeat N] [--output OUT] [--profile TRACE]\n";
    return 1;
  }
  alto::keep_freed_memory();  // as the alto command does
  try {
    std::string dtype = "float32", output, profile;
    int threads = 1, decode_tokens = 16, repeat = 2;
    for (int i = 3; i + 1 < argc; i += 2) {
      const std::string flag = argv[i], value = argv[i + 1];
      if (flag == "--dtype")
        dtype = value;
      else if (flag == "--threads")
        threads = std::stoi(value);
      else if (flag == "--decode-tokens")
        decode_tokens = std::stoi(value);
      else if (flag == "--repeat")
        repeat = std::stoi(value);
      else if (flag == "--output")
        output = value;
      else if (flag == "--profile")
        profile = value;
      else
        throw alto::InvalidArgument("unknown option " + flag);
    }
    alto::set_num_threads(threads);
    const auto t_load = Clock::now();
    const auto decoder =
        alto::models::TextDecoder::from_pretrained(argv[1], alto::LoadOptions::parse("cpu", dtype));
    const double load_s = seconds_since(t_load);
    const torch::Tensor ids = alto::SafetensorsFile(argv[2]).tensor("input_ids").contiguous();
    const int64_t prompt = ids.size(1);

    // Warm-up: one short pass touches every weight once (the checkpoint is memory-mapped; the
    // eager side's weights are already in memory).
    {
      auto state = decoder->start(1, 8);
      decoder->logits(decoder->forward(decoder->embed(ids.narrow(1, 0, 8)), {}, state));
    }
    // Prefill: the whole prompt through the decoder, the last position's logits (as generate()).
    auto prefill = [&](alto::models::TextDecoderState& state) {
      const torch::Tensor hidden = decoder->forward(decoder->embed(ids), {}, state);
      return decoder->logits(hidden.select(1, prompt - 1));
    };
    // One greedy step: the token's forward on the cache, its logits.
    auto decode_step = [&](const torch::Tensor& token, alto::models::TextDecoderState& state) {
      return decoder->logits(decoder->forward(decoder->embed(token), {}, state).select(1, 0));
    };
    double prefill_s = 1e30;
    torch::Tensor prefill_logits;
    for (int r = 0; r < repeat; ++r) {
      auto state = decoder->start(1, prompt + decode_tokens);
      const auto t0 = Clock::now();
      prefill_logits = prefill(state);
      prefill_s = std::min(prefill_s, seconds_since(t0));
    }
    if (!profile.empty()) {
      auto state = decoder->start(1, prompt + decode_tokens);
      torch::autograd::profiler::RecordProfile guard(profile);
      torch::Tensor logits = prefill(state);
      for (int step = 0; step < decode_tokens; ++step)
        logits = decode_step(logits.argmax(-1, true), state);
    }

    // Greedy decoding after the prompt, one token per forward on the cache.
    auto state = decoder->start(1, prompt + decode_tokens);
    torch::Tensor logits = prefill(state);
    // Each step's logits are copied out after its timing, so that the step's own fresh logits
    // reuse the freed memory of the step before as in a generation loop (kept, every step faulted
    // in 600 KB of new pages: ~1 ms of a 11 ms Qwen2-0.5B bfloat16 step). The copy runs on this
    // thread alone: libgomp's team would spin through the next step (README, Threads).
    const alto::TorchThreads one_thread(1);
    std::vector<torch::Tensor> tokens;
    torch::Tensor step_logits = torch::empty({decode_tokens, logits.size(-1)}, torch::kFloat32);
    std::vector<double> step_s;
    for (int step = 0; step < decode_tokens; ++step) {
      const torch::Tensor token = logits.argmax(-1, true);
      tokens.push_back(token);
      const auto t0 = Clock::now();
      logits = decode_step(token, state);
      step_s.push_back(seconds_since(t0));
      step_logits[step].copy_(logits.reshape({-1}));
    }
    std::vector<double> sorted = step_s;
    std::sort(sorted.begin(), sorted.end());
    nlohmann::json out = {{"load_s", load_s},
                          {"prompt_tokens", prompt},
                          {"prefill_s", prefill_s},
                          {"decode_s", step_s},
                          {"median_token_s", sorted.empty() ? 0.0 : sorted[sorted.size() / 2]}};
    if (!output.empty())
      alto::save_safetensors(output, {{"prefill_logits", prefill_logits.to(torch::kFloat32)},
                                      {"tokens", torch::cat(tokens, 1)},
                                      {"logits", step_logits}});
    std::cout << out.dump() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "alto_bench_text_decoder: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
