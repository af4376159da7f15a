#pragma once
// One declaration per option field. An Options struct lists its fields once, in a schema:
// name (the reference library's), member, help and the values it accepts. That schema serves
// to_string, the JSON readers (preprocessor_config.json), the CLI flags and the Python keyword
// arguments, so a field added to a struct reaches all of them. Cross-field rules stay in the
// struct's own validate().

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "alto/core/error.h"

namespace alto {

/// A field's value as it comes from outside (JSON, a CLI flag, a Python keyword).
/// monostate is "None" (an unset optional field).
using OptionValue = std::variant<std::monostate, bool, int64_t, double, std::string>;
/// Field name -> value, as callers hand them to a registry's factory.
using OptionValues = std::map<std::string, OptionValue>;

/// How a value of a field is spelled; a value is converted to the field's kind when set.
enum class OptionKind { kBool, kInt, kFloat, kString, kChoice };

/// A check of a field's own value that OptionSchema::check applies (cross-field rules stay in
/// the struct's validate()).
enum class OptionRule { kAny, kPositive };

/// What every consumer needs to know of a field without knowing its struct.
struct OptionField {
  std::string name;
  OptionKind kind = OptionKind::kFloat;
  std::string help;
  /// kChoice: the accepted names.
  std::vector<std::string> choices;
  /// Other names for the same field on the command line ("sample-rate" for sample_frequency).
  std::vector<std::string> aliases;
  bool optional = false;  // may be None
  /// The default as text (format_option_value of a default-constructed struct's value).
  std::string default_text;
};

/// The names of an enum's values, the first name of a value being how it prints.
template <typename E>
using ChoiceNames = std::vector<std::pair<std::string, E>>;

/// The value `text` names; alto::InvalidArgument naming `what` and the known names otherwise.
template <typename E>
E parse_choice(const ChoiceNames<E>& names, const std::string& text, const std::string& what) {
  for (const auto& [name, value] : names)
    if (name == text) return value;
  std::string known;
  for (const auto& [name, _] : names) known += (known.empty() ? "" : ", ") + name;
  throw InvalidArgument("unknown " + what + " '" + text + "' (expected one of " + known + ")");
}
template <typename E>
std::string choice_name(const ChoiceNames<E>& names, E value) {
  for (const auto& [name, v] : names)
    if (v == value) return name;
  return "?";
}

/// The shortest decimal text that reads back as the same double.
std::string format_number(double value);
/// Repr-style text of a value: true/false, numbers, 'strings', None.
std::string format_option_value(const OptionValue& value);
/// "Type(a=1, b='x')".
std::string format_options(const std::string& type,
                           const std::vector<std::pair<std::string, OptionValue>>& values);
/// Text as a command line gives it ("true", "0.5", "povey") -> the value of `field`'s kind.
/// Errors name `where` (e.g. "--frame-shift") and the expected form.
OptionValue parse_option_text(const OptionField& field, const std::string& text,
                              const std::string& where);

/// The typed schema of one Options struct.
template <typename Options>
class OptionSchema {
 public:
  explicit OptionSchema(std::string type) : type_(std::move(type)) {}

  /// A bool, integer, floating-point or string member (or std::optional of one).
  template <typename T>
  OptionSchema& field(const char* name, T Options::*member, const char* help,
                      std::vector<std::string> aliases = {}, OptionRule rule = OptionRule::kAny) {
    Entry e;
    e.rule = rule;
    e.field.name = name;
    e.field.help = help;
    e.field.aliases = std::move(aliases);
    using V = typename Unwrap<T>::type;
    e.field.optional = Unwrap<T>::optional;
    e.field.kind = kind_of<V>();
    const std::string type = type_;
    e.get = [member](const Options& o) { return to_value(o.*member); };
    e.set = [member, type, name = std::string(name)](Options& o, const OptionValue& v) {
      assign(o.*member, v, type + "." + name);
    };
    entries_.push_back(std::move(e));
    return *this;
  }

  /// An enum member spelled by name ("povey", "reflect").
  template <typename E>
  OptionSchema& choice(const char* name, E Options::*member, const char* help,
                       const ChoiceNames<E>& names) {
    Entry e;
    e.field.name = name;
    e.field.help = help;
    e.field.kind = OptionKind::kChoice;
    for (const auto& [text, _] : names) e.field.choices.push_back(text);
    const std::string where = type_ + "." + name;
    e.get = [member, names](const Options& o) -> OptionValue {
      return choice_name(names, o.*member);
    };
    e.set = [member, names, where](Options& o, const OptionValue& v) {
      const std::string* text = std::get_if<std::string>(&v);
      if (!text) wrong(where, "a name", v);
      o.*member = parse_choice(names, *text, where);
    };
    entries_.push_back(std::move(e));
    return *this;
  }

  /// The fields of another schema whose struct is a base of Options (Kaldi MFCC on fbank), but
  /// those named in `except` (fields the derived struct fixes).
  template <typename Base>
  OptionSchema& include(const OptionSchema<Base>& base,
                        const std::vector<std::string>& except = {}) {
    static_assert(std::is_base_of_v<Base, Options>);
    for (const auto& b : base.entries_)
      if (std::find(except.begin(), except.end(), b.field.name) == except.end())
        entries_.push_back({b.field, b.rule, [get = b.get](const Options& o) { return get(o); },
                            [set = b.set](Options& o, const OptionValue& v) { set(o, v); }});
    return *this;
  }

