// models/kyutai_speech_to_text against transformers 5.17's KyutaiSpeechToTextForConditional-
// Generation on the golden folder, piece by piece (the MANIFEST explains why generate's own
// streaming is not the reference end to end): the processor, Mimi's offline codes, the summed
// embeddings, the teacher-forced logits, and the decoder stepped on the codes generate fed it
// (its per-step logits and greedy ids). Then streaming = offline for every chunking, batched
// streams = each alone, a long stream in flat memory, and every bad input the issue names.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/core/error.h"
#include "alto/models/kyutai_speech_to_text/kyutai_speech_to_text.h"
#include "alto/models/kyutai_speech_to_text/speech_to_text_stream.h"
#include "models/golden_model.h"
#include "test_util.h"

using alto::models::KyutaiSpeechToText;
using alto::models::SpeechToTextBatch;
using alto::models::SpeechToTextStream;
using alto::models::SpeechToTextTranscript;
using alto::models::TimedWord;
using alto::test::GoldenModel;

namespace {

const char* kGolden = "kyutai-stt-tiny-random";

std::shared_ptr<const KyutaiSpeechToText> load(const GoldenModel& golden) {
  static const auto model = KyutaiSpeechToText::from_pretrained(golden.dir());
  return model;
}

torch::Tensor clip(const GoldenModel& golden) {
  return alto::audio::to_tensor(alto::audio::load_audio(golden.dir() + "/input.wav"))[0];
}

void require_same(const SpeechToTextTranscript& a, const SpeechToTextTranscript& b) {
  REQUIRE(a.token_ids == b.token_ids);
  REQUIRE(a.text == b.text);
  REQUIRE(a.words.size() == b.words.size());
  for (size_t i = 0; i < a.words.size(); ++i) {
    CHECK(a.words[i].text == b.words[i].text);
    CHECK(a.words[i].start == b.words[i].start);
    CHECK(a.words[i].end == b.words[i].end);
  }
}

SpeechToTextTranscript streamed(const std::shared_ptr<const KyutaiSpeechToText>& model,
                                const torch::Tensor& wave, int64_t chunk) {
  SpeechToTextStream stream(model);
  std::vector<TimedWord> words;
  for (int64_t at = 0; at < wave.size(0); at += chunk)
    for (auto& w :
         stream.accept_waveform(24000, wave.narrow(0, at, std::min(chunk, wave.size(0) - at))))
      words.push_back(w);
  for (auto& w : stream.input_finished()) words.push_back(w);
  SpeechToTextTranscript t = stream.transcript();
  REQUIRE(words.size() == t.words.size());  // every word was handed out once
  return t;
}

}  // namespace

TEST_CASE("Kyutai STT: processor, codes, embeddings and teacher-forced logits equal transformers'",
          "[kyutai_stt][models]") {
  const GoldenModel golden(kGolden);
  const auto model = load(golden);
  const auto inputs = model->process(clip(golden));
  golden.require_matches(inputs.input_values, "input_values");
  golden.require_matches(inputs.padding_mask, "padding_mask");
  golden.require_matches(model->encode(inputs.input_values), "audio_codes_offline");

  const torch::Tensor ids = golden.tensor("prefill_input_ids");
  const torch::Tensor embeds = model->embed(ids);
  golden.require_matches(embeds, "prefill_inputs_embeds");
  auto state = model->start(1);
  alto::models::Intermediates inter;
  const torch::Tensor hidden = model->forward(embeds, state, {}, &inter);
  golden.require_matches(model->logits(hidden), "prefill_logits");
  CHECK(inter.tensors.size() == 3);  // two layers and the norm
  CHECK(state.positions.next()[0].item<int64_t>() == ids.size(1));

  // One step at a time through the ring equals the one forward pass.
  auto stepped = model->start(1);
  std::vector<torch::Tensor> rows;
  for (int64_t t = 0; t < ids.size(1); ++t)
    rows.push_back(model->logits(model->forward(model->embed(ids.narrow(1, t, 1)), stepped)));
  golden.require_matches(torch::cat(rows, 1), "prefill_logits");
}

