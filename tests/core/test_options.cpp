// core/options, core/registry and the nested configs of core/internal/json_config: one schema
// per Options struct serves to_string, JSON, CLI text and Python; registries refuse duplicates.

#include <catch2/catch.hpp>
#include <fstream>
#include <optional>

#include "alto/core/internal/json_config.h"
#include "alto/core/options.h"
#include "alto/core/registry.h"
#include "test_util.h"

using Catch::Contains;

namespace {

enum class Color { kRed, kGreen };

struct Widget {
  int size = 3;
  uint64_t seed = 7;
  double scale = 0.5;
  bool enabled = true;
  std::string label = "x";
  std::optional<double> limit;
  Color color = Color::kRed;

  static const alto::OptionSchema<Widget>& schema() {
    static const auto s = alto::OptionSchema<Widget>("Widget")
                              .field("size", &Widget::size, "Size", {"n"})
                              .field("seed", &Widget::seed, "Seed")
                              .field("scale", &Widget::scale, "Scale")
                              .field("enabled", &Widget::enabled, "On")
                              .field("label", &Widget::label, "Label")
                              .field("limit", &Widget::limit, "Limit")
                              .choice("color", &Widget::color, "Color",
                                      {{"red", Color::kRed}, {"green", Color::kGreen}});
    return s;
  }
};

struct Thing {
  static const char* kind() { return "thing"; }
  int value = 0;
};

}  // namespace

TEST_CASE("an option schema prints, sets and checks every field", "[core][options]") {
  const auto& s = Widget::schema();
  CHECK(s.to_string(Widget{}) ==
        "Widget(size=3, seed=7, scale=0.5, enabled=true, label='x', limit=None, color='red')");
  const Widget w = s.make({{"size", int64_t{9}},
                           {"scale", int64_t{2}},  // an integer for a float field
                           {"limit", 1.25},
                           {"color", std::string("green")},
                           {"seed", 16000.0}});  // an integral float for an integer field
  CHECK(w.size == 9);
  CHECK(w.scale == 2.0);
  CHECK(w.limit == 1.25);
  CHECK(w.color == Color::kGreen);
  CHECK(w.seed == 16000);
  CHECK(s.fields()[0].aliases == std::vector<std::string>{"n"});
  CHECK(s.fields()[5].optional);
  CHECK(s.fields()[6].choices == std::vector<std::string>{"red", "green"});

  CHECK_THROWS_WITH(s.make({{"sise", int64_t{1}}}),
                    Contains("Widget has no option 'sise'") && Contains("size, seed"));
  CHECK_THROWS_WITH(s.make({{"size", 1.5}}), Contains("Widget.size must be an integer, got 1.5"));
  CHECK_THROWS_WITH(s.make({{"size", int64_t{1} << 40}}), Contains("Widget.size"));
  CHECK_THROWS_WITH(s.make({{"seed", int64_t{-1}}}),
                    Contains("Widget.seed must be an integer >= 0"));
  CHECK_THROWS_WITH(s.make({{"enabled", int64_t{1}}}),
                    Contains("Widget.enabled must be true or false"));
  CHECK_THROWS_WITH(s.make({{"color", std::string("blue")}}),
                    Contains("Widget.color") && Contains("red, green"));
  CHECK_THROWS_WITH(s.make({{"label", 3.0}}), Contains("Widget.label must be a string"));
  CHECK(!s.make({{"limit", std::monostate{}}}).limit);

  // Command-line text takes the field's kind.
  const auto fields = s.fields();
  CHECK(std::get<int64_t>(alto::parse_option_text(fields[0], "12", "--size")) == 12);
  CHECK(std::get<bool>(alto::parse_option_text(fields[3], "false", "--enabled")) == false);
  CHECK(std::holds_alternative<std::monostate>(
      alto::parse_option_text(fields[5], "none", "--limit")));
  CHECK_THROWS_WITH(alto::parse_option_text(fields[0], "12x", "--size"),
                    Contains("--size takes an integer, got '12x'"));
  CHECK_THROWS_WITH(alto::parse_option_text(fields[2], "", "--scale"), Contains("--scale"));
  CHECK(alto::format_number(0.1) == "0.1");
  CHECK(alto::format_number(1.0 / 3) == "0.3333333333333333");
}

TEST_CASE("registries refuse a key twice and name the known keys", "[core][registry]") {
  auto& registry = alto::Registry<Thing>::instance();
  registry.add("one", Thing{1});
  CHECK(registry.at("one", "here").value == 1);
  CHECK_THROWS_WITH(registry.add("one", Thing{2}), Contains("thing 'one' is registered twice"));
  CHECK_THROWS_AS(registry.at("two", "config.json"), alto::Unsupported);
  CHECK_THROWS_WITH(registry.at("two", "config.json"),
                    Contains("config.json: unknown thing 'two' (alto knows: one)"));
}

TEST_CASE("nested configs are read and reported like top-level ones", "[core][config]") {
  const std::string path = alto::test::temp_path("nested_config.json");
  std::ofstream(path) << R"({"model_type": "qwen2_audio",
    "text_config": {"num_attention_heads": 14, "num_key_value_heads": "four"},
    "audio_config": 3})";
  const auto config = alto::detail::JsonConfig::load(path);
  const auto text = config.sub("text_config");
  int64_t heads = 0;
  text.read("num_attention_heads", heads);
  CHECK(heads == 14);
  int64_t kv = 0;
  CHECK_THROWS_WITH(
      text.read("num_key_value_heads", kv),
      Contains(path + ": field 'text_config.num_key_value_heads' must be an integer"));
  CHECK_THROWS_WITH(config.sub("audio_config"),
                    Contains("field 'audio_config' must be an object, got 3"));
  CHECK_THROWS_WITH(config.sub("vision_config"), Contains("'vision_config' must be an object"));
  CHECK_THROWS_WITH(text.require("vocab_size"), Contains("missing field 'text_config.vocab_size'"));
  struct Heads {
    int64_t heads = 14, kv = 4;
    void validate() const {
      ALTO_CHECK(heads % kv == 0, "num_key_value_heads must divide num_attention_heads, got ",
                 heads, " and ", kv);
    }
  };
  CHECK_THROWS_WITH(text.validated(Heads{}),
                    Contains(path + ": text_config.num_key_value_heads must divide "
                                    "num_attention_heads, got 14 and 4"));
}
