// WhisperDecoder on the golden tiny checkpoint: the reference's greedy loop, beam search
// bookkeeping, Whisper's timestamp rules, language detection and the no-speech probability.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/core/error.h"
#include "alto/models/whisper/decoding.h"
#include "models/golden_model.h"

using namespace alto::models;
using alto::test::GoldenModel;

namespace {

struct Fixture {
  GoldenModel golden{"whisper-tiny-random"};
  const Whisper model = *Whisper::from_pretrained(golden.dir());
  WhisperDecoder decoder{model, WhisperSpecialTokens::for_vocab_size(51865),
                         WhisperGenerationConfig::from_json(golden.dir())};
  torch::Tensor encoded = model.encode(golden.tensor("input_features"));
};

WhisperDecodingOptions no_rules() {
  WhisperDecodingOptions o;
  o.language = "en";
  o.suppress_blank = false;
  o.suppress_tokens = false;
  return o;
}

// Sum of log_softmax over the sampled tokens, recomputed with one full decoder pass.
double rescore(const Fixture& f, const std::vector<int64_t>& prompt,
               const std::vector<int64_t>& sampled) {
  std::vector<int64_t> all = prompt;
  all.insert(all.end(), sampled.begin(), sampled.end());
  auto state = f.model.start(f.encoded);
  const auto logprobs = torch::log_softmax(
      f.model.decode(torch::tensor(all, torch::kInt64).unsqueeze(0), state)[0].to(torch::kFloat64),
      -1);
  double sum = 0;
  for (size_t i = 0; i < sampled.size(); ++i)
    sum += logprobs[prompt.size() - 1 + i][sampled[i]].item<double>();
  return sum;
}

}  // namespace

TEST_CASE("Whisper special tokens follow the vocabulary layout", "[whisper][decoding]") {
  const auto multi = WhisperSpecialTokens::for_vocab_size(51865);
  CHECK(multi.eot == 50257);
  CHECK(multi.sot == 50258);
  CHECK(multi.language_token("en") == 50259);
  CHECK(multi.language_token("su") == 50357);
  CHECK(multi.translate == 50358);
  CHECK(multi.transcribe == 50359);
  CHECK(multi.start_of_prev == 50361);
  CHECK(multi.no_speech == 50362);
  CHECK(multi.no_timestamps == 50363);
  CHECK(multi.timestamp_begin == 50364);
  CHECK(multi.languages.size() == 99);
  CHECK_THROWS_WITH(multi.language_token("yue"), Catch::Contains("unknown language 'yue'"));

  const auto v3 = WhisperSpecialTokens::for_vocab_size(51866);
  CHECK(v3.language_token("yue") == 50358);
  CHECK(v3.transcribe == 50360);
  CHECK(v3.no_timestamps == 50364);  // the 128-mel golden prompt: 50258 50259 50360 50364

  const auto english = WhisperSpecialTokens::for_vocab_size(51864);
  CHECK_FALSE(english.multilingual());
  CHECK(english.eot == 50256);
  CHECK(english.sot == 50257);
  CHECK(english.no_timestamps == 50362);
  CHECK(english.timestamp_begin == 50363);
  CHECK_THROWS_AS(WhisperSpecialTokens::for_vocab_size(50000), alto::Unsupported);
}

TEST_CASE("greedy decoding without rules is the reference's greedy loop", "[whisper][decoding]") {
  const Fixture f;
  auto o = no_rules();
  o.sample_len = 24;
  const auto result = f.decoder.decode(f.encoded, o);
  const auto expected = f.golden.tensor("greedy.tokens");
  CHECK(torch::equal(torch::tensor(result.tokens, torch::kInt64), expected));
  CHECK(result.language == "en");
  const std::vector<int64_t> prompt = {50258, 50259, 50359, 50363};
  CHECK(result.sum_logprob == Approx(rescore(f, prompt, result.tokens)).epsilon(1e-6));
  CHECK(result.avg_logprob == Approx(result.sum_logprob / 25));

  // The no-speech probability is read at <|startoftranscript|>, as the reference's logits say.
  const auto at_sot =
      torch::softmax(f.golden.tensor("decoder.logits")[0][0].to(torch::kFloat64), 0);
  CHECK(result.no_speech_prob == Approx(at_sot[50362].item<double>()).epsilon(1e-4));
}

