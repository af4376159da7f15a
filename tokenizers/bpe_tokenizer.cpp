#include "alto/tokenizers/bpe_tokenizer.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>
#include <set>
#include <unordered_map>

#include "alto/core/error.h"
#include "alto/tokenizers/internal/base64.h"
#include "alto/tokenizers/internal/regex.h"
#include "alto/tokenizers/internal/unicode.h"

namespace alto::tokenizers {

const std::vector<std::string>& whisper_language_codes() {
  static const std::vector<std::string> codes = {
      "en", "zh", "de", "es",  "ru", "ko", "fr", "ja", "pt", "tr", "pl", "ca", "nl", "ar", "sv",
      "it", "id", "hi", "fi",  "vi", "he", "uk", "el", "ms", "cs", "ro", "da", "hu", "ta", "no",
      "th", "ur", "hr", "bg",  "lt", "la", "mi", "ml", "cy", "sk", "te", "fa", "lv", "bn", "sr",
      "az", "sl", "kn", "et",  "mk", "br", "eu", "is", "hy", "ne", "mn", "bs", "kk", "sq", "sw",
      "gl", "mr", "pa", "si",  "km", "sn", "yo", "so", "af", "oc", "ka", "be", "tg", "sd", "gu",
      "am", "yi", "lo", "uz",  "fo", "ht", "ps", "tk", "nn", "mt", "sa", "lb", "my", "bo", "tl",
      "mg", "as", "tt", "haw", "ln", "ha", "ba", "jw", "su", "yue"};
  return codes;
}

const std::vector<std::string>& whisper_language_names() {
  static const std::vector<std::string> names = {
      "english",  "chinese",    "german",         "spanish",     "russian",    "korean",
      "french",   "japanese",   "portuguese",     "turkish",     "polish",     "catalan",
      "dutch",    "arabic",     "swedish",        "italian",     "indonesian", "hindi",
      "finnish",  "vietnamese", "hebrew",         "ukrainian",   "greek",      "malay",
      "czech",    "romanian",   "danish",         "hungarian",   "tamil",      "norwegian",
      "thai",     "urdu",       "croatian",       "bulgarian",   "lithuanian", "latin",
      "maori",    "malayalam",  "welsh",          "slovak",      "telugu",     "persian",
      "latvian",  "bengali",    "serbian",        "azerbaijani", "slovenian",  "kannada",
      "estonian", "macedonian", "breton",         "basque",      "icelandic",  "armenian",
      "nepali",   "mongolian",  "bosnian",        "kazakh",      "albanian",   "swahili",
      "galician", "marathi",    "punjabi",        "sinhala",     "khmer",      "shona",
      "yoruba",   "somali",     "afrikaans",      "occitan",     "georgian",   "belarusian",
      "tajik",    "sindhi",     "gujarati",       "amharic",     "yiddish",    "lao",
      "uzbek",    "faroese",    "haitian creole", "pashto",      "turkmen",    "nynorsk",
      "maltese",  "sanskrit",   "luxembourgish",  "myanmar",     "tibetan",    "tagalog",
      "malagasy", "assamese",   "tatar",          "hawaiian",    "lingala",    "hausa",
      "bashkir",  "javanese",   "sundanese",      "cantonese"};
  return names;
}

std::string whisper_language_code(const std::string& code_or_name) {
  std::string key = code_or_name;
  std::transform(key.begin(), key.end(), key.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const std::map<std::string, std::string> aliases = {
      {"burmese", "my"},       {"valencian", "ca"}, {"flemish", "nl"},   {"haitian", "ht"},
      {"letzeburgesch", "lb"}, {"pushto", "ps"},    {"panjabi", "pa"},   {"moldavian", "ro"},
      {"moldovan", "ro"},      {"sinhalese", "si"}, {"castilian", "es"}, {"mandarin", "zh"}};
  const auto& codes = whisper_language_codes();
  const auto& names = whisper_language_names();
  for (size_t i = 0; i < codes.size(); ++i)
    if (key == codes[i] || key == names[i]) return codes[i];
  if (auto it = aliases.find(key); it != aliases.end()) return it->second;
  throw InvalidArgument("unknown language '" + code_or_name +
                        "': give a Whisper language code (en, de, ...) or its English name");
}

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using unicode::append_utf8;
using unicode::CodePoint;
using unicode::is_letter;
using unicode::is_number;
using unicode::is_space;
using unicode::next_code_point;
using unicode::replace_invalid_utf8;

// GPT-2's byte -> printable code point alphabet, in which vocab.json spells byte strings.
struct ByteAlphabet {
  char32_t byte_to_char[256];
  std::unordered_map<char32_t, unsigned char> char_to_byte;

  ByteAlphabet() {
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      byte_to_char[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
      char_to_byte[byte_to_char[b]] = static_cast<unsigned char>(b);
    }
  }
  // A vocab.json key -> its bytes; false when it is not in the alphabet.
  bool to_bytes(const std::string& token, std::string& bytes) const {
    bytes.clear();
    for (size_t i = 0; i < token.size();) {
      const CodePoint c = next_code_point(token, i);
      auto it = c.valid ? char_to_byte.find(c.value) : char_to_byte.end();
      if (it == char_to_byte.end()) return false;
      bytes += static_cast<char>(it->second);
      i += c.length;
    }
    return true;
  }
  std::string to_token(const std::string& bytes) const {
    std::string token;
    for (unsigned char b : bytes) append_utf8(token, byte_to_char[b]);
    return token;
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet a;
  return a;
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  ALTO_CHECK_AS(IoError, in.good(), "cannot open ", path.string());
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw IoError(path.string() + ": not valid JSON (" + e.what() + ")");
  }
}

// <|0.00|> ... : a timestamp's text, which transformers strips from decoded output.
size_t timestamp_text_length(const std::string& s, size_t i) {
  if (s.compare(i, 2, "<|") != 0) return 0;
  size_t j = i + 2, digits = 0;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j, ++digits;
  if (!digits || j >= s.size() || s[j] != '.') return 0;
  ++j, digits = 0;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j, ++digits;
  if (!digits || s.compare(j, 2, "|>") != 0) return 0;
  return j + 2 - i;
}

std::string remove_timestamp_text(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = timestamp_text_length(s, i);
    if (n) {
      i += n;
    } else {
      out += s[i++];
    }
  }
  return out;
}

std::string token_content(const json& t) {
  return t.is_string() ? t.get<std::string>() : t.value("content", "");
}

std::string format_time(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "<|%.2f|>", seconds);
  return buffer;
}

}  // namespace

