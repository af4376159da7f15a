// Times alto's CSM generation (models/csm): per generated frame, one backbone step, the depth
// decoder's K - 1 steps and Mimi's streaming decode of the frame, and the time to first audio.
// Driven by bench/csm, which times PyTorch eager on the same weights in the same run.
//
// alto_bench_csm MODEL_DIR --input PROMPT.safetensors [--dtype float32|bfloat16] [--threads N]
//     [--frames N] [--output OUT.safetensors]
//
// PROMPT holds `input_ids` [1, T] (text ids). Prints JSON: load_s, prefill_ms, first_audio_ms
// (generate's call to the first frame's audio), frame_ms (median, end to end), and medians of
// its parts measured alone: backbone_ms (one step and the head), depth_ms (the K - 1 depth
// steps), codec_ms (Mimi's decode of one frame). OUT receives `audio_codes` [frames, K].

#include <ATen/CPUGeneratorImpl.h>
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
#include "alto/models/csm/csm.h"
#include "timing.h"

namespace {

using alto::bench::Clock;
using alto::bench::median;
using alto::bench::ms_since;

int run(int argc, char** argv) {
  ALTO_CHECK(argc >= 2, "usage: alto_bench_csm MODEL_DIR --input PROMPT.safetensors [--dtype D] "
             "[--threads N] [--frames N] [--output OUT.safetensors]");
  const std::string dir = argv[1];
  std::string dtype = "float32", input, output;
  int threads = 1;
  int64_t frames = 8;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--dtype") dtype = value;
    else if (flag == "--threads") threads = std::stoi(value);
    else if (flag == "--frames") frames = std::stoll(value);
    else if (flag == "--input") input = value;
    else if (flag == "--output") output = value;
    else throw alto::InvalidArgument("unknown flag " + flag);
  }
  ALTO_CHECK(!input.empty(), "--input PROMPT.safetensors is required");
  alto::set_num_threads(threads);
  const auto t0 = Clock::now();
  const auto model = alto::models::Csm::from_pretrained(dir, alto::LoadOptions::parse("cpu", dtype));
  const double load_s = ms_since(t0) / 1e3;

  alto::models::CsmInputs inputs;
  inputs.input_ids = alto::SafetensorsFile(input).tensor("input_ids").clone();
  alto::models::CsmGenerationConfig config = model->generation_config();
  config.set_temperature(0);
  config.backbone.max_new_tokens = frames;
  model->generate(inputs, config);  // warm-up: first-touch of the weights, allocator pools
  const auto out = model->generate(inputs, config);

  // The parts alone, on the frames just generated.
  const int64_t K = model->config().num_codebooks;
  std::vector<double> backbone_ms, depth_ms, codec_ms;
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor embeds = model->embed(inputs);
    auto state = model->start(embeds.size(1) + frames);
    torch::Tensor hidden = model->forward(embeds, state).select(1, -1);
    at::Generator generator = at::detail::createCPUGenerator(0);
    auto stream = model->codec().stream({}, 1);
    for (int64_t f = 0; f < out.audio_codes.size(0); ++f) {
      const torch::Tensor frame = out.audio_codes[f];
      auto t = Clock::now();
      model->decode_depth(hidden, frame.narrow(0, 0, 1), config.depth_decoder, generator);
      depth_ms.push_back(ms_since(t));
      t = Clock::now();
      if (!(frame == model->config().codebook_eos_token_id).all().item<bool>())
        stream->decode_step(frame.view({1, K, 1}));
      codec_ms.push_back(ms_since(t));
      t = Clock::now();
      hidden = model->forward(model->embed_frames(frame.view({1, 1, K})), state).select(1, -1);
      model->logits(hidden);
      backbone_ms.push_back(ms_since(t));
    }
  }
  std::vector<double> frame_ms;
  for (double s : out.frame_seconds) frame_ms.push_back(s * 1e3);
  if (!output.empty()) alto::save_safetensors(output, {{"audio_codes", out.audio_codes}});
  std::cout << nlohmann::json{{"load_s", load_s},
                              {"frames", out.audio_codes.size(0)},
                              {"prompt_positions", inputs.input_ids.size(1)},
                              {"prefill_ms", out.prefill_seconds * 1e3},
                              {"first_audio_ms", out.first_audio_seconds * 1e3},
                              {"frame_ms", median(frame_ms)},
                              {"backbone_ms", median(backbone_ms)},
                              {"depth_ms", median(depth_ms)},
                              {"codec_ms", median(codec_ms)}}
                   .dump()
            << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  alto::keep_freed_memory();  // as the alto command does
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "alto_bench_csm: " << e.what() << "\n";
    return 1;
  }
}
