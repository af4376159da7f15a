// BpeTokenizer against tests/data/tokenizers/whisper-multilingual (copied from
// ../shared/golden/tokenizers; README.md there): every case, through all three loaders.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "alto/core/error.h"
#include "alto/models/whisper/decoding.h"
#include "alto/tokenizers/bpe_tokenizer.h"
#include "test_util.h"

using alto::tokenizers::BpeTokenizer;
using nlohmann::json;

namespace {

const std::string kDir = alto::test::data_path("tokenizers/whisper-multilingual");

json load(const std::string& name) {
  std::ifstream in(kDir + "/" + name);
  return json::parse(in);
}

// The three ways the Hub and openai ship this tokenizer, each from its own files only.
std::vector<std::pair<std::string, BpeTokenizer>> loaders() {
  namespace fs = std::filesystem;
  const std::string hf_json = alto::test::temp_path("tokenizer-json");
  const std::string hf_slow = alto::test::temp_path("tokenizer-slow");
  fs::create_directories(hf_json);
  fs::create_directories(hf_slow);
  fs::copy_file(kDir + "/tokenizer.json", hf_json + "/tokenizer.json",
                fs::copy_options::overwrite_existing);
  for (const char* f : {"vocab.json", "merges.txt", "added_tokens.json", "special_tokens_map.json"})
    fs::copy_file(kDir + "/" + f, hf_slow + "/" + f, fs::copy_options::overwrite_existing);
  return {
      {"tokenizer.json", *BpeTokenizer::from_pretrained(hf_json)},
      {"vocab.json+merges.txt", *BpeTokenizer::from_pretrained(hf_slow)},
      {"multilingual.tiktoken", *BpeTokenizer::from_pretrained(kDir + "/multilingual.tiktoken")}};
}

std::vector<int64_t> ids_of(const json& j) { return j.get<std::vector<int64_t>>(); }

void check_timestamp_decoding(const BpeTokenizer& t, const std::vector<int64_t>& ids,
                              const json& expected) {
  CHECK(t.decode(ids) == expected["decoded"].get<std::string>());
  CHECK(t.decode(ids, {true, false}) == expected["decoded_skip_special"].get<std::string>());
  CHECK(t.decode(ids, {false, true}) == expected["decoded_with_timestamps"].get<std::string>());
  CHECK(t.decode(ids, {true, true}) ==
        expected["decoded_with_timestamps_skip_special"].get<std::string>());
  CHECK(t.decode_openai(ids) == expected["openai_decode"].get<std::string>());
  CHECK(t.decode_openai(ids, true) == expected["openai_decode_with_timestamps"].get<std::string>());
  const auto offsets = t.offsets(ids);
  REQUIRE(offsets.size() == expected["offsets"].size());
  for (size_t k = 0; k < offsets.size(); ++k) {
    const json& e = expected["offsets"][k];
    CHECK(offsets[k].text == e["text"].get<std::string>());
    CHECK(offsets[k].start == Approx(e["timestamp"][0].get<double>()).margin(1e-6));
    CHECK(offsets[k].end == Approx(e["timestamp"][1].get<double>()).margin(1e-6));
  }
}

}  // namespace

TEST_CASE("every encoding and decoding case, through every loader", "[tokenizer]") {
  const json cases = load("cases.json");
  REQUIRE(cases.size() == 62);
  for (const auto& [loader, t] : loaders()) {
    CHECK(t.vocab_size() == 51865);
    for (const json& c : cases) {
      INFO(loader << ": " << c["name"].get<std::string>());
      const std::string text = c["text"].get<std::string>();
      const auto ids = ids_of(c["ids"]);
      CHECK(t.encode(text) == ids);
      CHECK(t.encode(text, /*split_special_tokens=*/true) == ids_of(c["ids_plain"]));
      if (!c["openai_encode_default"].is_null()) CHECK(ids_of(c["openai_encode_default"]) == ids);
      const auto tokens = c["tokens"].get<std::vector<std::string>>();
      REQUIRE(tokens.size() == ids.size());
      for (size_t k = 0; k < ids.size(); ++k) {
        CHECK(t.id_to_token(ids[k]) == tokens[k]);
        CHECK(t.decode({ids[k]}) == c["per_token_decoded"][k].get<std::string>());
      }
      CHECK(t.decode(ids) == c["decoded"].get<std::string>());
      const auto with_prefix = ids_of(c["ids_with_prefix"]);
      CHECK(t.decode(with_prefix) == c["decoded_with_prefix"].get<std::string>());
      CHECK(t.decode(with_prefix, {true, false}) == c["decoded_skip_special"].get<std::string>());
      check_timestamp_decoding(t, ids_of(c["timestamps"]["ids"]), c["timestamps"]);
    }
  }
}

