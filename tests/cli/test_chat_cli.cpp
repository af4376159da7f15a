// alto chat and alto transcribe with audio LMs, driven as a user would, against the golden
// Qwen2-Audio folder (transformers' processor, chat template and greedy generate).

#include <torch/torch.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/audio/save.h"
#include "alto/models/audio_language_model.h"
#include "cli/run_cli.h"
#include "models/golden_model.h"
#include "test_util.h"

using alto::test::GoldenModel;
using alto::test::run_cli;
using nlohmann::json;

namespace {
std::vector<int64_t> new_tokens(const GoldenModel& golden, const std::string& p) {
  const torch::Tensor all = golden.tensor(p + "generated_ids")[0];
  const int64_t prompt = golden.tensor(p + "input_ids").size(1);
  const torch::Tensor tail = all.narrow(0, prompt, all.size(0) - prompt).contiguous();
  return std::vector<int64_t>(tail.data_ptr<int64_t>(), tail.data_ptr<int64_t>() + tail.numel());
}
std::vector<int64_t> ids(const torch::Tensor& t) {
  const torch::Tensor flat = t.flatten().contiguous();
  return std::vector<int64_t>(flat.data_ptr<int64_t>(), flat.data_ptr<int64_t>() + flat.numel());
}
}  // namespace

TEST_CASE("alto chat reproduces transformers' prompt and greedy reply", "[cli][qwen2_audio]") {
  const GoldenModel golden("qwen2-audio-tiny-random");
  const std::string model = "--model " + golden.dir();
  const std::string wav = golden.dir() + "/input.wav", wav2 = golden.dir() + "/input_2.wav";
  const json single = json::parse(run_cli("chat " + model + " --audio " + wav +
                                          " --max-new-tokens 12 --json 'What does the person say?'"));
  CHECK(single["input_ids"].get<std::vector<int64_t>>() == ids(golden.tensor("input_ids")));
  CHECK(single["generated_ids"].get<std::vector<int64_t>>() == new_tokens(golden, ""));
  CHECK(single["text"] == golden.metadata("decoded_new_tokens"));
  CHECK(single["prompt"] == golden.metadata("prompt_text"));
  CHECK(single["timings"]["per_token_s"].size() == 11);
  CHECK(single["timings"]["prefill_s"].get<double>() > 0);

  const json pair = json::parse(run_cli("chat " + model + " --audio " + wav + " --audio " + wav2 +
                                        " --max-new-tokens 12 --temperature 0 --json "
                                        "'Which of the two clips is longer?'"));
  CHECK(pair["input_ids"].get<std::vector<int64_t>>() == ids(golden.tensor("pair_input_ids")));
  CHECK(pair["generated_ids"].get<std::vector<int64_t>>() == new_tokens(golden, "pair_"));
  CHECK(pair["audio_tokens"].get<std::vector<int64_t>>() ==
        ids(golden.tensor("pair_num_audio_tokens")));

  // Streamed to stdout as the tokens come: the same text.
  CHECK(run_cli("chat " + model + " --audio " + wav + " --max-new-tokens 12 "
                "'What does the person say?'") == golden.metadata("decoded_new_tokens") + "\n");
  // Sampling is seeded: the same seed, the same reply.
  const std::string sampled = "chat " + model + " --temperature 0.9 --top-p 0.9 --max-new-tokens "
                              "8 --json --seed 7 Hello";
  CHECK(json::parse(run_cli(sampled))["generated_ids"] ==
        json::parse(run_cli(sampled))["generated_ids"]);
}

TEST_CASE("alto chat --dtype int8 quantizes the text decoder and says so", "[cli][qwen2_audio]") {
  const GoldenModel golden("qwen2-audio-tiny-random");
  const json out = json::parse(run_cli("chat --model " + golden.dir() + " --audio " + golden.dir() +
                                       "/input.wav --dtype int8 --max-new-tokens " +
                                       "12 --json 'What does the person say?'"));
  CHECK(out["precision"] == "int8");
  // The library test's bound on this checkpoint: transformers' greedy reply kept for at least
  // its first 8 tokens (10 measured).
  const std::vector<int64_t> reply = out["generated_ids"], reference = new_tokens(golden, "");
  REQUIRE(reply.size() == reference.size());
  CHECK(std::equal(reply.begin(), reply.begin() + 8, reference.begin()));
  // A model that keeps its weights in the compute dtype says so.
  const GoldenModel whisper("whisper-tiny-random");
  const std::string err =
      run_cli("embed --model " + whisper.dir() + " --dtype int8 " + golden.dir() +
                  "/input.wav -o " + alto::test::temp_path("int8-embed.safetensors"),
              1, alto::test::Stderr::kMerge);
  CHECK(err.find("the Whisper encoder keeps its weights in the compute dtype") !=
        std::string::npos);
}

TEST_CASE("alto transcribe runs an audio LM's transcription prompt", "[cli][qwen2_audio]") {
  const GoldenModel golden("qwen2-audio-tiny-random");
  const json out = json::parse(run_cli("transcribe --model " + golden.dir() + " " + golden.dir() +
                                       "/input.wav --max-new-tokens 6 --json"));
  // The library's transcription request, greedy.
  const auto model = alto::models::AudioLanguageModel::from_pretrained(golden.dir());
  const torch::Tensor wave =
      alto::audio::to_tensor(alto::audio::load_audio(golden.dir() + "/input.wav"))[0];
  alto::models::GenerationConfig config = model->generation_config();
  config.max_new_tokens = 6;
  const auto inputs = model->transcription_inputs(wave);
  CHECK(out["prompt"] == inputs.prompt);
  CHECK(inputs.prompt.find("Detect the language and recognize the speech:") != std::string::npos);
  CHECK(out["generated_ids"].get<std::vector<int64_t>>() ==
        ids(model->generate(inputs, config).generated_ids));
}

TEST_CASE("alto chat names bad input", "[cli][qwen2_audio]") {
  using alto::test::Stderr;
  const GoldenModel golden("qwen2-audio-tiny-random");
  const std::string long_wav = alto::test::temp_path("long.wav");
  alto::audio::save_audio(long_wav, alto::test::sine(440, 0.3, 16000, 16000 * 31, 1));
  CHECK_THAT(run_cli("chat --model " + golden.dir() + " --audio " + long_wav + " hi", 1,
                     Stderr::kMerge),
             Catch::Contains("longer than the 30 s"));
  CHECK_THAT(run_cli("chat --model " + alto::test::data_path("models/voxtral-tiny-random") +
                         " --audio " + golden.dir() + "/input.wav hi",
                     1, Stderr::kMerge),
             Catch::Contains("tekken.json"));
  CHECK_THAT(run_cli("chat --model " + alto::test::data_path("models/mimi-tiny-random") + " hi", 1,
                     Stderr::kMerge),
             Catch::Contains("unknown audio language model model_type 'mimi'"));
  CHECK_THAT(run_cli("chat --model " + golden.dir() + " --audio /nonexistent.wav hi", 1,
                     Stderr::kMerge),
             Catch::Contains("/nonexistent.wav"));
}