TEST_CASE("beam search: one beam is greedy, scores are the hypotheses' logprobs",
          "[whisper][decoding]") {
  const Fixture f;
  auto o = no_rules();
  o.sample_len = 12;
  const auto greedy = f.decoder.decode(f.encoded, o);
  o.beam_size = 1;
  const auto one_beam = f.decoder.decode(f.encoded, o);
  CHECK(one_beam.tokens == greedy.tokens);
  CHECK(one_beam.sum_logprob == Approx(greedy.sum_logprob).epsilon(1e-9));

  const std::vector<int64_t> prompt = {50258, 50259, 50359, 50363};
  for (int beams : {2, 4}) {
    o.beam_size = beams;
    for (std::optional<double> penalty : {std::optional<double>{}, std::optional<double>{1.0}}) {
      o.length_penalty = penalty;
      const auto result = f.decoder.decode(f.encoded, o);
      INFO("beams " << beams);
      CHECK_FALSE(result.tokens.empty());
      // The beam's running score is the sum of its own tokens' logprobs: rows were kept in step
      // with their caches through every reordering.
      CHECK(result.sum_logprob == Approx(rescore(f, prompt, result.tokens)).epsilon(1e-5));
      // A wider search never ends below greedy's score over the same length.
      if (result.tokens.size() == greedy.tokens.size() && !penalty)
        CHECK(result.sum_logprob >= greedy.sum_logprob - 1e-9);
    }
  }
}

TEST_CASE("timestamp rules shape the sampled tokens", "[whisper][decoding]") {
  const Fixture f;
  const auto& special = f.decoder.special_tokens();
  WhisperDecodingOptions o;
  o.language = "en";
  o.timestamps = true;
  o.sample_len = 60;
  for (int beams : {0, 3}) {
    o.beam_size = beams;
    const auto result = f.decoder.decode(f.encoded, o);
    const auto& t = result.tokens;
    INFO("beams " << beams << ", " << t.size() << " tokens");
    REQUIRE_FALSE(t.empty());
    CHECK(special.is_timestamp(t[0]));
    CHECK(t[0] <= special.timestamp_begin + 50);  // within the first second
    int64_t last = -1;
    for (size_t i = 0; i < t.size(); ++i) {
      CHECK(t[i] != special.no_timestamps);
      CHECK(t[i] != special.sot);
      CHECK(t[i] != special.eot);
      if (!special.is_timestamp(t[i])) continue;
      CHECK(t[i] >= last);  // timestamps never decrease
      last = t[i];
      // Never three timestamps in a row.
      if (i >= 2) CHECK_FALSE((special.is_timestamp(t[i - 1]) && special.is_timestamp(t[i - 2])));
    }
  }
}

TEST_CASE("language detection and sampling", "[whisper][decoding]") {
  const Fixture f;
  const auto probs = f.decoder.detect_language(f.encoded);
  REQUIRE(probs.size() == 99);
  double total = 0;
  for (const auto& [code, p] : probs) total += p;
  CHECK(total == Approx(1.0));
  // The reference's logits after <|startoftranscript|>, restricted to the language tokens.
  const auto logits = f.golden.tensor("decoder.logits")[0][0].narrow(0, 50259, 99);
  const auto expected = torch::softmax(logits.to(torch::kFloat64), 0);
  CHECK(probs.at("en") == Approx(expected[0].item<double>()).margin(1e-5));
  CHECK(probs.at("de") == Approx(expected[2].item<double>()).margin(1e-5));
  WhisperDecodingOptions detect = no_rules();
  detect.language.clear();
  detect.sample_len = 2;
  const auto best = std::max_element(probs.begin(), probs.end(),
                                     [](auto& a, auto& b) { return a.second < b.second; });
  CHECK(f.decoder.decode(f.encoded, detect).language == best->first);

  auto o = no_rules();
  o.sample_len = 8;
  o.temperature = 1.0;
  o.best_of = 3;
  o.seed = 7;
  const auto a = f.decoder.decode(f.encoded, o);
  const auto b = f.decoder.decode(f.encoded, o);
  CHECK(a.tokens == b.tokens);  // seeded
  CHECK(a.temperature == 1.0);
  o.beam_size = 2;
  CHECK_THROWS_WITH(f.decoder.decode(f.encoded, o), Catch::Contains("temperature"));
  o = no_rules();
  o.task = "summarise";
  CHECK_THROWS_WITH(f.decoder.decode(f.encoded, o), Catch::Contains("task"));
  o = no_rules();
  o.language = "xx";
  CHECK_THROWS_WITH(f.decoder.decode(f.encoded, o), Catch::Contains("unknown language 'xx'"));
}
