#include "alto/tokenizers/internal/unicode.h"

#include <algorithm>
#include <cstdint>

#include "alto/core/error.h"

namespace alto::tokenizers::unicode {

namespace {

struct CodePointRange {
  char32_t first, last;
};
struct CategoryRange {
  char32_t first, last;
  char major, minor;
};
struct CombiningClassRange {
  char32_t first, last;
  uint8_t ccc;
};
struct Decomposition {
  char32_t code_point;
  size_t offset, length;
};
struct Composition {
  char32_t first, second, composite;
};
#include "alto/tokenizers/internal/unicode_tables.inc"

template <typename Range, size_t N>
const Range* find_range(const Range (&table)[N], char32_t c) {
  auto it = std::upper_bound(std::begin(table), std::end(table), c,
                             [](char32_t v, const Range& r) { return v < r.first; });
  return it != std::begin(table) && c <= (it - 1)->last ? it - 1 : nullptr;
}

// Hangul syllables decompose and compose by arithmetic (Unicode 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

uint8_t combining_class(char32_t c) {
  const CombiningClassRange* r = find_range(kCombiningClasses, c);
  return r ? r->ccc : 0;
}

void decompose(char32_t c, std::vector<char32_t>& out) {
  if (c >= kSBase && c < kSBase + kSCount) {
    const char32_t s = c - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  auto it = std::lower_bound(std::begin(kDecompositions), std::end(kDecompositions), c,
                             [](const Decomposition& d, char32_t v) { return d.code_point < v; });
  if (it == std::end(kDecompositions) || it->code_point != c) {
    out.push_back(c);
    return;
  }
  out.insert(out.end(), kDecompositionData + it->offset,
             kDecompositionData + it->offset + it->length);
}

// The primary composite of a starter and a following character, or 0.
char32_t compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount)
    return a + (b - kTBase);
  auto it = std::lower_bound(std::begin(kCompositions), std::end(kCompositions), std::make_pair(a, b),
                             [](const Composition& x, const std::pair<char32_t, char32_t>& v) {
                               return x.first != v.first ? x.first < v.first : x.second < v.second;
                             });
  return it != std::end(kCompositions) && it->first == a && it->second == b ? it->composite : 0;
}

}  // namespace

CodePoint next_code_point(const std::string& s, size_t i) {
  const unsigned char lead = static_cast<unsigned char>(s[i]);
  if (lead < 0x80) return {lead, 1, true};
  size_t length;
  char32_t value;
  unsigned char low = 0x80, high = 0xBF;  // the allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, value = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, value = lead & 0x0F;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, value = lead & 0x07;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return {0, 1, false};
  }
  for (size_t k = 1; k < length; ++k) {
    if (i + k >= s.size()) return {0, k, false};
    const unsigned char c = static_cast<unsigned char>(s[i + k]);
    if (c < (k == 1 ? low : 0x80) || c > (k == 1 ? high : 0xBF)) return {0, k, false};
    value = (value << 6) | (c & 0x3F);
  }
  return {value, length, true};
}

std::string replace_invalid_utf8(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const CodePoint c = next_code_point(bytes, i);
    if (c.valid)
      out.append(bytes, i, c.length);
    else
      out += "\xEF\xBF\xBD";
    i += c.length;
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

DecodedText decode_utf8(const std::string& text, const char* what) {
  DecodedText out;
  for (size_t i = 0; i < text.size();) {
    const CodePoint c = next_code_point(text, i);
    ALTO_CHECK(c.valid, what, ": the text is not valid UTF-8 (byte ", i, ")");
    out.code_points.push_back(c.value);
    out.offsets.push_back(i);
    i += c.length;
  }
  out.offsets.push_back(text.size());
  return out;
}

bool is_letter(char32_t c) { return find_range(kLetters, c) != nullptr; }
bool is_number(char32_t c) { return find_range(kNumbers, c) != nullptr; }
bool is_space(char32_t c) { return find_range(kWhiteSpace, c) != nullptr; }

std::string general_category(char32_t c) {
  const CategoryRange* r = find_range(kCategories, c);
  return r ? std::string{r->major, r->minor} : "Cn";
}

std::string nfc(const std::string& text) {
  // Below U+0300 nothing decomposes or combines.
  if (std::all_of(text.begin(), text.end(), [](char b) { return static_cast<unsigned char>(b) < 0xCC; }))
    return text;
  std::vector<char32_t> chars;
  for (char32_t c : decode_utf8(text, "NFC").code_points) decompose(c, chars);
  // Canonical order: stable sort of each run of non-starters by combining class.
  for (size_t i = 0; i < chars.size();) {
    if (combining_class(chars[i]) == 0) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < chars.size() && combining_class(chars[end]) != 0) ++end;
    std::stable_sort(chars.begin() + i, chars.begin() + end, [](char32_t a, char32_t b) {
      return combining_class(a) < combining_class(b);
    });
    i = end;
  }
  // Canonical composition: each character joins the last starter unless blocked.
  std::vector<char32_t> out;
  ptrdiff_t starter = -1;
  int last_class = -1;  // of the last character kept after the starter; -1: none
  for (char32_t c : chars) {
    const int cc = combining_class(c);
    const bool blocked = last_class != -1 && (last_class == 0 || last_class >= cc);
    if (starter >= 0 && !blocked) {
      if (const char32_t composite = compose(out[starter], c)) {
        out[starter] = composite;
        continue;
      }
    }
    if (cc == 0) {
      starter = static_cast<ptrdiff_t>(out.size());
      last_class = -1;
    } else {
      last_class = cc;
    }
    out.push_back(c);
  }
  std::string result;
  for (char32_t c : out) append_utf8(result, c);
  return result;
}

}  // namespace alto::tokenizers::unicode