struct BpeTokenizer::Impl {
  static std::shared_ptr<Impl> load_tokenizer_json(const fs::path& path);
  static std::shared_ptr<Impl> load_vocab_merges(const fs::path& dir);
  static std::shared_ptr<Impl> load_tiktoken(const fs::path& path);
  static std::shared_ptr<Impl> load_tekken(const fs::path& path);

  std::string source;
  std::vector<std::string> bytes_of;  // id -> bytes (added tokens: their UTF-8 text)
  std::vector<std::string> token_of;  // id -> vocab.json spelling or added-token content
  std::vector<bool> added, special;   // by id
  std::unordered_map<std::string, int64_t> id_of_bytes;  // byte-level tokens
  std::unordered_map<std::string, int64_t> id_of_token;  // every token string
  // Merge priority: by (left, right) pair for merge lists, by the joined bytes for ranks.
  bool rank_by_concatenation = false;
  std::unordered_map<std::string, int64_t> merge_rank;
  std::map<char, std::vector<std::pair<std::string, int64_t>>> added_by_first_byte;
  int64_t timestamp_begin = -1;
  // tokenizer.json's normalizer and pre_tokenizer (tekken.json: its pattern).
  bool nfc = false;
  bool add_prefix_space = false;
  bool byte_level_regex = true;  // GPT-2's split, unless a Split pattern replaces it
  std::shared_ptr<const Regex> split_pattern;

  void configure_normalizer(const json& n) {
    if (n.is_null()) return;
    const std::string type = n.value("type", "");
    if (type == "Sequence") {
      for (const auto& item : n.value("normalizers", json::array())) configure_normalizer(item);
    } else if (type == "NFC") {
      nfc = true;
    } else {
      throw Unsupported(source + ": normalizer '" + type + "' is not one alto runs (NFC)");
    }
  }

  void configure_pre_tokenizer(const json& p) {
    if (p.is_null()) {
      byte_level_regex = false;
      return;
    }
    const std::string type = p.value("type", "");
    if (type == "Sequence") {
      for (const auto& item : p.value("pretokenizers", json::array()))
        configure_pre_tokenizer(item);
    } else if (type == "ByteLevel") {
      add_prefix_space = p.value("add_prefix_space", false);
      byte_level_regex = p.value("use_regex", true);
      ALTO_CHECK_AS(Unsupported, !(byte_level_regex && split_pattern), source,
                    ": a Split pattern and ByteLevel's own regex together");
    } else if (type == "Split") {
      const json pattern = p.value("pattern", json::object());
      ALTO_CHECK_AS(Unsupported,
                    pattern.contains("Regex") && p.value("behavior", "") == "Isolated" &&
                        !p.value("invert", false),
                    source,
                    ": pre_tokenizer Split is supported with a Regex pattern, behavior "
                    "Isolated and invert false, got ",
                    p.dump());
      split_pattern = std::make_shared<const Regex>(pattern["Regex"].get<std::string>(), source);
      byte_level_regex = false;
    } else {
      throw Unsupported(source + ": pre_tokenizer '" + type +
                        "' is not one alto runs (ByteLevel, Split, Sequence)");
    }
  }

  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int64_t>> cache;

