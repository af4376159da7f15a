// models/qwen2_audio: the processor, encoder, projector, merged embeddings, logits and greedy
// continuation of transformers 5.17's Qwen2AudioForConditionalGeneration on the golden folder
// (one clip, and two clips of different lengths in one prompt).

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/core/error.h"
#include "alto/core/safetensors.h"
#include "alto/models/qwen2_audio/qwen2_audio.h"
#include "models/golden_model.h"
#include "test_util.h"

using alto::models::AudioLanguageModel;
using alto::models::AudioLmInputs;
using alto::models::ChatMessage;
using alto::models::ChatPart;
using alto::test::GoldenModel;

namespace {

torch::Tensor clip(const GoldenModel& golden, const std::string& file) {
  return alto::audio::to_tensor(alto::audio::load_audio(golden.dir() + "/" + file))[0];
}

std::vector<ChatMessage> conversation(const GoldenModel& golden, bool pair) {
  std::vector<ChatPart> parts{ChatPart::audio_part(clip(golden, "input.wav"))};
  if (pair) parts.push_back(ChatPart::audio_part(clip(golden, "input_2.wav")));
  parts.push_back(ChatPart::text_part(pair ? "Which of the two clips is longer?"
                                           : "What does the person say?"));
  return {{"user", parts}};
}

// The processor outputs exactly as transformers gave them to the model.
AudioLmInputs golden_inputs(const GoldenModel& golden, const std::string& p) {
  AudioLmInputs in;
  in.input_ids = golden.tensor(p + "input_ids");
  in.attention_mask = golden.tensor(p + "attention_mask");
  in.input_features = golden.tensor(p + "input_features");
  in.feature_attention_mask = golden.tensor(p + "feature_attention_mask");
  return in;
}

const std::pair<std::string, torch::Tensor>* find(const alto::models::Intermediates& inter,
                                                    const std::string& name) {
  for (const auto& entry : inter.tensors)
    if (entry.first == name) return &entry;
  FAIL("no intermediate " << name);
  return nullptr;
}

}  // namespace

TEST_CASE("Qwen2-Audio's processor equals transformers'", "[qwen2_audio][models]") {
  const GoldenModel golden("qwen2-audio-tiny-random");
  const auto model = AudioLanguageModel::from_pretrained(golden.dir());
  CHECK(model->model_type() == "qwen2_audio");
  for (const std::string p : {"", "pair_"}) {
    INFO("case " << (p.empty() ? "single" : "pair"));
    const AudioLmInputs in = model->process(conversation(golden, !p.empty()));
    CHECK(in.prompt == golden.metadata(p + "prompt_text"));
    golden.require_matches(in.input_ids, p + "input_ids");
    golden.require_matches(in.attention_mask, p + "attention_mask");
    golden.require_matches(in.input_features, p + "input_features");
    golden.require_matches(in.feature_attention_mask, p + "feature_attention_mask");
    golden.require_matches(torch::tensor(in.audio_tokens), p + "num_audio_tokens");
  }
}

TEST_CASE("Qwen2-Audio's encoder, projector, logits and greedy output equal transformers'",
          "[qwen2_audio][models]") {
  const GoldenModel golden("qwen2-audio-tiny-random");
  const auto model = AudioLanguageModel::from_pretrained(golden.dir());
  for (const std::string p : {"", "pair_"}) {
    INFO("case " << (p.empty() ? "single" : "pair"));
    const AudioLmInputs in = golden_inputs(golden, p);
    alto::models::Intermediates inter;
    const torch::Tensor logits = model->logits(in, &inter);
    golden.require_matches(find(inter, "last_hidden_state")->second,
                           p + "audio_encoder_last_hidden_state");
    golden.require_matches(find(inter, "multi_modal_projector")->second,
                           p + "audio_projector_output");
    golden.require_matches(find(inter, "inputs_embeds")->second, p + "inputs_embeds");
    golden.require_matches(logits, p + "logits");
    const auto embeddings = model->embed(in);
    golden.require_matches(embeddings.audio_embeds, p + "audio_embeds_merged");
    CHECK(torch::equal(embeddings.audio_positions,
                       (in.input_ids[0] == model->audio_token_id()).nonzero().flatten()));

    alto::models::GenerationConfig config = model->generation_config();
    config.max_new_tokens = 12;
    alto::models::GenerateOptions options;
    options.return_logits = true;
    std::vector<int64_t> streamed;
    options.on_token = [&](int64_t, int64_t token) {
      streamed.push_back(token);
      return true;
    };
    const auto result = model->generate(in, config, options);
    const torch::Tensor expected = golden.tensor(p + "generated_ids");
    const int64_t prompt = in.input_ids.size(1);
    CHECK(torch::equal(result.generated_ids,
                       expected.narrow(1, prompt, expected.size(1) - prompt)));
    CHECK(torch::equal(torch::tensor(streamed).unsqueeze(0), result.generated_ids));
    golden.require_matches(result.logits.squeeze(1), p + "generated_logits");
    CHECK(result.token_seconds.size() + 1 == streamed.size());
  }
}