TEST_CASE("every decode-only case: segments, windows, prompts", "[tokenizer]") {
  const json cases = load("decode_cases.json");
  REQUIRE(cases.size() == 14);
  for (const auto& [loader, t] : loaders())
    for (const json& c : cases) {
      INFO(loader << ": " << c["name"].get<std::string>());
      check_timestamp_decoding(t, ids_of(c["ids"]), c);
    }
}

TEST_CASE("Whisper's special tokens by name, and offsets", "[tokenizer]") {
  for (const auto& [loader, t] : loaders()) {
    INFO(loader);
    const auto w = alto::models::WhisperSpecialTokens::from_tokenizer(t);
    CHECK(w.eot == 50257);
    CHECK(w.sot == 50258);
    CHECK(w.language_token("en") == 50259);
    CHECK(w.language_token("su") == 50357);
    CHECK(w.translate == 50358);
    CHECK(w.transcribe == 50359);
    CHECK(w.start_of_lm == 50360);
    CHECK(w.start_of_prev == 50361);
    CHECK(w.no_speech == 50362);
    CHECK(w.no_timestamps == 50363);
    CHECK(w.timestamp_begin == 50364);
    CHECK(w.languages.size() == 99);
    CHECK(t.is_special(50363));
    CHECK_FALSE(t.is_special(50364));  // timestamps are added tokens, not special ones
    CHECK(t.token_to_id("<|30.00|>") == 51864);
    CHECK_THROWS_WITH(w.language_token("xx"), Catch::Contains("unknown language 'xx'"));
    CHECK_THROWS_AS(t.encode("\xff\xfe"), alto::InvalidArgument);
    // Each token covers its own bytes of the text, special tokens included.
    const std::string text = "<|en|> Hello, wörld!";
    const auto spans = t.encode_with_offsets(text);
    REQUIRE(spans.size() == t.encode(text).size());
    CHECK(spans.front().id == 50259);
    CHECK(spans.front().end == 6);
    CHECK(spans.back().end == text.size());
    for (size_t i = 1; i < spans.size(); ++i) CHECK(spans[i].begin == spans[i - 1].end);
    CHECK(t.decode(t.encode(text), true) == " Hello, wörld!");
  }
  // The text-tokenizer registry finds the format from the folder.
  const auto any = alto::tokenizers::TextTokenizer::from_pretrained(
      alto::test::data_path("tokenizers/whisper-multilingual"));
  CHECK(any->encode("Hello world") ==
        BpeTokenizer::from_pretrained(alto::test::data_path("tokenizers/whisper-multilingual"))
            ->encode("Hello world"));
  CHECK_THROWS_AS(
      alto::tokenizers::TextTokenizer::from_pretrained(alto::test::data_path("features")),
      alto::IoError);
}