  static std::string pair_key(const std::string& a, const std::string& b) {
    return std::to_string(a.size()) + ':' + a + b;
  }

  void add_token(int64_t id, const std::string& token, const std::string& bytes, bool is_added,
                 bool is_special) {
    ALTO_CHECK_AS(IoError, id >= 0 && id < (1 << 24), source, ": token '", token,
                  "' has an impossible id ", id);
    if (static_cast<size_t>(id) >= token_of.size()) {
      token_of.resize(id + 1);
      bytes_of.resize(id + 1);
      added.resize(id + 1, false);
      special.resize(id + 1, false);
    }
    token_of[id] = token;
    bytes_of[id] = bytes;
    added[id] = is_added;
    special[id] = is_special;
    id_of_token[token] = id;
    if (!is_added) id_of_bytes.emplace(bytes, id);
  }

  void add_vocab(const json& vocab) {
    ALTO_CHECK_AS(IoError, vocab.is_object(), source, ": the vocabulary must be a JSON object");
    std::string bytes;
    for (const auto& [token, id] : vocab.items()) {
      ALTO_CHECK_AS(IoError, id.is_number_integer(), source, ": vocabulary entry '", token,
                    "' has no integer id");
      ALTO_CHECK_AS(IoError, alphabet().to_bytes(token, bytes), source, ": vocabulary entry '",
                    token, "' is not in the byte-level alphabet");
      add_token(id.get<int64_t>(), token, bytes, false, false);
    }
  }

  void add_merge(const std::string& left, const std::string& right, int64_t rank) {
    std::string a, b;
    ALTO_CHECK_AS(IoError, alphabet().to_bytes(left, a) && alphabet().to_bytes(right, b), source,
                  ": merge '", left, " ", right, "' is not in the byte-level alphabet");
    merge_rank.emplace(pair_key(a, b), rank);
  }

  void finish() {
    for (size_t id = 0; id < token_of.size(); ++id)
      if (added[id]) added_by_first_byte[token_of[id][0]].emplace_back(token_of[id], id);
    for (auto& [first, tokens] : added_by_first_byte)
      std::stable_sort(tokens.begin(), tokens.end(),
                       [](auto& a, auto& b) { return a.first.size() > b.first.size(); });
    auto it = id_of_token.find("<|0.00|>");
    timestamp_begin = it == id_of_token.end() ? static_cast<int64_t>(token_of.size()) : it->second;
  }

  int64_t rank(const std::string& a, const std::string& b) const {
    auto it = rank_by_concatenation ? merge_rank.find(a + b) : merge_rank.find(pair_key(a, b));
    return it == merge_rank.end() ? -1 : it->second;
  }

