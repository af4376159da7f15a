// alto embed, alto transcribe (--raw and transcripts) and alto tokenize, driven as a user would.

#include <torch/torch.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "alto/core/safetensors.h"
#include "cli/run_cli.h"
#include "features/golden.h"
#include "models/golden_model.h"
#include "test_util.h"

namespace {

const std::string kTokenizer = alto::test::data_path("tokenizers/whisper-multilingual");

std::string run(const std::string& args, int status = 0) {
  return alto::test::run_cli(args, status, alto::test::Stderr::kDiscard);
}

// alto transcribe on one thread, greedy and without temperature fallback (the golden model's
// random weights make every fallback pass slow), up to the input.
std::string greedy_transcribe(const alto::test::GoldenModel& golden) {
  return "--threads 1 transcribe --model " + golden.dir() + " --tokenizer " + kTokenizer +
         " --beam 0 --temperature 0 ";
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
    alto::test::require_close(
        e.tensor("last_hidden_state"), golden.tensor("encoder.last_hidden_state"),
        2 * golden.tolerance("encoder.last_hidden_state"), 0, std::nullopt, name);

    const std::string raw = alto::test::temp_path(name + "-raw.safetensors");
    run("--threads 1 transcribe --model " + golden.dir() + " " + wav +
        " --raw --language en --max-new-tokens 24 -o " + raw);
    const torch::Tensor sequences = alto::SafetensorsFile(raw).tensor("sequences");
    CHECK(sequences.scalar_type() == torch::kInt64);
    CHECK(torch::equal(sequences, golden.tensor("greedy.sequence")));
  }
}

TEST_CASE("alto transcribe --dtype int8 decodes with int8 linear weights", "[cli][whisper]") {
  const alto::test::GoldenModel golden("whisper-tiny-random");
  const std::string raw = alto::test::temp_path("int8-raw.safetensors");
  run("--threads 1 transcribe --model " + golden.dir() + " " + golden.dir() +
      "/input.wav --raw --language en --max-new-tokens 24 --dtype int8 -o " + raw);
  const alto::SafetensorsFile out(raw);
  CHECK(out.metadata().at("dtype") == "int8");
  // The library test's bound on this checkpoint (tests/models/whisper): at least 20 of the 24
  // greedy tokens after the 4-token prompt kept (all 24 measured here as there).
  const torch::Tensor sequence = out.tensor("sequences")[0],
                      expected = golden.tensor("greedy.sequence")[0];
  REQUIRE(sequence.size(0) == expected.size(0));
  CHECK((sequence == expected).to(torch::kInt64).cumprod(0).sum().item<int64_t>() >= 4 + 20);
}

TEST_CASE("alto transcribe prints text, JSON segments and subtitles", "[cli][whisper]") {
  const alto::test::GoldenModel golden("whisper-tiny-random");
  const std::string common =
      greedy_transcribe(golden) + "--language en " + golden.dir() + "/input.wav";
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

TEST_CASE("alto transcribe: segments within the audio, offsets, thresholds, language names",
          "[cli][whisper]") {
  const alto::test::GoldenModel golden("whisper-tiny-random");
  const std::string wav = golden.dir() + "/input.wav";  // 5 s
  const std::string common = greedy_transcribe(golden) + "--json ";
  // The model's last timestamp lies past the audio: the segment ends with the audio.
  const auto whole = nlohmann::json::parse(run(common + "--language English " + wav));
  CHECK(whole["language"] == "en");
  REQUIRE_FALSE(whole["segments"].empty());
  for (const auto& s : whole["segments"]) CHECK(s["end"].get<double>() <= 5.0);

  // --offset/--duration transcribe that part, with times from the file's start: the same as
  // transcribing the part cut out beforehand.
  const std::string raw = alto::test::temp_path("offset-part.f32");
  alto::test::run_program(ALTO_CLI_PATH, "convert " + wav +
                                             " - --format raw --bits 32f | tail -c +" +
                                             std::to_string(16000 * 4 + 1) + " | head -c " +
                                             std::to_string(2 * 16000 * 4) + " > " + raw);
  const auto part = nlohmann::json::parse(run(common + "--offset 1 --duration 2 " + wav));
  const auto cut =
      nlohmann::json::parse(run(common + "--format f32le --rate 16000 --channels 1 - < " + raw));
  CHECK(part["text"] == cut["text"]);
  REQUIRE(part["segments"].size() == cut["segments"].size());
  for (size_t i = 0; i < part["segments"].size(); ++i) {
    CHECK(part["segments"][i]["start"].get<double>() ==
          Approx(cut["segments"][i]["start"].get<double>() + 1.0));
    CHECK(part["segments"][i]["end"].get<double>() <= 3.0 + 1e-9);
  }

  // The thresholds reach the transcriber: with every window "silent" nothing is transcribed.
  const auto silent = nlohmann::json::parse(
      run(common +
          "--no-speech-threshold 0 --logprob-threshold none --compression-ratio-threshold "
          "none --condition-on-previous-text false " +
          wav));
  CHECK(silent["segments"].empty());
  run(common + "--logprob-threshold minus-one " + wav, 1);
  run(common + "--language klingon " + wav, 1);

  // Text mode names the language it detected, on stderr.
  const std::string text =
      alto::test::run_program("sh -c '" + std::string(ALTO_CLI_PATH) + " " +
                                  greedy_transcribe(golden) + wav + " 2>&1 >/dev/null'",
                              "");
  CHECK(text.find(wav + ": detected language: ") == 0);
}

TEST_CASE("alto transcribe --live: words while the audio arrives, then the offline transcript",
          "[cli][whisper][live]") {
  const alto::test::GoldenModel golden("whisper-tiny-random");
  const std::string wav = golden.dir() + "/input.wav";  // 5 s
  const std::string flags = greedy_transcribe(golden) + "--json";
  const auto offline = nlohmann::json::parse(run(flags + " " + wav));
  // Raw PCM through a pipe that delivers a second of audio every 0.3 s.
  const std::string raw = alto::test::temp_path("live-input.f32");
  run("convert " + wav + " - --format raw --bits 32f > " + raw);
  const std::string paced = "sh -c 'for i in 0 1 2 3 4; do dd if=" + raw +
                            " bs=64000 skip=$i count=1 status=none; sleep 0.3; done' |";
  const std::string out = alto::test::run_program(
      paced, std::string(ALTO_CLI_PATH) + " " + flags +
                 " --live --step 0.5 --format f32le --rate 16000 --channels 1 -");
  std::istringstream lines(out);
  std::vector<nlohmann::json> words;
  nlohmann::json final_transcript;
  for (std::string line; std::getline(lines, line);) {
    const auto object = nlohmann::json::parse(line);
    if (object.contains("word"))
      words.push_back(object);
    else
      final_transcript = object;
  }
  // Words were decided before the input ended ...
  REQUIRE_FALSE(words.empty());
  CHECK(words.front()["decided_at"].get<double>() < 5.0);
  for (const auto& w : words) CHECK(w["latency"].get<double>() >= 0);
  // ... and the input, shorter than a window, ends with the offline transcript.
  CHECK(final_transcript["text"] == offline["text"]);
  CHECK(final_transcript["segments"] == offline["segments"]);
  CHECK(final_transcript["passes"].get<int64_t>() == 11);  // every 0.5 s, then the last
  run(flags + " --live --step 0 " + wav, 1);
}
