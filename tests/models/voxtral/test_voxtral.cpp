// models/voxtral: features, encoder, projector, merged embeddings, logits and greedy
// continuation of transformers 5.17's VoxtralForConditionalGeneration on the golden folder.

#include <torch/torch.h>

#include <catch2/catch.hpp>

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