  /// A field that must be > 0 (a size, a count, a rate).
  template <typename T>
  OptionSchema& positive(const char* name, T Options::*member, const char* help) {
    return field(name, member, help, {}, OptionRule::kPositive);
  }

  const std::string& type() const { return type_; }

  /// Applies each field's rule; alto::InvalidArgument naming the first field that breaks it.
  void check(const Options& o) const {
    for (const auto& e : entries_) {
      if (e.rule != OptionRule::kPositive) continue;
      const OptionValue v = e.get(o);
      const double value = std::holds_alternative<int64_t>(v)  ? std::get<int64_t>(v)
                           : std::holds_alternative<double>(v) ? std::get<double>(v)
                                                               : 1.0;
      if (!(value > 0))
        throw InvalidArgument(type_ + "." + e.field.name + " must be positive, got " +
                              format_option_value(v));
    }
  }
  std::vector<OptionField> fields() const {
    const Options defaults{};
    std::vector<OptionField> out;
    for (const auto& e : entries_) {
      out.push_back(e.field);
      out.back().default_text = format_option_value(e.get(defaults));
    }
    return out;
  }
  std::vector<std::pair<std::string, OptionValue>> values(const Options& o) const {
    std::vector<std::pair<std::string, OptionValue>> out;
    for (const auto& e : entries_) out.emplace_back(e.field.name, e.get(o));
    return out;
  }
  std::string to_string(const Options& o) const { return format_options(type_, values(o)); }

  /// Sets the named fields; an unknown name is an alto::InvalidArgument listing the known ones.
  void set(Options& o, const OptionValues& values) const {
    for (const auto& [name, value] : values) find(name).set(o, value);
  }
  /// The options of `values` over the defaults.
  Options make(const OptionValues& values) const {
    Options o;
    set(o, values);
    return o;
  }

 private:
  template <typename>
  friend class OptionSchema;

  struct Entry {
    OptionField field;
    OptionRule rule = OptionRule::kAny;
    std::function<OptionValue(const Options&)> get;
    std::function<void(Options&, const OptionValue&)> set;
  };

  const Entry& find(const std::string& name) const {
    for (const auto& e : entries_)
      if (e.field.name == name) return e;
    std::string known;
    for (const auto& e : entries_) known += (known.empty() ? "" : ", ") + e.field.name;
    throw InvalidArgument(type_ + " has no option '" + name + "' (options: " + known + ")");
  }

  template <typename T>
  struct Unwrap {
    using type = T;
    static constexpr bool optional = false;
  };
  template <typename T>
  struct Unwrap<std::optional<T>> {
    using type = T;
    static constexpr bool optional = true;
  };

  template <typename V>
  static constexpr OptionKind kind_of() {
    if constexpr (std::is_same_v<V, bool>)
      return OptionKind::kBool;
    else if constexpr (std::is_integral_v<V>)
      return OptionKind::kInt;
    else if constexpr (std::is_floating_point_v<V>)
      return OptionKind::kFloat;
    else {
      static_assert(std::is_same_v<V, std::string>, "unsupported option type");
      return OptionKind::kString;
    }
  }

  template <typename T>
  static OptionValue to_value(const T& v) {
    if constexpr (Unwrap<T>::optional) {
      return v ? to_value(*v) : OptionValue{};
    } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string>) {
      return v;
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<int64_t>(v);
    } else {
      return static_cast<double>(v);
    }
  }

  template <typename T>
  static void assign(T& out, const OptionValue& v, const std::string& where) {
    if constexpr (Unwrap<T>::optional) {
      if (std::holds_alternative<std::monostate>(v)) {
        out.reset();
      } else {
        typename Unwrap<T>::type value{};
        assign(value, v, where);
        out = value;
      }
    } else if constexpr (std::is_same_v<T, bool>) {
      const bool* b = std::get_if<bool>(&v);
      if (!b) wrong(where, "true or false", v);
      out = *b;
    } else if constexpr (std::is_same_v<T, std::string>) {
      const std::string* s = std::get_if<std::string>(&v);
      if (!s) wrong(where, "a string", v);
      out = *s;
    } else if constexpr (std::is_integral_v<T>) {
      // transformers writes some integers as floats (16000.0): integral values are accepted.
      int64_t i = 0;
      if (const int64_t* p = std::get_if<int64_t>(&v))
        i = *p;
      else if (const double* d = std::get_if<double>(&v);
               d && std::floor(*d) == *d && std::fabs(*d) < 9.2e18)
        i = static_cast<int64_t>(*d);
      else
        wrong(where, "an integer", v);
      if constexpr (std::is_unsigned_v<T>) {
        if (i < 0) wrong(where, "an integer >= 0", v);
      }
      if (static_cast<int64_t>(static_cast<T>(i)) != i) wrong(where, "an integer in range", v);
      out = static_cast<T>(i);
    } else {
      if (const double* d = std::get_if<double>(&v))
        out = static_cast<T>(*d);
      else if (const int64_t* p = std::get_if<int64_t>(&v))
        out = static_cast<T>(*p);
      else
        wrong(where, "a number", v);
    }
  }

  [[noreturn]] static void wrong(const std::string& where, const char* expected,
                                 const OptionValue& v) {
    throw InvalidArgument(where + " must be " + expected + ", got " + format_option_value(v));
  }

  std::string type_;
  std::vector<Entry> entries_;
};

}  // namespace alto
