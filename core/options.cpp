#include "alto/core/options.h"

#include <sstream>

namespace alto {

std::string format_number(double value) {
  for (int precision = 6;; ++precision) {
    std::ostringstream s;
    s.precision(precision);
    s << value;
    if (precision >= 17 || std::stod(s.str()) == value) return s.str();
  }
}

std::string format_option_value(const OptionValue& value) {
  struct Format {
    std::string operator()(std::monostate) const { return "None"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return format_number(d); }
    std::string operator()(const std::string& s) const { return "'" + s + "'"; }
  };
  return std::visit(Format{}, value);
}

std::string format_options(const std::string& type,
                           const std::vector<std::pair<std::string, OptionValue>>& values) {
  std::string out = type + "(";
  for (size_t i = 0; i < values.size(); ++i)
    out += (i ? ", " : "") + values[i].first + "=" + format_option_value(values[i].second);
  return out + ")";
}

OptionValue parse_option_text(const OptionField& field, const std::string& text,
                              const std::string& where) {
  if (field.optional && (text == "none" || text == "None")) return std::monostate{};
  auto bad = [&](const char* expected) -> OptionValue {
    throw InvalidArgument(where + " takes " + expected + ", got '" + text + "'");
  };
  switch (field.kind) {
    case OptionKind::kBool:
      if (text == "true" || text == "1") return true;
      if (text == "false" || text == "0") return false;
      return bad("true or false");
    case OptionKind::kInt: {
      size_t used = 0;
      try {
        const int64_t v = std::stoll(text, &used);
        if (used == text.size()) return v;
      } catch (const std::exception&) {
      }
      return bad("an integer");
    }
    case OptionKind::kFloat: {
      size_t used = 0;
      try {
        const double v = std::stod(text, &used);
        if (used == text.size()) return v;
      } catch (const std::exception&) {
      }
      return bad("a number");
    }
    case OptionKind::kString:
    case OptionKind::kChoice:
      return text;
  }
  return bad("a value");
}

}  // namespace alto
