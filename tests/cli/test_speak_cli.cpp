// alto speak with CSM, driven as a user would: --json codes equal transformers' greedy codes
// with and without a --context clip (audio or a codes file from alto encode), the .wav equals
// the decoded audio, `-o -` streams the same audio as raw PCM, --max-frames bounds the frames,
// and the errors the issue names.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/core/safetensors.h"
#include "cli/run_cli.h"
#include "models/golden_model.h"
#include "test_util.h"

using alto::test::GoldenModel;
using alto::test::run_cli;
using alto::test::Stderr;
using nlohmann::json;

namespace {

torch::Tensor codes_of(const json& out) {
  std::vector<int64_t> flat;
  for (const auto& row : out["codes"])
    for (const auto& code : row) flat.push_back(code.get<int64_t>());
  return torch::tensor(flat, torch::kInt64).view({static_cast<int64_t>(out["codes"].size()), -1});
}

}  // namespace

TEST_CASE("alto speak: greedy codes and audio equal transformers'", "[cli][csm]") {
  const GoldenModel golden("csm-tiny-random");
  const std::string model = "speak --model " + golden.dir() + " --temperature 0 --max-frames 6 ";
  const std::string wav = alto::test::temp_path("speak.wav");
  const json out = json::parse(run_cli(model + "--json -o " + wav + " 'Hello from a tiny model.'"));
  CHECK(torch::equal(codes_of(out), golden.tensor("audio_codes")[0]));
  CHECK(out["frames"] == 6);
  CHECK(out["ended"] == false);
  CHECK(out["time_to_first_audio_s"].get<double>() > 0);
  CHECK(out["real_time_factor"].get<double>() > 0);
  CHECK(out["audio_seconds"].get<double>() == Approx(6 * 0.08));
  // The .wav holds the audio as 16-bit PCM, clipped to [-1, 1) (the random model's is louder).
  const torch::Tensor written = alto::audio::to_tensor(alto::audio::load_audio(wav))[0];
  const torch::Tensor expected = golden.tensor("audio_values").clamp(-1.0, 32767.0 / 32768);
  REQUIRE(written.sizes() == expected.sizes());
  CHECK((written - expected).abs().max().item<double>() < 1.0 / 32767 + 1e-4);

  // -o -: the same audio as raw s16le on stdout.
  const std::string pcm = run_cli(model + "-o - 'Hello from a tiny model.'");
  REQUIRE(pcm.size() == static_cast<size_t>(expected.numel()) * 2);
  const torch::Tensor samples =
      torch::from_blob(const_cast<char*>(pcm.data()), {expected.numel()}, torch::kInt16)
          .to(torch::kFloat32) / 32767.0;
  CHECK((samples - expected).abs().max().item<double>() < 1.0 / 32767 + 1e-4);

  const json three =
      json::parse(run_cli("speak --model " + golden.dir() +
                          " --temperature 0 --max-frames 3 --json -o " + wav + " 'Hello from a tiny model.'"));
  CHECK(three["frames"] == 3);
}

TEST_CASE("alto speak: a --context clip as audio or as codes", "[cli][csm]") {
  const GoldenModel golden("csm-tiny-random");
  const std::string model = "speak --model " + golden.dir() + " --temperature 0 --max-frames 6 ";
  const std::string wav = alto::test::temp_path("speak-ctx.wav");
  const std::string context = " --context '" + golden.dir() + "/input.wav:This is the context sentence.'";
  const json out =
      json::parse(run_cli(model + context + " --json -o " + wav + " 'Hello from a tiny model.'"));
  CHECK(torch::equal(codes_of(out), golden.tensor("ctx_audio_codes")[0]));

  // The context's codes as alto encode writes them: [1, K, frames].
  const std::string codes = alto::test::temp_path("speak-ctx-codes.safetensors");
  alto::save_safetensors(codes, {{"codes", golden.tensor("ctx_context_audio_codes")}});
  const json from_codes = json::parse(run_cli(model + " --context '" + codes +
                                              ":This is the context sentence.' --json -o " + wav +
                                              " 'Hello from a tiny model.'"));
  CHECK(from_codes["codes"] == out["codes"]);
}

TEST_CASE("alto speak: bad input is an error naming the cause", "[cli][csm]") {
  const GoldenModel golden("csm-tiny-random");
  const std::string model = "speak --model " + golden.dir() + " -o " +
                            alto::test::temp_path("speak-bad.wav") + " ";
  auto fails_with = [&](const std::string& args, const std::string& message) {
    const std::string err = run_cli(model + args, 1, Stderr::kMerge);
    INFO(err);
    CHECK(err.find(message) != std::string::npos);
  };
  fails_with("''", "the text is empty");
  fails_with("--speaker x hi", "speaker id must be a non-negative decimal integer");
  fails_with("--context nothing-here.wav:words hi", "--context nothing-here.wav");
  fails_with("--context no-colon hi", "expected FILE:TEXT");
  const std::string codes = alto::test::temp_path("speak-bad-codes.safetensors");
  alto::save_safetensors(codes, {{"codes", torch::full({1, 4, 5}, 64, torch::kInt64)}});
  fails_with("--context " + codes + ":words hi", "code 64 is outside the codec's codebooks");
  // A clip whose header claims 0 Hz cannot be resampled to the codec's rate.
  const std::string zero_hz = alto::test::temp_path("speak-0hz.wav");
  alto::test::write_bytes(zero_hz, alto::test::make_wav(1, 16, 1, 0, std::vector<uint8_t>(200)));
  fails_with("--context " + zero_hz + ":words hi", "--context " + zero_hz);
  const std::string err =
      run_cli("speak --model " + golden.dir() + " --json -o - hi", 1, Stderr::kMerge);
  CHECK(err.find("--json prints to stdout") != std::string::npos);
}