TEST_CASE("tokenizer files that are missing or corrupt", "[tokenizer]") {
  namespace fs = std::filesystem;
  CHECK_THROWS_AS(BpeTokenizer::from_pretrained(alto::test::temp_path("none")), alto::IoError);
  const std::string empty = alto::test::temp_path("empty-tokenizer");
  fs::create_directories(empty);
  CHECK_THROWS_WITH(BpeTokenizer::from_pretrained(empty), Catch::Contains("no tokenizer here"));
  const std::string corrupt = alto::test::temp_path("corrupt-tokenizer");
  fs::create_directories(corrupt);
  std::ofstream(corrupt + "/tokenizer.json") << "{\"model\": [1, 2";
  CHECK_THROWS_WITH(BpeTokenizer::from_pretrained(corrupt),
                    Catch::Contains("tokenizer.json") && Catch::Contains("not valid JSON"));
  const std::string no_merges = alto::test::temp_path("no-merges");
  fs::create_directories(no_merges);
  fs::copy_file(kDir + "/vocab.json", no_merges + "/vocab.json");
  CHECK_THROWS_WITH(BpeTokenizer::from_pretrained(no_merges), Catch::Contains("merges.txt"));
  const std::string bad_rank = alto::test::temp_path("bad.tiktoken");
  std::ofstream(bad_rank) << "IQ== x\n";
  CHECK_THROWS_WITH(BpeTokenizer::from_pretrained(bad_rank), Catch::Contains("rank"));
}

TEST_CASE("Qwen2's tokenizer.json: NFC, its Split pattern, added tokens", "[tokenizer]") {
  const auto t = BpeTokenizer::from_pretrained(
      alto::test::data_path("models/qwen2-audio-tiny-random"));
  std::ifstream in(alto::test::data_path("tokenizers/pretokenizer_cases.json"));
  const json reference = json::parse(in);
  for (const auto& c : reference["cases"]) {
    const std::string text = c["text"];
    INFO("'" << text << "'");
    const std::vector<int64_t> ids = t->encode(text);
    CHECK(ids == ids_of(c["qwen2_ids"]));
    CHECK(t->decode(ids, false) == c["nfc"].get<std::string>());  // byte-level: lossless
  }
  std::vector<int64_t> turn{t->token_to_id("<|im_start|>")};
  const std::vector<int64_t> user = t->encode("user\n");
  turn.insert(turn.end(), user.begin(), user.end());
  CHECK(t->encode("<|im_start|>user\n") == turn);
  CHECK(t->is_special(t->token_to_id("<|AUDIO|>")));
  CHECK(t->decode(t->encode("<|im_start|>hi<|im_end|>"), true) == "hi");
}