  // Byte-pair merges of one piece, lowest rank first, leftmost on ties: the parts as a linked
  // list and the candidate pairs in a heap, so a piece of n bytes takes O(n log n) (one long
  // word — a megabyte without a space — would take O(n^2) rescanning every pair per merge).
  std::vector<std::string> merge_parts(const std::string& piece) const {
    const int n = static_cast<int>(piece.size());
    std::vector<int> begin(n), end(n), next(n), prev(n);
    for (int i = 0; i < n; ++i) begin[i] = i, end[i] = i + 1, next[i] = i + 1, prev[i] = i - 1;
    struct Candidate {
      int64_t rank;
      int left, right, left_end, right_end;
      bool operator>(const Candidate& o) const {
        return rank != o.rank ? rank > o.rank : left > o.left;  // leftmost first on ties
      }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    auto text = [&](int i) { return piece.substr(begin[i], end[i] - begin[i]); };
    auto push = [&](int left) {
      const int right = left < 0 || left >= n ? n : next[left];
      if (left < 0 || right >= n) return;
      const int64_t r = rank(text(left), text(right));
      if (r >= 0) heap.push({r, left, right, end[left], end[right]});
    };
    for (int i = 0; i + 1 < n; ++i) push(i);
    std::vector<bool> alive(n, true);
    while (!heap.empty()) {
      const Candidate c = heap.top();
      heap.pop();
      // Stale when either side has merged since: the pair is no longer these two parts.
      if (!alive[c.left] || !alive[c.right] || next[c.left] != c.right ||
          end[c.left] != c.left_end || end[c.right] != c.right_end)
        continue;
      end[c.left] = end[c.right];
      alive[c.right] = false;
      next[c.left] = next[c.right];
      if (next[c.left] < n) prev[next[c.left]] = c.left;
      push(prev[c.left]);
      push(c.left);
    }
    std::vector<std::string> parts;
    for (int i = 0; i < n; i = next[i]) parts.push_back(text(i));
    return parts;
  }

  // Byte-pair merges of one pre-tokenised piece, cached by piece.
  void bpe(const std::string& piece, std::vector<int64_t>& ids) const {
    {
      std::lock_guard<std::mutex> lock(cache_mutex);
      auto it = cache.find(piece);
      if (it != cache.end()) {
        ids.insert(ids.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    std::vector<int64_t> result;
    for (const std::string& part : merge_parts(piece)) {
      auto it = id_of_bytes.find(part);
      ALTO_CHECK_AS(IoError, it != id_of_bytes.end(), source, ": BPE produced '",
                    alphabet().to_token(part), "', which is not in the vocabulary");
      result.push_back(it->second);
    }
    ids.insert(ids.end(), result.begin(), result.end());
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (cache.size() < 100000) cache.emplace(piece, std::move(result));
  }

  // Text between added tokens: normalised, pre-tokenised, each piece merged.
  void encode_text(const std::string& raw, std::vector<int64_t>& ids) const {
    if (raw.empty()) return;
    std::string text = nfc ? unicode::nfc(raw) : raw;
    if (add_prefix_space && text[0] != ' ') text.insert(text.begin(), ' ');
    if (split_pattern) {
      const unicode::DecodedText decoded = unicode::decode_utf8(text, "BpeTokenizer::encode");
      for (const auto& [begin, end] : split_pattern->split(decoded.code_points))
        bpe(text.substr(decoded.offsets[begin], decoded.offsets[end] - decoded.offsets[begin]),
            ids);
    } else if (byte_level_regex) {
      encode_gpt2(text, ids);
    } else {
      bpe(text, ids);
    }
  }

  // GPT-2's pattern 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  // by hand: the pre-tokenizer of byte-level BPE (ByteLevel with use_regex), Whisper's.
  void encode_gpt2(const std::string& text, std::vector<int64_t>& ids) const {
    std::vector<char32_t> cps;
    std::vector<size_t> offset;  // byte offset of each code point, plus the end
    for (size_t i = 0; i < text.size();) {
      const CodePoint c = next_code_point(text, i);
      ALTO_CHECK(c.valid, "BpeTokenizer::encode: the text is not valid UTF-8 (byte ", i, ")");
      cps.push_back(c.value);
      offset.push_back(i);
      i += c.length;
    }
    offset.push_back(text.size());
    const size_t n = cps.size();
    auto other = [&](char32_t c) { return !is_space(c) && !is_letter(c) && !is_number(c); };
    auto run = [&](size_t from, auto&& in_class) {
      while (from < n && in_class(cps[from])) ++from;
      return from;
    };
    for (size_t i = 0; i < n;) {
      size_t end = i;
      if (cps[i] == '\'') {
        for (const char* suffix : {"s", "t", "re", "ve", "m", "ll", "d"}) {
          size_t k = 0;
          while (suffix[k] && i + 1 + k < n && cps[i + 1 + k] == static_cast<char32_t>(suffix[k]))
            ++k;
          if (!suffix[k]) {
            end = i + 1 + k;
            break;
          }
        }
      }
      if (end == i) {
        const size_t after_space = cps[i] == ' ' && i + 1 < n ? i + 1 : i;
        for (auto in_class :
             {+[](char32_t c) { return is_letter(c); }, +[](char32_t c) { return is_number(c); }}) {
          if (end > i) break;
          if (in_class(cps[i]))
            end = run(i, in_class);
          else if (after_space > i && in_class(cps[after_space]))
            end = run(after_space, in_class);
        }
        if (end == i) {
          if (other(cps[i]))
            end = run(i, other);
          else if (after_space > i && other(cps[after_space]))
            end = run(after_space, other);
        }
      }
      if (end == i) {  // whitespace: a run not followed by text, or all but its last character
        const size_t stop = run(i, is_space);
        end = stop == n || stop - i == 1 ? stop : stop - 1;
      }
      bpe(text.substr(offset[i], offset[end] - offset[i]), ids);
      i = end;
    }
  }

  std::string decode_raw(const std::vector<int64_t>& ids, bool skip_special) const {
    std::string text, run;
    for (int64_t id : ids) {
      const bool known = id >= 0 && id < static_cast<int64_t>(token_of.size());
      if (skip_special && known && special[id]) continue;
      if (known && added[id]) {
        text += replace_invalid_utf8(run);
        run.clear();
        text += token_of[id];
      } else if (known) {
        run += bytes_of[id];  // ids outside the vocabulary decode as "", as transformers'
      }
    }
    return text + replace_invalid_utf8(run);
  }

  // WhisperTokenizer._strip_prompt: with skip_special_tokens, a <|startofprev|> prompt goes.
  std::vector<int64_t> strip_prompt(const std::vector<int64_t>& ids, bool skip_special) const {
    if (!skip_special || ids.empty()) return ids;
    auto prev = id_of_token.find("<|startofprev|>");
    auto sot = id_of_token.find("<|startoftranscript|>");
    if (prev == id_of_token.end() || ids.front() != prev->second) return ids;
    auto start =
        sot == id_of_token.end() ? ids.end() : std::find(ids.begin(), ids.end(), sot->second);
    return std::vector<int64_t>(start, ids.end());
  }

  std::string decode(const std::vector<int64_t>& token_ids, const BpeDecodeOptions& o) const {
    const std::vector<int64_t> ids = strip_prompt(token_ids, o.skip_special_tokens);
    if (!o.with_timestamps) return remove_timestamp_text(decode_raw(ids, o.skip_special_tokens));
    // Timestamps that go backwards start a new 30 s window: after a single timestamp the
    // window was a whole segment_size; after a pair, it ended at the pair.
    const double precision = 0.02, segment = 1500;
    std::vector<std::string> texts(1);
    std::vector<std::vector<int64_t>> runs(1);
    double cur_max = 0, prev_len = 0, penultimate = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      const int64_t token = ids[i];
      if (token < timestamp_begin) {
        runs.back().push_back(token);
        continue;
      }
      const double t = static_cast<double>(token - timestamp_begin) * precision;
      if (t < cur_max) {
        const bool single_ending =
            i >= 2 && !(ids[i - 1] >= timestamp_begin && ids[i - 2] >= timestamp_begin);
        if (single_ending) {
          prev_len += precision * segment;
        } else {
          cur_max = penultimate;
          prev_len += penultimate;
          texts.resize(texts.size() - 2);
          runs.resize(runs.size() - 2);
        }
      }
      penultimate = cur_max;
      cur_max = t;
      texts.push_back(format_time(t + prev_len));
      runs.emplace_back();  // the text entry's placeholder
      texts.emplace_back();
      runs.emplace_back();
    }
    std::string out;
    for (size_t k = 0; k < texts.size(); ++k)
      out += texts[k].empty() ? decode(runs[k], {o.skip_special_tokens, false}) : texts[k];
    return out;
  }
};

std::shared_ptr<BpeTokenizer::Impl> BpeTokenizer::Impl::load_tokenizer_json(const fs::path& path) {
  auto impl = std::make_shared<Impl>();
  impl->source = path.string();
  const json j = read_json(path);
  const json* model = j.contains("model") ? &j["model"] : nullptr;
  ALTO_CHECK_AS(IoError, model && model->value("type", "") == "BPE", impl->source,
                ": expected a \"model\" of type \"BPE\"");
  ALTO_CHECK_AS(IoError, model->contains("vocab") && model->contains("merges"), impl->source,
                ": the BPE model needs \"vocab\" and \"merges\"");
  impl->add_vocab((*model)["vocab"]);
  int64_t rank = 0;
  for (const auto& merge : (*model)["merges"]) {
    // tokenizers >= 0.20 writes ["a", "b"]; older files "a b".
    if (merge.is_array() && merge.size() == 2) {
      impl->add_merge(merge[0].get<std::string>(), merge[1].get<std::string>(), rank++);
    } else if (merge.is_string()) {
      const std::string m = merge.get<std::string>();
      const size_t space = m.find(' ');
      ALTO_CHECK_AS(IoError, space != std::string::npos, impl->source, ": bad merge '", m, "'");
      impl->add_merge(m.substr(0, space), m.substr(space + 1), rank++);
    } else {
      throw IoError(impl->source + ": bad merge " + merge.dump());
    }
  }
  impl->configure_normalizer(j.value("normalizer", json()));
  impl->configure_pre_tokenizer(j.value("pre_tokenizer", json()));
  for (const auto& t : j.value("added_tokens", json::array())) {
    ALTO_CHECK_AS(IoError, t.contains("id") && t.contains("content"), impl->source,
                  ": an added token needs \"id\" and \"content\"");
    const std::string content = t["content"].get<std::string>();
    impl->add_token(t["id"].get<int64_t>(), content, content, true, t.value("special", false));
  }
  return impl;
}

std::shared_ptr<BpeTokenizer::Impl> BpeTokenizer::Impl::load_vocab_merges(const fs::path& dir) {
  auto impl = std::make_shared<Impl>();
  impl->source = dir.string();
  impl->add_vocab(read_json(dir / "vocab.json"));
  std::ifstream merges(dir / "merges.txt");
  ALTO_CHECK_AS(IoError, merges.good(), "cannot open ", (dir / "merges.txt").string());
  std::string line;
  int64_t rank = 0;
  bool first = true;
  while (std::getline(merges, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // transformers skips the first line; only a "#version" header deserves it.
    if (first && line.rfind("#version", 0) == 0) {
      first = false;
      continue;
    }
    first = false;
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    ALTO_CHECK_AS(IoError, space != std::string::npos, (dir / "merges.txt").string(),
                  ": bad merge line '", line, "'");
    impl->add_merge(line.substr(0, space), line.substr(space + 1), rank++);
  }
  std::set<std::string> specials;
  if (fs::exists(dir / "special_tokens_map.json")) {
    const json map = read_json(dir / "special_tokens_map.json");
    for (const auto& [key, value] : map.items()) {
      if (value.is_array())
        for (const auto& t : value) specials.insert(token_content(t));
      else
        specials.insert(token_content(value));
    }
  }
  if (fs::exists(dir / "added_tokens.json")) {
    const json added = read_json(dir / "added_tokens.json");
    for (const auto& [content, id] : added.items())
      impl->add_token(id.get<int64_t>(), content, content, true, specials.count(content) > 0);
  } else if (fs::exists(dir / "tokenizer_config.json")) {
    const json config = read_json(dir / "tokenizer_config.json");
    const json decoder = config.value("added_tokens_decoder", json::object());
    for (const auto& [id, t] : decoder.items())
      impl->add_token(std::stoll(id), token_content(t), token_content(t), true,
                      t.value("special", false) || specials.count(token_content(t)) > 0);
  }
  return impl;
}

std::shared_ptr<BpeTokenizer::Impl> BpeTokenizer::Impl::load_tiktoken(const fs::path& path) {
  auto impl = std::make_shared<Impl>();
  impl->source = path.string();
  impl->rank_by_concatenation = true;
  std::ifstream in(path);
  ALTO_CHECK_AS(IoError, in.good(), "cannot open ", path.string());
  std::string line;
  int64_t count = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    ALTO_CHECK_AS(IoError, space != std::string::npos, impl->source, ": line ", count + 1,
                  " is not 'base64 rank'");
    const std::string bytes = base64_decode(line.substr(0, space), impl->source);
    int64_t rank;
    try {
      rank = std::stoll(line.substr(space + 1));
    } catch (const std::exception&) {
      throw IoError(impl->source + ": line " + std::to_string(count + 1) + " has no rank");
    }
    impl->add_token(rank, alphabet().to_token(bytes), bytes, false, false);
    impl->merge_rank.emplace(bytes, rank);
    ++count;
  }
  ALTO_CHECK_AS(IoError, count > 256, impl->source, ": expected a .tiktoken rank file");
  // openai-whisper's special tokens follow the ranks (tokenizer.py); timestamps are added,
  // not special, as transformers' conversion makes them.
  int64_t id = static_cast<int64_t>(impl->token_of.size());
  auto special = [&](const std::string& t) { impl->add_token(id++, t, t, true, true); };
  special("<|endoftext|>");
  special("<|startoftranscript|>");
  const auto& codes = whisper_language_codes();
  for (size_t i = 0; i + 1 < codes.size(); ++i) special("<|" + codes[i] + "|>");  // 99
  for (const char* t : {"<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>",
                        "<|nospeech|>", "<|notimestamps|>"})
    special(t);
  for (int i = 0; i <= 1500; ++i) {
    char text[16];
    std::snprintf(text, sizeof text, "<|%.2f|>", i * 0.02);
    impl->add_token(id++, text, text, true, false);
  }
  return impl;
}

std::shared_ptr<BpeTokenizer::Impl> BpeTokenizer::Impl::load_tekken(const fs::path& path) {
  auto impl = std::make_shared<Impl>();
  impl->source = path.string();
  impl->rank_by_concatenation = true;
  const json j = read_json(path);
  ALTO_CHECK_AS(IoError,
                j.is_object() && j.contains("config") && j["config"].is_object() &&
                    j.contains("vocab") && j["vocab"].is_array(),
                impl->source, ": expected tekken.json's \"config\" object and \"vocab\" list");
  const json& config = j["config"];
  const json specials = j.value("special_tokens", json::array());
  ALTO_CHECK_AS(IoError, specials.is_array(), impl->source, ": special_tokens must be a list");
  // Integers only: nlohmann converts a float to int64 without a range check.
  auto integer = [&](const json& object, const char* key, int64_t fallback) {
    if (!object.is_object() || !object.contains(key)) return fallback;
    ALTO_CHECK_AS(IoError, object[key].is_number_integer(), impl->source, ": ", key,
                  " must be an integer, got ", object[key].dump());
    return object[key].get<int64_t>();
  };
  const int64_t num_special =
      integer(config, "default_num_special_tokens", static_cast<int64_t>(specials.size()));
  const int64_t vocab_size =
      integer(config, "default_vocab_size", num_special + static_cast<int64_t>(j["vocab"].size()));
  ALTO_CHECK_AS(
      IoError, num_special >= static_cast<int64_t>(specials.size()) && vocab_size > num_special,
      impl->source, ": default_num_special_tokens ", num_special, " and default_vocab_size ",
      vocab_size, " do not fit ", specials.size(), " special tokens");
  // Special tokens take the ids below num_special (mistral-common's Tekkenizer); the ranks follow.
  for (const auto& t : specials) {
    ALTO_CHECK_AS(IoError, t.is_object() && t.contains("rank") && t.contains("token_str"),
                  impl->source, ": a special token needs \"rank\" and \"token_str\"");
    const std::string text = t["token_str"].get<std::string>();
    impl->add_token(integer(t, "rank", -1), text, text, true, true);
  }
  for (int64_t id = 0; id < num_special; ++id) {
    if (id < static_cast<int64_t>(impl->token_of.size()) && impl->added[id]) continue;
    const std::string filler = "<SPECIAL_" + std::to_string(id) + ">";
    impl->add_token(id, filler, filler, true, true);
  }
  int64_t rank = 0;
  for (const auto& entry : j["vocab"]) {
    if (rank + num_special >= vocab_size) break;
    ALTO_CHECK_AS(
        IoError,
        entry.is_object() && entry.contains("token_bytes") && integer(entry, "rank", -1) == rank,
        impl->source, ": vocab entry ", rank, " needs \"token_bytes\" and rank ", rank);
    const std::string bytes = base64_decode(entry["token_bytes"].get<std::string>(), impl->source);
    impl->add_token(rank + num_special, alphabet().to_token(bytes), bytes, false, false);
    impl->merge_rank.emplace(bytes, rank);
    ++rank;
  }
  ALTO_CHECK_AS(IoError, config.contains("pattern") && config["pattern"].is_string(), impl->source,
                ": config.pattern (the pre-tokenisation regex) is missing");
  impl->split_pattern = std::make_shared<const Regex>(config["pattern"].get<std::string>(),
                                                      impl->source + ": config.pattern");
  impl->byte_level_regex = false;
  return impl;
}

std::shared_ptr<const BpeTokenizer> BpeTokenizer::from_pretrained(const std::string& path) {
  try {
    return load(path);
  } catch (const json::exception& e) {
    // A field of the wrong JSON type deep in a file: the file is corrupt, not alto.
    throw IoError(path + ": unexpected JSON structure (" + e.what() + ")");
  }
}

std::shared_ptr<const BpeTokenizer> BpeTokenizer::load(const std::string& path) {
  const fs::path p(path);
  std::shared_ptr<Impl> impl;
  if (fs::is_directory(p)) {
    if (fs::exists(p / "tokenizer.json"))
      impl = Impl::load_tokenizer_json(p / "tokenizer.json");
    else if (fs::exists(p / "vocab.json"))
      impl = Impl::load_vocab_merges(p);
    else if (fs::exists(p / "tekken.json"))
      impl = Impl::load_tekken(p / "tekken.json");
    else
      throw IoError(path +
                    ": no tokenizer here (expected tokenizer.json, vocab.json and merges.txt, "
                    "tekken.json, or a .tiktoken file)");
  } else {
    ALTO_CHECK_AS(IoError, fs::exists(p), "cannot open ", path);
    if (p.filename() == "tekken.json")
      impl = Impl::load_tekken(p);
    else if (p.extension() == ".json")
      impl = Impl::load_tokenizer_json(p);
    else
      impl = Impl::load_tiktoken(p);
  }
  impl->finish();
  auto tokenizer = std::make_shared<BpeTokenizer>();
  tokenizer->impl_ = std::move(impl);
  return tokenizer;
}

std::vector<int64_t> BpeTokenizer::encode(const std::string& text,
                                          bool split_special_tokens) const {
  const Impl& m = *impl_;
  std::vector<int64_t> ids;
  size_t start = 0;  // of the text not yet encoded
  for (size_t i = 0; i < text.size() && !split_special_tokens; ++i) {
    auto candidates = m.added_by_first_byte.find(text[i]);
    if (candidates == m.added_by_first_byte.end()) continue;
    for (const auto& [content, id] : candidates->second) {
      if (text.compare(i, content.size(), content) != 0) continue;
      m.encode_text(text.substr(start, i - start), ids);
      ids.push_back(id);
      start = i + content.size();
      i = start - 1;
      break;
    }
  }
  m.encode_text(text.substr(start), ids);
  return ids;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids,
                                 const BpeDecodeOptions& options) const {
  return impl_->decode(ids, options);
}

std::string BpeTokenizer::decode_openai(const std::vector<int64_t>& ids,
                                        bool with_timestamps) const {
  std::string bytes;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size()) continue;
    if (!with_timestamps && id >= impl_->timestamp_begin) continue;
    bytes += impl_->bytes_of[id];
  }
  return replace_invalid_utf8(bytes);
}

std::vector<BpeOffset> BpeTokenizer::offsets(const std::vector<int64_t>& ids) const {
  // WhisperTokenizer._compute_offsets: segments end after each pair of timestamps and at the
  // last timestamp; a start earlier than the last end means the next 30 s window.
  const Impl& m = *impl_;
  const int64_t begin = m.timestamp_begin;
  auto is_ts = [&](size_t i) { return ids[i] >= begin; };
  std::vector<size_t> cuts, timestamps;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (is_ts(i)) timestamps.push_back(i);
    if (i > 0 && is_ts(i - 1) && is_ts(i)) cuts.push_back(i);
  }
  if (cuts.empty() && timestamps.size() <= 1) return {};
  if (std::find(cuts.begin(), cuts.end(), timestamps.back() + 1) == cuts.end())
    cuts.push_back(timestamps.back() + 1);
  std::vector<BpeOffset> result;
  size_t last = timestamps.front();
  int64_t cur_max = 0, prev_len = 0;
  for (size_t cut : cuts) {
    if (cut - last > 1) {
      const int64_t start = ids[last] - begin, end = ids[cut - 1] - begin;
      if (start < cur_max) {
        const bool single_ending = last >= 2 && !(is_ts(last - 2) && is_ts(last - 1));
        prev_len += single_ending ? 1500 : cur_max;
      }
      cur_max = end;
      const std::vector<int64_t> slice(ids.begin() + last, ids.begin() + cut);
      result.push_back({remove_timestamp_text(m.decode_raw(slice, false)),
                        start * 0.02 + prev_len * 0.02, end * 0.02 + prev_len * 0.02});
    }
    last = cut;
  }
  return result;
}

