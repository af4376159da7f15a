#pragma once
// Small string helpers shared by alto's modules.

#include <string>

namespace alto {

/// `s` without leading and trailing ASCII whitespace, as Python's str.strip().
inline std::string strip(const std::string& s) {
  const char* space = " \t\n\r\f\v";
  const auto begin = s.find_first_not_of(space);
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(space) - begin + 1);
}

}  // namespace alto
