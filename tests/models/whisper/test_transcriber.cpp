// WhisperTranscriber: windows, seeking, fallback bookkeeping and the compression ratio; and
// WhisperLiveTranscriber: local agreement, cuts and the final pass equal to the offline
// transcript — on the golden tiny checkpoint with the golden tokenizer.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <sstream>

#include "alto/core/error.h"
#include "alto/models/whisper/live_transcriber.h"
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

WhisperLiveOptions live_options(double step, double max_buffer) {
  WhisperLiveOptions o;
  o.transcribe.temperatures = {0.0};
  o.transcribe.decoding.language = "en";
  o.transcribe.decoding.sample_len = 24;
  o.step_seconds = step;
  o.max_buffer_seconds = max_buffer;
  return o;
}

// Feeds `wave` in pieces of `piece` samples; returns every word handed out.
std::vector<WhisperLiveWord> feed(WhisperLiveTranscriber& live, const torch::Tensor& wave,
                                  int64_t piece) {
  std::vector<WhisperLiveWord> words;
  for (int64_t at = 0; at < wave.size(0); at += piece)
    for (auto& w : live.accept_waveform(wave.narrow(0, at, std::min(piece, wave.size(0) - at))))
      words.push_back(std::move(w));
  for (auto& w : live.finish()) words.push_back(std::move(w));
  return words;
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

TEST_CASE("live transcription of a short input ends with the offline transcript",
          "[whisper][live]") {
  const auto t = transcriber();
  const torch::Tensor wave = alto::test::GoldenModel("whisper-tiny-random").tensor("audio");
  const WhisperLiveOptions o = live_options(0.5, 30.0);
  const WhisperTranscript offline = t->transcribe(wave, o.transcribe);
  for (const int64_t piece : {int64_t{1234}, int64_t{8000}, wave.size(0)}) {
    INFO("pieces of " << piece << " samples");
    WhisperLiveTranscriber live(t, o);
    const auto words = feed(live, wave, piece);
    CHECK(live.passes() == 11);  // each 0.5 s, then the last pass
    CHECK(live.seconds_received() == Approx(5.0));
    CHECK(live.transcript().text == offline.text);
    REQUIRE(live.transcript().segments.size() == offline.segments.size());
    for (size_t i = 0; i < offline.segments.size(); ++i) {
      CHECK(live.transcript().segments[i].tokens == offline.segments[i].tokens);
      CHECK(live.transcript().segments[i].end == offline.segments[i].end);
    }
    for (const auto& w : words) {
      CHECK(w.decided_at <= 5.0);
      CHECK(w.start <= w.end);
      CHECK(w.end <= w.decided_at + 1e-9);
    }
  }
}

TEST_CASE("live transcription cuts its buffer and keeps times from the input's start",
          "[whisper][live]") {
  const auto t = transcriber();
  const torch::Tensor clip = alto::test::GoldenModel("whisper-tiny-random").tensor("audio");
  const torch::Tensor wave = torch::cat({clip, clip, clip});  // 15 s
  WhisperLiveTranscriber live(t, live_options(1.0, 4.0));
  const auto words = feed(live, wave, 16000);
  const WhisperTranscript& transcript = live.transcript();
  CHECK(live.passes() == 16);
  REQUIRE(transcript.segments.size() >= 3);  // at least one cut per 4 s of buffer
  std::string text;
  double last_end = 0;
  for (const auto& s : transcript.segments) {
    CHECK(s.start >= last_end - 1e-9);  // in order, from the input's start
    CHECK(s.end <= 15.0 + 1e-9);
    last_end = s.end;
    text += s.text;
  }
  CHECK(last_end > 10.0);
  CHECK(transcript.text == text);
  CHECK(transcript.language == "en");
  size_t words_in_text = 0;
  std::istringstream split(text);
  for (std::string w; split >> w;) ++words_in_text;
  CHECK(words.size() >= words_in_text);  // every word of the transcript was handed out
  for (size_t i = 1; i < words.size(); ++i) CHECK(words[i].decided_at >= words[i - 1].decided_at);

  WhisperLiveOptions bad = live_options(1.0, 4.0);
  bad.max_buffer_seconds = 31;
  CHECK_THROWS_AS(WhisperLiveTranscriber(t, bad), alto::InvalidArgument);
  bad.step_seconds = 0;
  CHECK_THROWS_AS(WhisperLiveTranscriber(t, bad), alto::InvalidArgument);
  CHECK_THROWS_AS(live.accept_waveform(clip), alto::InvalidArgument);  // after finish()
}
