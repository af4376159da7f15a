// tokenizers/sentencepiece_tokenizer: a SentencePiece .model through libsentencepiece against
// python3-sentencepiece's ids and text (tests/data/tokenizers/kyutai_spm_cases.json), and the
// same model as transformers' Unigram tokenizer.json giving the same ids.

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "alto/core/error.h"
#include "alto/tokenizers/sentencepiece_tokenizer.h"
#include "test_util.h"

using alto::tokenizers::SentencePieceTokenizer;
using alto::tokenizers::TextTokenizer;

namespace {

const std::string kModelDir = "models/kyutai-stt-tiny-random";

nlohmann::json cases() {
  std::ifstream in(alto::test::data_path("tokenizers/kyutai_spm_cases.json"));
  return nlohmann::json::parse(in);
}

// Runs of spaces: the .model collapses them (remove_extra_whitespaces), the converted
// tokenizer.json does not, so only texts without them are shared.
bool plain_spacing(const std::string& text) {
  return text.find("  ") == std::string::npos && (text.empty() || text.front() != ' ') &&
         (text.empty() || text.back() != ' ') && text.find_first_of("\t\n") == std::string::npos;
}

}  // namespace

TEST_CASE("a SentencePiece .model encodes and decodes as python sentencepiece",
          "[tokenizers][sentencepiece]") {
  const auto spm = SentencePieceTokenizer::from_pretrained(
      alto::test::data_path(kModelDir + "/tokenizer_spm.model"));
  const nlohmann::json reference = cases();
  CHECK(spm->vocab_size() == 300);
  for (const auto& c : reference["cases"]) {
    const std::string text = c["text"];
    INFO("text: " << text);
    const std::vector<int64_t> ids = spm->encode(text);
    CHECK(ids == c["ids"].get<std::vector<int64_t>>());
    CHECK(spm->decode(ids, true) == c["decoded"].get<std::string>());
    // Pieces by id; python gives an unknown piece's own text, alto the unknown piece.
    const auto expected = c["pieces"].get<std::vector<std::string>>();
    REQUIRE(expected.size() == ids.size());
    for (size_t i = 0; i < ids.size(); ++i)
      CHECK(spm->id_to_token(ids[i]) == (ids[i] == 0 ? "<unk>" : expected[i]));
  }
  CHECK(spm->decode(reference["decode_ids"].get<std::vector<int64_t>>(), true) ==
        reference["decode_text"].get<std::string>());
  CHECK(spm->token_to_id("<pad>") == 3);
  CHECK(spm->token_to_id("no such piece") == -1);
  CHECK(spm->is_special(0));
  CHECK_FALSE(spm->is_special(4));
  CHECK_THROWS_AS(spm->id_to_token(300), alto::InvalidArgument);
  // Offsets cover the bytes of each piece.
  const auto spans = spm->encode_with_offsets("the mountains");
  REQUIRE(spans.size() == 2);
  CHECK(spans[1].begin == 3);
  CHECK(spans[1].end == 13);
}

TEST_CASE("the Unigram tokenizer.json of the same model gives the same ids",
          "[tokenizers][sentencepiece]") {
  const auto json = TextTokenizer::from_pretrained(alto::test::data_path(kModelDir));
  const auto spm = SentencePieceTokenizer::from_pretrained(
      alto::test::data_path(kModelDir + "/tokenizer_spm.model"));
  const nlohmann::json reference = cases();  // alive for the loop (cases()["cases"] is not)
  for (const auto& c : reference["cases"]) {
    const std::string text = c["text"];
    if (!plain_spacing(text)) continue;
    INFO("text: " << text);
    const std::vector<int64_t> ids = json->encode(text);
    CHECK(ids == spm->encode(text));
    // The converted decoder: "▁" -> " ", one leading space stripped; specials dropped — <unk>
    // (id 0) among them, where SentencePiece writes " ⁇ ".
    if (ids.empty() || std::count(ids.begin(), ids.end(), 0) > 0) continue;
    CHECK(json->decode(ids, true) == spm->decode(ids, true));
  }
  // Added tokens are split out of the text first, as transformers does; Metaspace's "first"
  // scheme prepends "▁" to the text's first section only, so the "the" after </s> is not "▁the".
  const std::vector<int64_t> split = json->encode("the</s>the");
  REQUIRE(split.size() > 3);
  CHECK(split[0] == 4);
  CHECK(split[1] == 2);
  for (size_t i = 2; i < split.size(); ++i)
    CHECK(json->id_to_token(split[i]).rfind("\u2581", 0) == std::string::npos);
  CHECK(json->decode(split, false) == "the</s>the");
  CHECK(json->decode({1, 4, 3, 300}, false) == "<s> the<pad>");
  CHECK(json->decode({1, 4, 3, 300}, true) == "the");
}

TEST_CASE("bad SentencePiece files are errors naming them", "[tokenizers][sentencepiece]") {
  const std::string broken = alto::test::temp_path("broken.model");
  alto::test::write_bytes(broken, {1, 2, 3, 4, 5});
  CHECK_THROWS_WITH(SentencePieceTokenizer::from_pretrained(broken),
                    Catch::Contains(broken) && Catch::Contains("not a SentencePiece model"));
  const std::string bpe = alto::test::temp_path("bpe.json");
  std::ofstream(bpe) << R"({"model": {"type": "WordPiece", "vocab": {}}})";
  CHECK_THROWS_AS(SentencePieceTokenizer::from_pretrained(bpe), alto::Unsupported);
  const std::string no_unk = alto::test::temp_path("no_unk.json");
  std::ofstream(no_unk)
      << R"({"model": {"type": "Unigram", "unk_id": null, "vocab": [["a", 0.0]]},
            "pre_tokenizer": {"type": "Metaspace", "replacement": "▁"}})";
  CHECK_THROWS_WITH(SentencePieceTokenizer::from_pretrained(no_unk),
                    Catch::Contains("unk_id") && Catch::Contains(no_unk));
}
