#pragma once
// The Unicode a tokenizer needs, from the tables scripts/gen_unicode_tables.cpp writes (ICU's
// data): UTF-8 decoding as Python decodes it, character classes, general categories and NFC.
// Internal to tokenizers/.

#include <cstddef>
#include <string>
#include <vector>

namespace alto::tokenizers::unicode {

struct CodePoint {
  char32_t value = 0;
  size_t length = 0;  // bytes; for invalid input, the maximal invalid subpart (>= 1)
  bool valid = false;
};

/// The code point starting at byte `i` of `s`.
CodePoint next_code_point(const std::string& s, size_t i);
void append_utf8(std::string& out, char32_t c);
/// Python's bytes.decode("utf-8", errors="replace"): one U+FFFD per maximal invalid subpart.
std::string replace_invalid_utf8(const std::string& bytes);

/// `text` as code points, with the byte offset of each and the end; alto::InvalidArgument
/// naming `what` on invalid UTF-8.
struct DecodedText {
  std::vector<char32_t> code_points;
  std::vector<size_t> offsets;  // code_points.size() + 1 entries
};
DecodedText decode_utf8(const std::string& text, const char* what);

bool is_letter(char32_t c);  // \p{L}
bool is_number(char32_t c);  // \p{N}
bool is_space(char32_t c);   // \s: White_Space
/// The two-letter general category ("Lu", "Mn"); "Cn" when unassigned.
std::string general_category(char32_t c);

/// Canonical composition (NFC) of valid UTF-8.
std::string nfc(const std::string& text);

}  // namespace alto::tokenizers::unicode
