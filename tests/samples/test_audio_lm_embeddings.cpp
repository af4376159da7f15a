// samples/audio_lm_embeddings: what it writes for a backbone of its own is the model's merged
// input, equal to transformers' on the Qwen2-Audio golden folder.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/core/safetensors.h"
#include "cli/run_cli.h"
#include "models/golden_model.h"
#include "test_util.h"

TEST_CASE("the audio-embeddings sample gives the model's own merged input", "[samples]") {
  const alto::test::GoldenModel golden("qwen2-audio-tiny-random");
  const std::string out = alto::test::temp_path("embeddings.safetensors");
  const std::string printed =
      alto::test::run_program(ALTO_SAMPLE_AUDIO_LM_EMBEDDINGS,
                              golden.dir() + " " + golden.dir() + "/input.wav" +
                                  " 'What does the person say?' " + out);
  CHECK(printed ==
        "qwen2_audio: 177 prompt tokens, 120 audio rows of width 32\n"
        "audio span: positions [37, 157) <- audio_embeds rows [0, 120)\n");
  const alto::SafetensorsFile file(out);
  CHECK(torch::equal(file.tensor("input_ids"), golden.tensor("input_ids")[0]));
  golden.require_matches(file.tensor("audio_embeds"), "audio_embeds_merged");
  const torch::Tensor positions = file.tensor("audio_positions");
  CHECK(torch::equal(positions, (golden.tensor("input_ids")[0] == 643).nonzero().flatten()));
  // The injected rows are transformers' merged inputs_embeds at those positions.
  const torch::Tensor merged = golden.tensor("inputs_embeds")[0].index_select(0, positions);
  CHECK(torch::allclose(file.tensor("audio_embeds"), merged, 0, 1e-5));
  // A missing file: the alto::Error's message and exit status 1.
  CHECK(alto::test::run_program(ALTO_SAMPLE_AUDIO_LM_EMBEDDINGS,
                                golden.dir() + " missing.wav x " + out, 1,
                                alto::test::Stderr::kMerge)
            .find("missing.wav") != std::string::npos);
}
