#pragma once
// Standard base64 (RFC 4648, '=' padding optional), as tiktoken ranks, tekken.json's token bytes
// and tokenizer.json's precompiled normaliser maps store bytes.

#include <cstdint>
#include <string>

#include "alto/core/error.h"

namespace alto::tokenizers {

/// The bytes of `text`; alto::IoError naming `where` for a character outside the alphabet.
inline std::string base64_decode(const std::string& text, const std::string& where) {
  std::string out;
  uint32_t buffer = 0;  // the undecoded bits, at most 14 of them
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    uint32_t value;
    if (c >= 'A' && c <= 'Z') value = c - 'A';
    else if (c >= 'a' && c <= 'z') value = c - 'a' + 26;
    else if (c >= '0' && c <= '9') value = c - '0' + 52;
    else if (c == '+') value = 62;
    else if (c == '/') value = 63;
    else throw IoError(where + ": invalid base64 character '" + std::string(1, c) + "'");
    buffer = (buffer << 6 | value) & 0x3FFF;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>(buffer >> bits & 0xFF);
    }
  }
  return out;
}

}  // namespace alto::tokenizers