namespace {

// A tekken.json over Whisper's tiktoken ranks, with Voxtral's special tokens below 1000.
std::string whisper_tekken(const json& config_overrides = json::object()) {
  std::ifstream ranks(kDir + "/multilingual.tiktoken");
  json vocab = json::array();
  std::string line;
  while (std::getline(ranks, line)) {
    const size_t space = line.find(' ');
    vocab.push_back({{"rank", std::stoll(line.substr(space + 1))},
                     {"token_bytes", line.substr(0, space)},
                     {"token_str", nullptr}});
  }
  json specials = json::array();
  for (const auto& [rank, token] :
       std::vector<std::pair<int, std::string>>{{0, "<unk>"},
                                                {1, "<s>"},
                                                {2, "</s>"},
                                                {3, "[INST]"},
                                                {4, "[/INST]"},
                                                {11, "<pad>"},
                                                {17, "[SYSTEM_PROMPT]"},
                                                {18, "[/SYSTEM_PROMPT]"},
                                                {24, "[AUDIO]"},
                                                {25, "[BEGIN_AUDIO]"},
                                                {34, "[TRANSCRIBE]"}})
    specials.push_back({{"rank", rank}, {"token_str", token}, {"is_control", true}});
  json config = {
      {"pattern", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"},
      {"num_vocab_tokens", vocab.size()},
      {"default_vocab_size", 1000 + vocab.size()},
      {"default_num_special_tokens", 1000},
      {"version", "v7"}};
  config.update(config_overrides);
  const std::string dir = alto::test::temp_path("tekken");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/tekken.json")
      << json{{"config", config}, {"vocab", vocab}, {"special_tokens", specials}}.dump();
  return dir + "/tekken.json";
}

}  // namespace

TEST_CASE("tekken.json from Whisper's ranks gives tiktoken's ids after the specials",
          "[tokenizer]") {
  const auto t = BpeTokenizer::from_pretrained(whisper_tekken());
  const auto through_registry = alto::tokenizers::TextTokenizer::from_pretrained(whisper_tekken());
  int checked = 0;
  for (const auto& c : load("cases.json")) {
    if (!c["openai_encode_default"].is_array()) continue;  // tiktoken refused the text
    std::vector<int64_t> expected = ids_of(c["openai_encode_default"]);
    // Text holding Whisper's own specials is another tokenizer's business.
    if (std::any_of(expected.begin(), expected.end(), [](int64_t id) { return id >= 50257; }))
      continue;
    for (int64_t& id : expected) id += 1000;
    const std::string text = c["text"];
    INFO(c["name"].get<std::string>());
    CHECK(t->encode(text, /*split_special_tokens=*/true) == expected);
    CHECK(through_registry->encode(text, true) == expected);
    CHECK(t->decode(expected, true) == c["decoded"].get<std::string>());
    ++checked;
  }
  CHECK(checked > 40);
  // Specials: their ids below the vocabulary, by name, in text unless split, skipped in decode.
  CHECK(t->vocab_size() == 1000 + 50257);
  CHECK(t->token_to_id("[AUDIO]") == 24);
  CHECK(t->token_to_id("[TRANSCRIBE]") == 34);
  CHECK(t->id_to_token(5) == "<SPECIAL_5>");
  CHECK(t->is_special(1));
  CHECK_FALSE(t->is_special(1000));
  const std::vector<int64_t> hello = t->encode("Hello", true);
  std::vector<int64_t> prompt{1, 3};
  prompt.insert(prompt.end(), hello.begin(), hello.end());
  prompt.push_back(4);
  CHECK(t->encode("<s>[INST]Hello[/INST]") == prompt);
  CHECK(t->decode(prompt, false) == "<s>[INST]Hello[/INST]");
  CHECK(t->decode(prompt, true) == "Hello");
  // Truncated to default_vocab_size, as mistral-common's Tekkenizer.
  CHECK(BpeTokenizer::from_pretrained(whisper_tekken({{"default_vocab_size", 1300}}))
            ->vocab_size() == 1300);
  CHECK_THROWS_WITH(BpeTokenizer::from_pretrained(whisper_tekken({{"pattern", "(?<x>a)"}})),
                    Catch::Contains("config.pattern") && Catch::Contains("group kind"));
}

TEST_CASE("long words and a megabyte of text merge in O(n log n), alike through every loader",
          "[tokenizer]") {
  // Byte-pair merging rescanned every pair per merge: 64k x "a" took 101 s, 16k CJK characters
  // 52 s. Pair ranks (tokenizer.json, merges.txt) and tiktoken's ranks must still agree.
  std::string cjk;
  for (int i = 0; i < 8192; ++i) cjk += "漢字";
  std::string text;
  uint32_t state = 12345;
  const std::string letters = "etaoinshrdlucmfwypvbgkqjxz";
  while (text.size() < (1u << 20)) {
    state = state * 1664525u + 1013904223u;
    const int length = 1 + (state >> 24) % 12;
    for (int k = 0; k < length; ++k) {
      state = state * 1664525u + 1013904223u;
      text += letters[(state >> 20) % letters.size()];
    }
    text += (state >> 8) % 17 == 0 ? ".\n" : " ";
  }
  for (const std::string& input : {std::string(65536, 'a'), cjk, text}) {
    std::vector<int64_t> first;
    for (const auto& [name, tokenizer] : loaders()) {
      INFO(name << ", " << input.size() << " bytes");
      const std::vector<int64_t> ids = tokenizer.encode(input);
      CHECK(tokenizer.decode(ids) == input);
      if (first.empty()) first = ids;
      CHECK(ids == first);
    }
  }
}