TEST_CASE("Kyutai STT stepped on the codes generate fed gives its logits and ids",
          "[kyutai_stt][models]") {
  const GoldenModel golden(kGolden);
  const auto model = load(golden);
  torch::Tensor logits;
  const SpeechToTextTranscript t = model->transcribe_codes(golden.tensor("audio_codes"), &logits);
  golden.require_matches(logits, "generated_logits");
  const torch::Tensor generated = golden.tensor("generated_ids")[0];
  REQUIRE(static_cast<int64_t>(t.token_ids.size()) == generated.size(0) - 1);
  CHECK(torch::tensor(t.token_ids).equal(generated.narrow(0, 1, generated.size(0) - 1)));
  CHECK(t.text == model->tokenizer()->decode(t.token_ids, true));
}

TEST_CASE("Kyutai STT with int8 linear weights keeps transformers' logits and ids",
          "[kyutai_stt][models]") {
  const GoldenModel golden(kGolden);
  const auto model =
      KyutaiSpeechToText::from_pretrained(golden.dir(), alto::LoadOptions::parse("cpu", "int8"));
  CHECK(model->load_options().precision() == "int8");
  // The codec keeps float32: the codes are transformers' exactly.
  golden.require_matches(model->encode(model->process(clip(golden)).input_values),
                         "audio_codes_offline");
  const torch::Tensor ids = golden.tensor("prefill_input_ids");
  auto state = model->start(1);
  const torch::Tensor logits = model->logits(model->forward(model->embed(ids), state));
  const torch::Tensor expected = golden.tensor("prefill_logits");
  // Bounds measured on this checkpoint with margin: within 2 % of the logits' range, the argmax
  // kept nearly everywhere, and generate's greedy ids kept token for token.
  const double scale = expected.abs().max().item<double>();
  CHECK((logits - expected).abs().max().item<double>() < 0.02 * scale);
  CHECK((logits.argmax(-1) == expected.argmax(-1)).to(torch::kFloat64).mean().item<double>() >
        0.95);
  const SpeechToTextTranscript t = model->transcribe_codes(golden.tensor("audio_codes"));
  const torch::Tensor generated = golden.tensor("generated_ids")[0];
  CHECK(torch::tensor(t.token_ids).equal(generated.narrow(0, 1, generated.size(0) - 1)));
}

TEST_CASE("Kyutai STT offline: one step per code frame after the audio-BOS step",
          "[kyutai_stt][models]") {
  const GoldenModel golden(kGolden);
  const auto model = load(golden);
  const SpeechToTextTranscript t = model->transcribe(clip(golden));
  const torch::Tensor codes = golden.tensor("audio_codes_offline");
  CHECK(static_cast<int64_t>(t.token_ids.size()) == codes.size(2) + 1);
  require_same(t, model->transcribe_codes(codes));
  // transformers' generate consumed frames shifted by one (MANIFEST): where the codes it fed
  // equal the offline ones step for step, so do the chosen tokens until the first difference.
  const torch::Tensor fed = golden.tensor("audio_codes")[0];
  const torch::Tensor generated = golden.tensor("generated_ids")[0];
  int64_t same = 0;
  while (same < fed.size(1) && fed.select(1, same).equal(codes[0].select(1, same))) ++same;
  for (int64_t s = 0; s <= same; ++s) CHECK(t.token_ids[s] == generated[s + 1].item<int64_t>());
  for (const TimedWord& w : t.words) {
    CHECK(w.start >= 0);
    CHECK(w.end >= w.start);
    CHECK(w.end <= 3.5 + 1e-9);
  }
}