int64_t BpeTokenizer::vocab_size() const { return static_cast<int64_t>(impl_->token_of.size()); }

int64_t BpeTokenizer::token_to_id(const std::string& token) const {
  auto it = impl_->id_of_token.find(token);
  return it == impl_->id_of_token.end() ? -1 : it->second;
}

std::string BpeTokenizer::id_to_token(int64_t id) const {
  ALTO_CHECK(id >= 0 && id < vocab_size(), "token id ", id, " is outside the vocabulary [0, ",
             vocab_size(), ")");
  return impl_->token_of[id];
}

bool BpeTokenizer::is_special(int64_t id) const {
  return id >= 0 && id < vocab_size() && impl_->special[id];
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
  return impl_->decode(ids, {skip_special_tokens, false});
}

std::vector<TokenSpan> BpeTokenizer::encode_with_offsets(const std::string& text) const {
  std::vector<TokenSpan> spans;
  size_t at = 0;
  for (int64_t id : encode(text)) {
    const size_t length = impl_->bytes_of[id].size();
    spans.push_back({id, at, at + length});
    at += length;
  }
  return spans;
}

std::vector<std::pair<std::string, int64_t>> BpeTokenizer::added_tokens() const {
  std::vector<std::pair<std::string, int64_t>> tokens;
  for (size_t id = 0; id < impl_->added.size(); ++id)
    if (impl_->added[id]) tokens.emplace_back(impl_->bytes_of[id], static_cast<int64_t>(id));
  return tokens;
}

namespace {
const Registration<TextTokenizerEntry> kRegistration(
    "byte-level-bpe",
    {"byte-level BPE (tokenizer.json, vocab.json + merges.txt, a .tiktoken file, or Mistral's "
     "tekken.json)",
     [](const std::string& path) {
       const fs::path p(path);
       if (fs::is_directory(p))
         return (fs::exists(p / "tokenizer.json") &&
                 tokenizer_json_model_type((p / "tokenizer.json").string()) != "Unigram") ||
                fs::exists(p / "vocab.json") || fs::exists(p / "tekken.json");
       if (p.filename() == "tekken.json") return true;
       if (p.extension() == ".json") return tokenizer_json_model_type(path) != "Unigram";
       return p.extension() == ".tiktoken";
     },
     [](const std::string& path) -> std::shared_ptr<const TextTokenizer> {
       return BpeTokenizer::from_pretrained(path);
     }});
}  // namespace

}  // namespace alto::tokenizers
