// models/voxtral: features, encoder, projector, merged embeddings, logits and greedy
// continuation of transformers 5.17's VoxtralForConditionalGeneration on the golden folder.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/core/error.h"
#include "alto/models/voxtral/voxtral.h"
#include "models/golden_model.h"
#include "test_util.h"

using alto::models::AudioLmInputs;
using alto::models::Voxtral;
using alto::test::GoldenModel;

TEST_CASE("Voxtral equals transformers from features to the greedy continuation",
          "[voxtral][models]") {
  const GoldenModel golden("voxtral-tiny-random");
  const auto model = alto::models::AudioLanguageModel::from_pretrained(golden.dir());
  REQUIRE(model->model_type() == "voxtral");
  const auto& voxtral = dynamic_cast<const Voxtral&>(*model);
  const torch::Tensor wave =
      alto::audio::to_tensor(alto::audio::load_audio(golden.dir() + "/input.wav"))[0];
  golden.require_matches(voxtral.clip_features(wave), "input_features");
  CHECK(voxtral.audio_token_count(wave.numel()) == 375);
  CHECK(voxtral.audio_token_count(480000) == 375);
  CHECK(voxtral.audio_token_count(480001) == 750);
  CHECK(voxtral.clip_features(torch::zeros({480001})).sizes() ==
        torch::IntArrayRef({2, 128, 3000}));

  AudioLmInputs in;
  in.input_ids = golden.tensor("input_ids");
  in.attention_mask = golden.tensor("attention_mask");
  in.input_features = golden.tensor("input_features");
  alto::models::Intermediates inter;
  const torch::Tensor logits = model->logits(in, &inter);
  auto named = [&](const std::string& name) {
    for (const auto& [n, t] : inter.tensors)
      if (n == name) return t;
    FAIL("no intermediate " << name);
    return torch::Tensor();
  };
  golden.require_matches(named("last_hidden_state"), "audio_encoder_last_hidden_state");
  golden.require_matches(named("multi_modal_projector"), "audio_embeds");
  golden.require_matches(named("inputs_embeds"), "inputs_embeds");
  golden.require_matches(logits, "logits");

  alto::models::GenerationConfig config = model->generation_config();
  config.max_new_tokens = 12;
  alto::models::GenerateOptions options;
  options.return_logits = true;
  const auto result = model->generate(in, config, options);
  const torch::Tensor expected = golden.tensor("generated_ids");
  const int64_t prompt = in.input_ids.size(1);
  CHECK(torch::equal(result.generated_ids, expected.narrow(1, prompt, expected.size(1) - prompt)));
  golden.require_matches(result.logits.squeeze(1), "generated_logits");

  // The folder ships no tekken.json: building prompts says so.
  CHECK_THROWS_WITH(model->transcription_inputs(wave),
                    Catch::Contains("no tokenizer") && Catch::Contains("tekken.json"));
}

namespace {

// The golden folder with a byte-level tekken.json beside it: Voxtral's special ids below 100,
// byte b at id 100 + b (no merges), so the ids of a text are known without a reference.
std::string with_tekken(const GoldenModel& golden, int64_t audio_id) {
  const std::string dir = alto::test::temp_path("voxtral-tekken-" + std::to_string(audio_id));
  std::filesystem::copy(golden.dir(), dir, std::filesystem::copy_options::recursive);
  nlohmann::json vocab = nlohmann::json::array(), specials = nlohmann::json::array();
  static const char* kDigits =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int b = 0; b < 256; ++b) {
    // base64 of one byte: two digits and "==".
    const std::string base64{kDigits[b >> 2], kDigits[(b & 3) << 4], '=', '='};
    vocab.push_back({{"rank", b}, {"token_bytes", base64}, {"token_str", nullptr}});
  }
  for (const auto& [rank, token] : std::vector<std::pair<int64_t, std::string>>{
           {0, "<unk>"}, {1, "<s>"}, {2, "</s>"}, {3, "[INST]"}, {4, "[/INST]"},
           {17, "[SYSTEM_PROMPT]"}, {18, "[/SYSTEM_PROMPT]"}, {audio_id, "[AUDIO]"}, {25, "[BEGIN_AUDIO]"}, {34, "[TRANSCRIBE]"}})
    specials.push_back({{"rank", rank}, {"token_str", token}, {"is_control", true}});
  const nlohmann::json config = {{"pattern", "[^\\n]+|\\n"},
                                 {"num_vocab_tokens", 256},
                                 {"default_vocab_size", 356},
                                 {"default_num_special_tokens", 100},
                                 {"version", "v7"}};
  std::ofstream(dir + "/tekken.json")
      << nlohmann::json{{"config", config}, {"vocab", vocab}, {"special_tokens", specials}}.dump();
  return dir;
}