TEST_CASE("Kyutai STT streaming equals offline for every chunking", "[kyutai_stt][models]") {
  const GoldenModel golden(kGolden);
  const auto model = load(golden);
  const torch::Tensor wave = clip(golden);
  const SpeechToTextTranscript offline = model->transcribe(wave);
  for (int64_t chunk :
       {int64_t{1}, int64_t{1919}, int64_t{1920}, int64_t{7 * 24000}, wave.size(0)}) {
    INFO("chunk " << chunk);
    require_same(streamed(model, wave, chunk), offline);
  }
  // Audio at 16 kHz with resampling on equals the file resampled whole.
  alto::models::SpeechToTextStreamOptions resample;
  resample.resample = true;
  SpeechToTextStream stream(model, resample);
  alto::audio::DecodeOptions at16k;
  at16k.sample_rate = 16000;
  const torch::Tensor wave16 =
      alto::audio::to_tensor(alto::audio::load_audio(golden.dir() + "/input.wav", at16k))[0];
  for (int64_t at = 0; at < wave16.size(0); at += 3000)
    stream.accept_waveform(16000,
                           wave16.narrow(0, at, std::min<int64_t>(3000, wave16.size(0) - at)));
  stream.input_finished();
  CHECK(stream.transcript().token_ids.size() == offline.token_ids.size());
}

TEST_CASE("Kyutai STT batched streams equal each stream alone", "[kyutai_stt][models]") {
  const GoldenModel golden(kGolden);
  const auto model = load(golden);
  const torch::Tensor wave = clip(golden);
  // Three streams of different lengths that join at different ticks and are fed in different
  // chunk sizes; a fourth slot stays empty, and one stream leaves early.
  const std::vector<torch::Tensor> waves{wave, wave.narrow(0, 5000, 40000) * 0.7,
                                         wave.flip(0).narrow(0, 0, 70000)};
  const std::vector<int64_t> join_tick{0, 3, 7}, chunk{4000, 1234, 24000};
  SpeechToTextBatch batch(model, 4);
  std::vector<int64_t> slot(3, -1), fed(3, 0);
  for (int64_t tick = 0;; ++tick) {
    bool busy = false;
    for (size_t i = 0; i < waves.size(); ++i) {
      if (tick < join_tick[i]) {
        busy = true;
        continue;
      }
      if (slot[i] < 0) slot[i] = batch.open();
      if (fed[i] < waves[i].size(0)) {
        const int64_t n = std::min(chunk[i], waves[i].size(0) - fed[i]);
        batch.accept_waveform(slot[i], 24000, waves[i].narrow(0, fed[i], n));
        fed[i] += n;
        if (fed[i] == waves[i].size(0)) batch.input_finished(slot[i]);
      }
      busy = busy || !batch.done(slot[i]);
    }
    batch.step();  // one decoder step per tick for whichever streams have a frame
    if (!busy) break;
  }
  batch.run();
  for (size_t i = 0; i < waves.size(); ++i) {
    INFO("stream " << i);
    REQUIRE(batch.done(slot[i]));
    require_same(batch.transcript(slot[i]), model->transcribe(waves[i]));
  }
  // A slot left and rejoined starts afresh.
  batch.close(slot[1]);
  const int64_t again = batch.open();
  batch.accept_waveform(again, 24000, waves[1]);
  batch.input_finished(again);
  batch.run();
  require_same(batch.transcript(again), model->transcribe(waves[1]));
}

TEST_CASE("Kyutai STT: bad input is an error naming the cause", "[kyutai_stt][models]") {
  const GoldenModel golden(kGolden);
  const auto model = load(golden);
  SpeechToTextStream stream(model);
  CHECK_THROWS_WITH(stream.accept_waveform(16000, torch::zeros({100})),
                    Catch::Contains("16000 Hz, the model takes 24000 Hz"));
  torch::Tensor nan = torch::zeros({100});
  nan[50] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(stream.accept_waveform(24000, nan), Catch::Contains("NaN"));
  CHECK_THROWS_WITH(model->transcribe(nan), Catch::Contains("NaN"));
  stream.accept_waveform(24000, torch::zeros({3000}));  // nothing was lost by the errors
  stream.input_finished();
  CHECK_THROWS_WITH(stream.accept_waveform(24000, torch::zeros({10})),
                    Catch::Contains("fed after input_finished()"));
  SpeechToTextBatch batch(model, 2);
  CHECK_THROWS_WITH(batch.accept_waveform(5, 24000, torch::zeros({10})),
                    Catch::Contains("slot 5 does not exist"));
  CHECK_THROWS_WITH(batch.accept_waveform(1, 24000, torch::zeros({10})),
                    Catch::Contains("slot 1 has no open stream"));
  CHECK_THROWS_WITH(model->transcribe_codes(torch::zeros({1, 3, 5}, torch::kInt64)),
                    Catch::Contains("[1, 4, frames]"));

  // A checkpoint whose decoder reads more codebooks than its codec has.
  namespace fs = std::filesystem;
  const fs::path copy = alto::test::temp_path("kyutai-bad-codebooks");
  fs::create_directories(copy);
  for (const auto& entry : fs::directory_iterator(golden.dir()))
    fs::copy_file(entry.path(), copy / entry.path().filename(),
                  fs::copy_options::overwrite_existing);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(copy / "config.json"));
  config["codec_config"]["num_quantizers"] = 8;
  std::ofstream(copy / "config.json") << config.dump();
  CHECK_THROWS_WITH(KyutaiSpeechToText::from_pretrained(copy.string()),
                    Catch::Contains("num_codebooks (4) differs from its codec's "
                                    "codec_config.num_quantizers (8)") &&
                        Catch::Contains("config.json"));
}

