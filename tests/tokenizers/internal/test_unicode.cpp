// tokenizers/internal/unicode: NFC equals unicodedata.normalize("NFC") on the edge cases of
// tests/data/tokenizers/pretokenizer_cases.json; categories and UTF-8 handling.

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "alto/core/error.h"
#include "alto/tokenizers/internal/unicode.h"
#include "test_util.h"

namespace unicode = alto::tokenizers::unicode;

TEST_CASE("NFC composes as unicodedata does", "[tokenizer]") {
  std::ifstream in(alto::test::data_path("tokenizers/pretokenizer_cases.json"));
  const auto reference = nlohmann::json::parse(in);
  for (const auto& c : reference["cases"]) {
    INFO(c["text"].get<std::string>());
    CHECK(unicode::nfc(c["text"]) == c["nfc"].get<std::string>());
  }
  // Singletons decompose for good; Hangul composes by arithmetic; an excluded composite stays
  // decomposed.
  CHECK(unicode::nfc("\u212B") == "\u00C5");                   // ANGSTROM SIGN -> Å
  CHECK(unicode::nfc("\u1100\u1161\u11A8") == "\uAC01");       // ᄀ ᅡ ᆨ -> 각
  CHECK(unicode::nfc("\u0915\u093C") == "\u0915\u093C");       // QA is a composition exclusion
  CHECK(unicode::nfc("a\u0328\u0301") == "\u0105\u0301");      // ogonek (202) before acute (230)
}

TEST_CASE("general categories and UTF-8", "[tokenizer]") {
  CHECK(unicode::general_category(U'A') == "Lu");
  CHECK(unicode::general_category(U'\u0301') == "Mn");
  CHECK(unicode::general_category(U'\u4E2D') == "Lo");
  CHECK(unicode::general_category(0x10FFFF) == "Cn");
  CHECK(unicode::is_space(U'\u3000'));
  CHECK_FALSE(unicode::is_space(U'\u200B'));
  CHECK(unicode::replace_invalid_utf8("a\xFF" "b\xE2\x82") == "a\uFFFD" "b\uFFFD");
  CHECK_THROWS_WITH(unicode::decode_utf8("ok\xC0", "field"), Catch::Contains("field") &&
                                                                  Catch::Contains("byte 2"));
}
