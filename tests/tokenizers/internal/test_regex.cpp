// tokenizers/internal/regex: the pre-tokenisation patterns of GPT-2, Qwen2, Tekken and o200k
// split Unicode and whitespace edge cases exactly where the `regex` module (Oniguruma's
// semantics) does (tests/data/tokenizers/pretokenizer_cases.json, from
// scripts/gen-tokenizer-references.py).

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "alto/core/error.h"
#include "alto/tokenizers/internal/regex.h"
#include "alto/tokenizers/internal/unicode.h"
#include "test_util.h"

using alto::tokenizers::Regex;
using nlohmann::json;

namespace {
json cases() {
  std::ifstream in(alto::test::data_path("tokenizers/pretokenizer_cases.json"));
  return json::parse(in);
}
}  // namespace

TEST_CASE("pre-tokenizer patterns split as the regex module does", "[tokenizer]") {
  const json reference = cases();
  for (const auto& [name, pattern] : reference["patterns"].items()) {
    const Regex regex(pattern.get<std::string>(), name);
    for (const auto& c : reference["cases"]) {
      const std::string text = c["text"];
      INFO(name << ": '" << text << "'");
      const auto code_points =
          alto::tokenizers::unicode::decode_utf8(text, "test").code_points;
      std::vector<std::vector<size_t>> found;
      for (const auto& [begin, end] : regex.find_all(code_points)) found.push_back({begin, end});
      CHECK(found == c["splits"][name].get<std::vector<std::vector<size_t>>>());
      // Isolated splitting covers the text with the matches and the gaps between them.
      size_t at = 0;
      for (const auto& [begin, end] : regex.split(code_points)) {
        CHECK(begin == at);
        at = end;
      }
      CHECK(at == code_points.size());
    }
  }
}

TEST_CASE("regex: quantifiers, lookahead, case folding and what it refuses", "[tokenizer]") {
  auto matches = [](const std::string& pattern, const std::string& text) {
    const auto cps = alto::tokenizers::unicode::decode_utf8(text, "test").code_points;
    std::vector<std::pair<size_t, size_t>> out = Regex(pattern, "test").find_all(cps);
    return out;
  };
  using Ranges = std::vector<std::pair<size_t, size_t>>;
  CHECK(matches("a{2,3}", "aaaaaaa") == Ranges{{0, 3}, {3, 6}});
  CHECK(matches("a+?b", "aaab") == Ranges{{0, 4}});
  CHECK(matches("(?:ab)+", "ababxab") == Ranges{{0, 4}, {5, 7}});
  CHECK(matches("\\s+(?!\\S)|\\s+", "a   b") == Ranges{{1, 3}, {3, 4}});
  CHECK(matches("(?i:'ll)", "'LL 'll 'Ll") == Ranges{{0, 3}, {4, 7}, {8, 11}});
  CHECK(matches("[^a-c\\d]+", "abc12xyz") == Ranges{{5, 8}});
  CHECK(matches("\\p{Lu}\\p{Ll}+", "Héllo wORLD Ünïcode") == Ranges{{0, 5}, {12, 19}});
  CHECK(matches("^a|b$", "aab") == Ranges{{0, 1}, {2, 3}});
  for (const char* bad : {"(?<name>a)", "\\bword", "a++", "[a", "(a", "a)", "\\p{Greek}", "*a"})
    CHECK_THROWS_AS(Regex(bad, "tokenizer.json"), alto::Unsupported);
  CHECK_THROWS_WITH(Regex("a\\bb", "tokenizer.json"),
                    Catch::Contains("tokenizer.json") && Catch::Contains("escape \\b"));
  // A pattern from a file that backtracks without bound, or nests once per repetition of a
  // long run, is an error naming it, not a hang or a stack overflow.
  CHECK_THROWS_WITH(matches("(?:a*)*b", std::string(40, 'a')),
                    Catch::Contains("'(?:a*)*b'") && Catch::Contains("too many steps"));
  std::string long_run;
  for (int i = 0; i < 5000; ++i) long_run += "ab";
  CHECK_THROWS_WITH(matches("(?:ab)+", long_run), Catch::Contains("nests too deep"));
  CHECK(matches("(?:ab)+", long_run.substr(0, 1000)) == Ranges{{0, 1000}});
}