TEST_CASE("Kyutai STT: a long stream runs in constant memory", "[kyutai_stt][models]") {
  const GoldenModel golden(kGolden);
  const auto model = load(golden);
  SpeechToTextStream stream(model);
  const torch::Tensor noise = torch::randn({24000}) * 0.1;
  long after_warmup = 0;
  const int64_t seconds = 180;  // 3 minutes: 2250 frames, 6x the decoder's window
  for (int64_t s = 0; s < seconds; ++s) {
    stream.accept_waveform(24000, noise);
    if (s == 40) after_warmup = alto::test::resident_kb();  // past the window of 375 steps (30 s)
  }
  const long growth = alto::test::resident_kb() - after_warmup;
  INFO("resident memory grew by " << growth << " kB over " << seconds - 40 << " s");
  CHECK(growth < 4096);
  // One step per whole frame of the silence prefix and the audio, after the audio-BOS step.
  CHECK(static_cast<int64_t>(stream.transcript().token_ids.size()) ==
        (24000 + seconds * 24000) / 1920 + 1);
}

TEST_CASE("Kyutai STT words follow delayed-streams-modeling's timestamp rule",
          "[kyutai_stt][models]") {
  const GoldenModel golden(kGolden);
  const auto tokenizer = load(golden)->tokenizer();
  // No silence prefix or delay here, so positions map to p / 12.5 s. 0 = end of padding,
  // 3 = pad, 4 = "▁the", 6 = "▁is".
  alto::models::WordAssembler words(tokenizer, 12.5, 0.0, 0.0, 3);
  const std::vector<int64_t> tokens{5, 3, 0, 4, 3, 0, 6, 4, 3, 0, 4, 3};
  std::vector<TimedWord> out;
  for (size_t s = 0; s < tokens.size(); ++s)
    for (auto& w : words.push(tokens[s], static_cast<int64_t>(s))) out.push_back(w);
  REQUIRE(out.size() == 3);  // the last word waits for the end of the stream
  for (auto& w : words.finish()) out.push_back(w);
  REQUIRE(out.size() == 4);
  auto check = [&](size_t i, const std::string& text, int64_t from, int64_t to, int64_t decided) {
    INFO("word " << i);
    CHECK(out[i].text == text);
    CHECK(out[i].start == Approx(from / 12.5));
    CHECK(out[i].end == Approx(to / 12.5));
    CHECK(out[i].decided_at == Approx((decided + 1) / 12.5));
  };
  check(0, "the", 2, 4, 4);  // between the boundaries at positions 1 and 4
  check(1, "is", 5, 6, 8);   // two words without a boundary share [5, 8) by token count
  check(2, "the", 6, 8, 8);
  check(3, "the", 9, 11, 10);  // the last word: to the end of the stream (< 1 s)
}

TEST_CASE("Kyutai STT's transcript decodes like transformers' processor", "[kyutai_stt][models]") {
  const GoldenModel golden(kGolden);
  const auto model = load(golden);
  const SpeechToTextTranscript t = model->transcribe_codes(golden.tensor("audio_codes"));
  CHECK(t.text == golden.metadata("decoded_text"));
}
