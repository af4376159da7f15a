// models/whisper/whisper_encoder: the encoder loaded alone, under Whisper's own prefix and under
// an audio LM's ("audio_tower." beside a text model's tensors), equals the full model's encoder.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "alto/core/error.h"
#include "alto/models/whisper/whisper.h"
#include "alto/models/whisper/whisper_encoder.h"
#include "models/golden_model.h"
#include "test_util.h"

using alto::models::Whisper;
using alto::models::WhisperConfig;
using alto::models::WhisperEncoder;
using alto::test::GoldenModel;

TEST_CASE("the Whisper encoder loads alone under any prefix", "[whisper][models]") {
  const GoldenModel golden("whisper-tiny-random");
  const torch::Tensor features = golden.tensor("input_features");
  const Whisper model = *Whisper::from_pretrained(golden.dir());
  const torch::Tensor expected = model.encode(features);
  const WhisperConfig config = WhisperConfig::from_json(golden.dir());
  const alto::SafetensorsCheckpoint checkpoint(golden.dir());
  const std::string prefix = alto::models::whisper_checkpoint_prefix(checkpoint) + "encoder.";
  // The decoder's tensors are outside the prefix: not "unexpected".
  const auto alone = WhisperEncoder::from_checkpoint(config, checkpoint, prefix);
  CHECK(torch::equal(alone->encode(features), expected));
  CHECK(torch::equal(model.encoder().encode(features), expected));

  // An audio LM's layout: the encoder under "audio_tower.", its own config in "audio_config".
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& name : checkpoint.names())
    if (name.rfind(prefix, 0) == 0)
      tensors.emplace_back("audio_tower." + name.substr(prefix.size()), checkpoint.tensor(name));
  tensors.emplace_back("language_model.lm_head.weight", torch::zeros({4, 4}));
  const std::string dir = alto::test::temp_path("audio-lm");
  std::filesystem::create_directories(dir);
  alto::save_safetensors(dir + "/model.safetensors", tensors, {});
  alto::models::Intermediates inter;
  const auto tower =
      WhisperEncoder::from_checkpoint(config, alto::SafetensorsCheckpoint(dir), "audio_tower.");
  CHECK(torch::equal(tower->encode(features, &inter), expected));
  CHECK(inter.tensors.front().first == "audio_tower.conv1");

  // Under its prefix every mismatch is reported.
  tensors.erase(tensors.begin());
  tensors.emplace_back("audio_tower.extra.weight", torch::zeros({2}));
  alto::save_safetensors(dir + "/model.safetensors", tensors, {});
  CHECK_THROWS_WITH(
      WhisperEncoder::from_checkpoint(config, alto::SafetensorsCheckpoint(dir), "audio_tower."),
      Catch::Contains("1 missing, 1 unexpected") && Catch::Contains("audio_tower.extra.weight") &&
          !Catch::Contains("language_model"));
}
