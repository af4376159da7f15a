// WhisperTranscriber: windows, seeking, fallback bookkeeping and the compression ratio, on the
// golden tiny checkpoint with the golden tokenizer.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/core/error.h"
#include "alto/models/whisper/transcriber.h"
#include "models/golden_model.h"
#include "test_util.h"

using namespace alto::models;

namespace {

std::shared_ptr<const WhisperTranscriber> transcriber() {
  return WhisperTranscriber::from_pretrained(
      alto::test::data_path("models/whisper-tiny-random"), {},
      alto::test::data_path("tokenizers/whisper-multilingual"));
}

torch::Tensor golden_audio() {
  return alto::test::GoldenModel("whisper-tiny-random").tensor("audio");
}

WhisperTranscribeOptions greedy() {
  WhisperTranscribeOptions o;
  o.temperatures = {0.0};
  o.decoding.language = "en";
  o.decoding.sample_len = 40;
  return o;
}

}  // namespace

TEST_CASE("compression ratio is Python's zlib ratio", "[whisper][transcribe]") {
  CHECK(compression_ratio("hello hello hello hello hello hello hello hello") ==
        Approx(2.764705882352941));
  CHECK(compression_ratio("The quick brown fox jumps over the lazy dog.") ==
        Approx(0.8627450980392157));
  CHECK(compression_ratio("a") == Approx(0.1111111111111111));
}

TEST_CASE("a short clip is one window decoded as the decoder does", "[whisper][transcribe]") {
  const auto t = transcriber();
  const auto o = greedy();
  const auto transcript = t->transcribe(golden_audio(), o);
  // The same window through the decoder, from the reference's own 30 s features.
  alto::test::GoldenModel golden("whisper-tiny-random");
  const auto expected =
      t->decoder().decode(t->model().encode(golden.tensor("input_features")), o.decoding);
  CHECK(transcript.language == "en");
  CHECK(transcript.text == t->tokenizer().decode(expected.tokens));
  REQUIRE(transcript.segments.size() == 1);
  CHECK(transcript.segments[0].start == 0.0);
  CHECK(transcript.segments[0].end == Approx(5.0));
  CHECK(transcript.segments[0].avg_logprob == Approx(expected.avg_logprob));
}

TEST_CASE("long audio is transcribed window by window with timed segments",
          "[whisper][transcribe]") {
  const auto t = transcriber();
  auto o = greedy();
  std::vector<double> progress;
  o.progress = [&](double done, double total) {
    CHECK(total == Approx(40.0));
    progress.push_back(done);
  };
  const torch::Tensor audio = golden_audio().repeat({8});  // 40 s
  const auto transcript = t->transcribe(audio, o);
  REQUIRE(progress.size() >= 2);  // at least two windows
  CHECK(std::is_sorted(progress.begin(), progress.end()));
  CHECK(progress.back() == Approx(40.0));
  double last_start = 0;
  std::string joined;
  for (const auto& s : transcript.segments) {
    CHECK(s.start >= last_start);
    CHECK(s.end >= s.start);
    CHECK(s.end <= 40.0 + 30.0);
    last_start = s.start;
    joined += s.text;
  }
  CHECK(joined == transcript.text);
}

TEST_CASE("transcriber rejects bad input", "[whisper][transcribe]") {
  const auto t = transcriber();
  CHECK_THROWS_WITH(t->transcribe(torch::zeros({2, 100})), Catch::Contains("mono"));
  auto o = greedy();
  o.temperatures.clear();
  CHECK_THROWS_WITH(t->transcribe(golden_audio(), o), Catch::Contains("temperatures"));
  CHECK_THROWS_AS(
      WhisperTranscriber::from_pretrained(alto::test::data_path("models/whisper-tiny-random")),
      alto::IoError);  // the golden folder ships no tokenizer
}