TEST_CASE("Qwen2-Audio names what is wrong with its inputs", "[qwen2_audio][models]") {
  const GoldenModel golden("qwen2-audio-tiny-random");
  const auto model = AudioLanguageModel::from_pretrained(golden.dir());
  const torch::Tensor wave = clip(golden, "input.wav");
  using Catch::Contains;
  // A text part that spells the placeholder: more placeholders than audio parts.
  CHECK_THROWS_WITH(model->process({{"user", {ChatPart::audio_part(wave),
                                               ChatPart::text_part("<|AUDIO|>")}}}),
                    Contains("2 <|AUDIO|> placeholders for 1 audio parts"));
  CHECK_THROWS_WITH(model->process({{"user", {ChatPart::audio_part(torch::zeros({0}))}}}),
                    Contains("empty"));
  CHECK_THROWS_WITH(model->process({{"user", {ChatPart::audio_part(torch::zeros({16000 * 31}))}}}),
                    Contains("31 s is longer than the 30 s"));
  // Placeholders and audio embeddings that disagree in number.
  AudioLmInputs in = golden_inputs(golden, "");
  in.input_ids = torch::cat({in.input_ids, torch::full({1, 1}, model->audio_token_id())}, 1);
  CHECK_THROWS_WITH(model->embed(in), Contains("121 audio placeholder tokens") &&
                                          Contains("gives 120 embeddings"));
  // Audio features without placeholders.
  in = golden_inputs(golden, "");
  in.input_ids = torch::tensor(model->tokenizer().encode("Hello")).unsqueeze(0);
  CHECK_THROWS_WITH(model->embed(in), Contains("0 audio placeholder tokens") &&
                                          Contains("gives 120 embeddings"));
}

TEST_CASE("Qwen2-Audio refuses folders whose parts disagree", "[qwen2_audio][models]") {
  const GoldenModel golden("qwen2-audio-tiny-random");
  namespace fs = std::filesystem;
  auto copy = [&](const std::string& name) {
    const std::string dir = alto::test::temp_path(name);
    fs::copy(golden.dir(), dir, fs::copy_options::recursive);
    return dir;
  };
  // A tokenizer without the audio placeholder token.
  const std::string no_audio_token = copy("qwen2-audio-no-audio-token");
  std::ifstream in(no_audio_token + "/tokenizer.json");
  nlohmann::json tokenizer = nlohmann::json::parse(in);
  in.close();
  auto& added = tokenizer["added_tokens"];
  added.erase(std::remove_if(added.begin(), added.end(),
                             [](const nlohmann::json& t) { return t["content"] == "<|AUDIO|>"; }),
              added.end());
  std::ofstream(no_audio_token + "/tokenizer.json") << tokenizer.dump();
  CHECK_THROWS_WITH(AudioLanguageModel::from_pretrained(no_audio_token),
                    Catch::Contains("<|AUDIO|> is id -1") &&
                        Catch::Contains("audio_token_index is 643"));
  // A projector that does not map the audio width onto the text width.
  const std::string narrow = copy("qwen2-audio-narrow-projector");
  const alto::SafetensorsFile weights(narrow + "/model.safetensors");
  auto tensors = weights.tensors();
  tensors["multi_modal_projector.linear.weight"] = torch::zeros({32, 16});
  alto::save_safetensors(narrow + "/model.safetensors", {tensors.begin(), tensors.end()});
  CHECK_THROWS_WITH(AudioLanguageModel::from_pretrained(narrow),
                    Catch::Contains("multi_modal_projector.linear.weight") &&
                        Catch::Contains("[32, 32]"));
}

TEST_CASE("Qwen2-Audio runs with bfloat16 weights on the CPU", "[qwen2_audio][models]") {
  const GoldenModel golden("qwen2-audio-tiny-random");
  const auto model = AudioLanguageModel::from_pretrained(
      golden.dir(), alto::LoadOptions::parse("cpu", "bfloat16"));
  CHECK(model->load_options().dtype == torch::kBFloat16);
  const AudioLmInputs in = golden_inputs(golden, "");
  const torch::Tensor logits = model->logits(in);
  const torch::Tensor expected = golden.tensor("logits");
  REQUIRE(logits.scalar_type() == torch::kFloat32);
  // bfloat16 keeps 8 bits of mantissa: the logits within a few percent of their range, and the
  // most likely token the same at nearly every position.
  const double scale = expected.abs().max().item<double>();
  CHECK((logits - expected).abs().max().item<double>() < 0.05 * scale);
  const double agree =
      (logits.argmax(-1) == expected.argmax(-1)).to(torch::kFloat64).mean().item<double>();
  CHECK(agree > 0.9);
  // Generation steps run the bfloat16 few-row products.
  alto::models::GenerationConfig config = model->generation_config();
  config.max_new_tokens = 4;
  CHECK(model->generate(in, config).generated_ids.size(1) == 4);
}

TEST_CASE("Qwen2-Audio with int8 linear weights in its text decoder", "[qwen2_audio][models]") {
  const GoldenModel golden("qwen2-audio-tiny-random");
  const auto model =
      AudioLanguageModel::from_pretrained(golden.dir(), alto::LoadOptions::parse("cpu", "int8"));
  CHECK(model->load_options().precision() == "int8");
  const AudioLmInputs in = golden_inputs(golden, "");
  const torch::Tensor logits = model->logits(in);
  const torch::Tensor expected = golden.tensor("logits");
  // The bounds int8 keeps on this checkpoint, measured with margin: the logits within 2 % of
  // their range, the argmax kept at nearly every position, and transformers' float32 greedy
  // continuation kept for its first 10 of 12 tokens (checked: at least 8).
  const double scale = expected.abs().max().item<double>();
  CHECK((logits - expected).abs().max().item<double>() < 0.02 * scale);
  CHECK((logits.argmax(-1) == expected.argmax(-1)).to(torch::kFloat64).mean().item<double>() >
        0.95);
  alto::models::GenerationConfig config = model->generation_config();
  config.max_new_tokens = 12;
  const torch::Tensor generated = model->generate(in, config).generated_ids[0];
  const torch::Tensor golden_ids = golden.tensor("generated_ids")[0];
  const int64_t prompt = in.input_ids.size(1);
  const torch::Tensor reference = golden_ids.narrow(0, prompt, golden_ids.size(0) - prompt);
  CHECK((generated == reference).to(torch::kInt64).cumprod(0).sum().item<int64_t>() >= 8);
}