std::vector<int64_t> text_ids(const std::string& text) {
  std::vector<int64_t> ids;
  for (unsigned char c : text) ids.push_back(100 + c);
  return ids;
}

}  // namespace

TEST_CASE("Voxtral's prompts are laid out as mistral-common lays them out", "[voxtral][models]") {
  const GoldenModel golden("voxtral-tiny-random");
  const auto model = alto::models::AudioLanguageModel::from_pretrained(with_tekken(golden, 24));
  const torch::Tensor wave =
      alto::audio::to_tensor(alto::audio::load_audio(golden.dir() + "/input.wav"))[0];
  using alto::models::ChatPart;
  // One clip and a question: [bos, [INST], [BEGIN_AUDIO], [AUDIO] x 375, text, [/INST]], the
  // golden ids' layout with the golden features (the golden text ids are arbitrary).
  const AudioLmInputs in = model->process(
      {{"user", {ChatPart::audio_part(wave), ChatPart::text_part("Why?")}}});
  std::vector<int64_t> expected{1, 3, 25};
  expected.insert(expected.end(), 375, 24);
  for (int64_t id : text_ids("Why?")) expected.push_back(id);
  expected.push_back(4);
  CHECK(torch::equal(in.input_ids, torch::tensor(expected).unsqueeze(0)));
  CHECK(in.prompt == "<s>[INST][BEGIN_AUDIO][AUDIO]x375Why?[/INST]");
  CHECK(in.audio_tokens == std::vector<int64_t>{375});
  golden.require_matches(in.input_features, "input_features");
  const torch::Tensor golden_ids = golden.tensor("input_ids");
  CHECK(torch::equal(in.input_ids.narrow(1, 0, 378), golden_ids.narrow(1, 0, 378)));
  // The merged embeddings put the golden audio embeddings at the placeholders.
  const auto embedded = model->embed(in);
  golden.require_matches(embedded.audio_embeds, "audio_embeds");
  CHECK(torch::equal(embedded.audio_positions, torch::arange(3, 378)));

  // Transcription mode: the clip, [/INST], lang:xx when given, [TRANSCRIBE].
  const AudioLmInputs t = model->transcription_inputs(wave, "en");
  expected.assign({1, 3, 25});
  expected.insert(expected.end(), 375, 24);
  expected.push_back(4);
  for (int64_t id : text_ids("lang:en")) expected.push_back(id);
  expected.push_back(34);
  CHECK(torch::equal(t.input_ids, torch::tensor(expected).unsqueeze(0)));
  CHECK(model->transcription_inputs(wave).input_ids.size(1) == t.input_ids.size(1) - 7);
  // A system turn and a finished assistant turn; audio outside user turns is refused.
  const AudioLmInputs turns = model->process({{"system", {ChatPart::text_part("S")}},
                                              {"user", {ChatPart::text_part("Q")}},
                                              {"assistant", {ChatPart::text_part("A")}},
                                              {"user", {ChatPart::text_part("R")}}});
  CHECK(turns.prompt == "<s>[SYSTEM_PROMPT]S[/SYSTEM_PROMPT][INST]Q[/INST]A</s>[INST]R[/INST]");
  CHECK_FALSE(turns.input_features.defined());
  CHECK_THROWS_WITH(model->process({{"assistant", {ChatPart::audio_part(wave)}}}),
                    Catch::Contains("audio parts belong in user turns"));
  CHECK_THROWS_WITH(model->process({{"narrator", {ChatPart::text_part("x")}}}),
                    Catch::Contains("unknown role 'narrator'"));

  // A tokenizer whose [AUDIO] is not config.json's audio_token_id.
  CHECK_THROWS_WITH(alto::models::AudioLanguageModel::from_pretrained(with_tekken(golden, 23)),
                    Catch::Contains("[AUDIO] is id 23") && Catch::Contains("audio_token_id is 24"));
}
