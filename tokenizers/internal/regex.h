#pragma once
// The regular expressions of tokenizer pre-tokenisation (tokenizer.json's Split pattern,
// tekken.json's pattern): a backtracking matcher over code points with Oniguruma's leftmost-first
// semantics for the constructs these patterns use — alternation, (?:...), (?i:...) (ASCII case
// folding), (?=...) and (?!...), greedy and lazy ? * + {m,n}, classes with ranges, negation,
// \s \S \d \D \w \W \p{..} \P{..} (general categories), \r \n \t and escaped punctuation.
// Anything else is an alto::Unsupported naming the construct. Internal to tokenizers/.

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace alto::tokenizers {

class Regex {
 public:
  /// `pattern` in UTF-8; `where` names its source in errors.
  Regex(const std::string& pattern, const std::string& where);
  ~Regex();
  Regex(Regex&&) noexcept;

  /// The leftmost-first matches over `text`, as [begin, end) code point ranges, in order and
  /// non-overlapping (Oniguruma's find_iter; empty matches are skipped).
  std::vector<std::pair<size_t, size_t>> find_all(const std::vector<char32_t>& text) const;
  /// tokenizers' Split with the Isolated behaviour: the matches and the text between them, in
  /// order, covering `text`.
  std::vector<std::pair<size_t, size_t>> split(const std::vector<char32_t>& text) const;

  const std::string& pattern() const;

 private:
  struct Program;
  std::unique_ptr<const Program> program_;
};

}  // namespace alto::tokenizers
