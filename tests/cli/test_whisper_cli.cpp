// alto embed, alto transcribe (--raw and transcripts) and alto tokenize, driven as a user would.

#include <torch/torch.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "alto/core/safetensors.h"
#include "features/golden.h"
#include "models/golden_model.h"
#include "cli/run_cli.h"
#include "test_util.h"

namespace {

const std::string kTokenizer = alto::test::data_path("tokenizers/whisper-multilingual");

std::string run(const std::string& args, int status = 0) {
  return alto::test::run_cli(args, status, alto::test::Stderr::kDiscard);
}

}  // namespace

TEST_CASE("alto embed and alto transcribe --raw reproduce the golden Whisper outputs",
          "[cli][whisper]") {
  for (const std::string name : {"whisper-tiny-random", "whisper-tiny-random-128mel-fp16"}) {
    INFO(name);
    const alto::test::GoldenModel golden(name);
    const std::string wav = golden.dir() + "/input.wav";
    const std::string embedded = alto::test::temp_path(name + "-embed.safetensors");
    run("--threads 1 embed --model " + golden.dir() + " " + wav + " -o " + embedded);
    const alto::SafetensorsFile e(embedded);
    // Features computed from the .wav add their own error to the encoder's (MANIFEST.md).
    alto::test::require_close(e.tensor("input_features"), golden.tensor("input_features"),
                              golden.tolerance("input_features"), 0, std::nullopt, name);
    alto::test::require_close(e.tensor("last_hidden_state"),
                              golden.tensor("encoder.last_hidden_state"),
                              2 * golden.tolerance("encoder.last_hidden_state"), 0,
                              std::nullopt, name);

    const std::string raw = alto::test::temp_path(name + "-raw.safetensors");
    run("--threads 1 transcribe --model " + golden.dir() + " " + wav +
        " --raw --language en --max-new-tokens 24 -o " + raw);
    const torch::Tensor sequences = alto::SafetensorsFile(raw).tensor("sequences");
    CHECK(sequences.scalar_type() == torch::kInt64);
    CHECK(torch::equal(sequences, golden.tensor("greedy.sequence")));
  }
}

TEST_CASE("alto transcribe prints text, JSON segments and subtitles", "[cli][whisper]") {
  const alto::test::GoldenModel golden("whisper-tiny-random");
  const std::string common = "--threads 1 transcribe --model " + golden.dir() + " " +
                             golden.dir() + "/input.wav --tokenizer " + kTokenizer +
                             " --language en --beam 0 --temperature 0";
  const auto object = nlohmann::json::parse(run(common + " --json"));
  CHECK(object["language"] == "en");
  CHECK(object["file"] == golden.dir() + "/input.wav");
  REQUIRE(object["segments"].is_array());
  std::string joined;
  for (const auto& s : object["segments"]) {
    CHECK(s["start"].get<double>() <= s["end"].get<double>());
    joined += s["text"].get<std::string>();
  }
  CHECK(joined == object["text"].get<std::string>());
  const std::string srt = run(common + " --srt");
  CHECK(srt.rfind("1\n00:00:", 0) == 0);
  CHECK(srt.find(" --> ") != std::string::npos);
  CHECK(run(common + " --vtt").rfind("WEBVTT\n\n", 0) == 0);
  CHECK_FALSE(run(common).empty());

  run(common + " --json --srt", 1);
  run("transcribe --model " + golden.dir() + " " + golden.dir() + "/input.wav", 1);  // no tokenizer
  run("transcribe --model /no/such/model x.wav --tokenizer " + kTokenizer, 1);
  run("embed --model " + golden.dir() + " /no/such.wav -o " + alto::test::temp_path("x.st"), 1);
}

TEST_CASE("alto tokenize encodes and decodes exactly", "[cli][tokenizer]") {
  CHECK(run("tokenize --tokenizer " + kTokenizer + " 'Hello world'") == "15947 1002\n");
  CHECK(run("tokenize --tokenizer " + kTokenizer + " --json '<|en|> Hi'") == "[50259,2421]\n");
  CHECK(run("tokenize --tokenizer " + kTokenizer + "/multilingual.tiktoken 'Hello world'") ==
        "15947 1002\n");
  CHECK(run("tokenize --tokenizer " + kTokenizer + " --decode 50258 50259 15947 1002 50257") ==
        "<|startoftranscript|><|en|>Hello world<|endoftext|>\n");
  CHECK(run("tokenize --tokenizer " + kTokenizer +
            " --decode --skip-special-tokens 50258 50259 15947 1002 50257") == "Hello world\n");
  run("tokenize --tokenizer /no/such/dir hello", 1);
  run("tokenize --tokenizer " + kTokenizer + " --decode 99999999", 1);
}
