// models/audio_encoder: the registry finds an encoder by config.json's model_type (Whisper's
// registers itself), and its embed() equals the model's own encoder on the extractor's features.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/core/error.h"
#include "alto/models/audio_encoder.h"
#include "alto/models/whisper/whisper.h"
#include "models/golden_model.h"
#include "test_util.h"

using alto::models::Whisper;
using alto::test::GoldenModel;

TEST_CASE("AudioEncoder::from_pretrained finds Whisper by model_type", "[whisper][models]") {
  const GoldenModel golden("whisper-tiny-random");
  const auto encoder = alto::models::AudioEncoder::from_pretrained(golden.dir());
  CHECK(encoder->max_seconds() == 30);
  CHECK(encoder->feature_extractor().name() == "whisper");
  // Features of a clip through the encoder equal the model's own encoder on those features.
  const torch::Tensor wave = torch::sin(torch::arange(16000) * 0.05) * 0.3;
  const alto::models::AudioEmbedding e = encoder->embed(wave);
  CHECK(e.input_features.sizes() == torch::IntArrayRef({1, 80, 3000}));
  CHECK(torch::equal(e.last_hidden_state,
                     Whisper::from_pretrained(golden.dir())->encode(e.input_features)));
  CHECK(alto::models::audio_encoders().find("whisper") != nullptr);
  CHECK_THROWS_AS(
      alto::models::AudioEncoder::from_pretrained(alto::test::data_path("models/mimi-tiny-random")),
      alto::Unsupported);
  CHECK_THROWS_WITH(
      alto::models::AudioEncoder::from_pretrained(alto::test::data_path("models/mimi-tiny-random")),
      Catch::Contains("unknown audio encoder model_type 'mimi'"));
}
