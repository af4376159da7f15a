#include "alto/tokenizers/sentencepiece_tokenizer.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>

#include "alto/core/error.h"
#include "alto/tokenizers/internal/base64.h"
#include "alto/tokenizers/internal/unicode.h"

namespace alto::tokenizers {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The few fields of sentencepiece_model.proto a tokenizer.json carries, written in protobuf's
// wire format (libsentencepiece loads a serialized ModelProto; its .pb.h is not installed).
class ProtoWriter {
 public:
  void varint(int field, uint64_t value) {
    key(field, 0);
    raw_varint(value);
  }
  void int32(int field, int32_t value) {  // negative int32 are sign-extended to 64 bits
    varint(field, static_cast<uint64_t>(static_cast<int64_t>(value)));
  }
  void float32(int field, float value) {
    key(field, 5);
    char bytes[4];
    std::memcpy(bytes, &value, 4);
    out_.append(bytes, 4);
  }
  void bytes(int field, const std::string& value) {
    key(field, 2);
    raw_varint(value.size());
    out_ += value;
  }
  const std::string& str() const { return out_; }

 private:
  void key(int field, int wire_type) { raw_varint(static_cast<uint64_t>(field) << 3 | wire_type); }
  void raw_varint(uint64_t v) {
    while (v >= 0x80) {
      out_ += static_cast<char>(v | 0x80);
      v >>= 7;
    }
    out_ += static_cast<char>(v);
  }
  std::string out_;
};

// ModelProto.SentencePiece.Type
enum PieceType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kByte = 6 };

bool is_byte_piece(const std::string& piece) {
  return piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>' &&
         std::isxdigit(static_cast<unsigned char>(piece[3])) &&
         std::isxdigit(static_cast<unsigned char>(piece[4]));
}

// libalto_sentencepiece (tokenizers/internal/sentencepiece_shim.cpp), loaded beside the code
// that runs this: with its own symbol scope, so that libsentencepiece's bundled protobuf and
// libtorch's never meet (see the shim).
struct SentencePieceLibrary {
  void* (*load)(const char*, size_t, char*, size_t);
  void (*release)(void*);
  int (*piece_size)(const void*);
  int (*piece_to_id)(const void*, const char*, size_t);
  const char* (*id_to_piece)(const void*, int, size_t*);
  int (*flags)(const void*, int);
  void (*encode)(const void*, const char*, size_t, void (*)(void*, int, uint32_t, uint32_t),
                 void*);
  void (*decode)(const void*, const int*, size_t, void (*)(void*, const char*, size_t), void*);

  static const SentencePieceLibrary& get() {
    static const SentencePieceLibrary library = open();
    return library;
  }

 private:
  static SentencePieceLibrary open() {
    Dl_info self{};
    dladdr(reinterpret_cast<void*>(&SentencePieceLibrary::open), &self);
    const fs::path path =
        fs::path(self.dli_fname ? self.dli_fname : "").parent_path() / "libalto_sentencepiece.so";
    int flags = RTLD_NOW | RTLD_LOCAL;
#if !defined(__SANITIZE_ADDRESS__) && !defined(ALTO_SANITIZED)
    // The sanitizers refuse RTLD_DEEPBIND; their builds (the fuzzers) have no libtorch.
    flags |= RTLD_DEEPBIND;
    dlopen("libsentencepiece.so.0", flags);  // its own scope before the module needs it
#endif
    void* handle = dlopen(path.c_str(), flags);
    ALTO_CHECK_AS(IoError, handle, "cannot load ", path.string(),
                  " (alto's SentencePiece module, installed beside libalto): ", dlerror());
    SentencePieceLibrary l{};
    auto bind = [&](auto& function, const char* name) {
      void* symbol = dlsym(handle, name);
      ALTO_CHECK_AS(IoError, symbol, path.string(), " lacks ", name);
      function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(symbol);
    };
    bind(l.load, "alto_spm_load");
    bind(l.release, "alto_spm_free");
    bind(l.piece_size, "alto_spm_piece_size");
    bind(l.piece_to_id, "alto_spm_piece_to_id");
    bind(l.id_to_piece, "alto_spm_id_to_piece");
    bind(l.flags, "alto_spm_flags");
    bind(l.encode, "alto_spm_encode");
    bind(l.decode, "alto_spm_decode");
    return l;
  }
};

// A loaded SentencePiece model.
class Processor {
 public:
  Processor() = default;
  Processor(const Processor&) = delete;
  Processor& operator=(const Processor&) = delete;
  ~Processor() {
    if (handle_) SentencePieceLibrary::get().release(handle_);
  }
  void load(const std::string& serialized, const std::string& source) {
    const auto& l = SentencePieceLibrary::get();
    char error[512] = {};
    handle_ = l.load(serialized.data(), serialized.size(), error, sizeof error);
    ALTO_CHECK_AS(IoError, handle_, source, ": not a SentencePiece model (", error, ")");
  }
  int size() const { return SentencePieceLibrary::get().piece_size(handle_); }
  int piece_to_id(const std::string& piece) const {
    return SentencePieceLibrary::get().piece_to_id(handle_, piece.data(), piece.size());
  }
  std::string piece(int id) const {
    size_t n = 0;
    const char* p = SentencePieceLibrary::get().id_to_piece(handle_, id, &n);
    return std::string(p, n);
  }
  bool is_control(int id) const { return SentencePieceLibrary::get().flags(handle_, id) & 1; }
  bool is_unknown(int id) const { return SentencePieceLibrary::get().flags(handle_, id) & 2; }
  bool is_byte(int id) const { return SentencePieceLibrary::get().flags(handle_, id) & 4; }
  struct Piece {
    int id;
    uint32_t begin, end;
  };
  std::vector<Piece> encode(const std::string& text) const {
    std::vector<Piece> pieces;
    SentencePieceLibrary::get().encode(
        handle_, text.data(), text.size(),
        [](void* out, int id, uint32_t begin, uint32_t end) {
          static_cast<std::vector<Piece>*>(out)->push_back({id, begin, end});
        },
        &pieces);
    return pieces;
  }
  std::string decode(const std::vector<int>& ids) const {
    std::string text;
    SentencePieceLibrary::get().decode(
        handle_, ids.data(), ids.size(),
        [](void* out, const char* t, size_t n) { static_cast<std::string*>(out)->assign(t, n); },
        &text);
    return text;
  }

 private:
  void* handle_ = nullptr;
};

}  // namespace

struct SentencePieceTokenizer::Impl {
  std::string source;
  Processor processor;
  // tokenizer.json only: the Metaspace prepend scheme ("always", "first", "never") applied
  // here rather than by SentencePiece's dummy prefix (which ignores an existing leading
  // space), collapsing of space runs, and the added tokens split out of the text first.
  bool from_tokenizer_json = false;
  std::string prepend_scheme = "always";
  bool collapse_spaces = false;
  std::vector<std::pair<std::string, int64_t>> added;  // content, id
  std::vector<bool> special;                           // by id

  static std::shared_ptr<Impl> load_model_file(const fs::path& path);
  static std::shared_ptr<Impl> load_tokenizer_json(const fs::path& path);

  void load_proto(const std::string& serialized) { processor.load(serialized, source); }

  // One run of text without added tokens, encoded with its byte offsets into the whole text.
  void encode_section(const std::string& text, size_t begin, size_t end, bool first,
                      std::vector<TokenSpan>& out) const {
    std::string section = text.substr(begin, end - begin);
    std::vector<size_t> source_of;  // byte of `section` -> byte of `text`, when rewritten
    if (from_tokenizer_json) {
      std::string rewritten;
      for (size_t i = 0; i < section.size(); ++i) {
        if (collapse_spaces && section[i] == ' ' && i > 0 && section[i - 1] == ' ') continue;
        rewritten += section[i];
        source_of.push_back(begin + i);
      }
      const bool prepend = (prepend_scheme == "always" || (prepend_scheme == "first" && first)) &&
                           (rewritten.empty() || rewritten[0] != ' ');
      if (prepend && !rewritten.empty()) {
        rewritten.insert(rewritten.begin(), ' ');
        source_of.insert(source_of.begin(), begin);
      }
      section = std::move(rewritten);
    }
    if (section.empty()) return;
    for (const auto& p : processor.encode(section)) {
      auto map = [&](size_t b) -> size_t {
        if (source_of.empty()) return begin + b;
        return b < source_of.size() ? source_of[b] : end;
      };
      out.push_back({p.id, map(p.begin), std::max(map(p.begin), map(p.end))});
    }
  }
};

std::shared_ptr<SentencePieceTokenizer::Impl> SentencePieceTokenizer::Impl::load_model_file(
    const fs::path& path) {
  auto impl = std::make_shared<Impl>();
  impl->source = path.string();
  std::ifstream in(path, std::ios::binary);
  ALTO_CHECK_AS(IoError, in.good(), "cannot open ", impl->source);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  impl->load_proto(bytes.str());
  const int n = impl->processor.size();
  impl->special.resize(n);
  for (int id = 0; id < n; ++id) {
    impl->special[id] = impl->processor.is_control(id) || impl->processor.is_unknown(id);
    if (impl->special[id]) impl->added.emplace_back(impl->processor.piece(id), id);
  }
  return impl;
}

std::shared_ptr<SentencePieceTokenizer::Impl> SentencePieceTokenizer::Impl::load_tokenizer_json(
    const fs::path& path) {
  auto impl = std::make_shared<Impl>();
  impl->source = path.string();
  impl->from_tokenizer_json = true;
  const std::string& where = impl->source;
  std::ifstream in(path);
  ALTO_CHECK_AS(IoError, in.good(), "cannot open ", where);
  json file;
  try {
    file = json::parse(in);
  } catch (const json::exception& e) {
    throw IoError(where + ": not valid JSON (" + e.what() + ")");
  }
  ALTO_CHECK_AS(IoError, file.is_object() && file.contains("model") && file["model"].is_object(),
                where, ": expected a tokenizer.json object with a \"model\"");
  const json& model = file["model"];
  ALTO_CHECK_AS(Unsupported, model.value("type", "") == "Unigram", where, ": model.type '",
                model.value("type", ""), "' is not a SentencePiece Unigram model");
  const json& vocab = model.contains("vocab") ? model["vocab"] : json();
  ALTO_CHECK_AS(IoError, vocab.is_array() && !vocab.empty(), where,
                ": model.vocab must be a non-empty list of [piece, score]");
  int64_t unk_id = -1;
  if (model.contains("unk_id") && !model["unk_id"].is_null()) {
    ALTO_CHECK_AS(IoError, model["unk_id"].is_number_integer(), where,
                  ": model.unk_id must be an integer or null");
    unk_id = model["unk_id"].get<int64_t>();
  }
  ALTO_CHECK_AS(IoError, unk_id >= 0 && unk_id < static_cast<int64_t>(vocab.size()), where,
                ": model.unk_id must name a piece of model.vocab (SentencePiece needs an unknown "
                "piece), got ", unk_id);

  // Added tokens: split out of the text, and the special ones become control pieces.
  std::vector<int> added_type(vocab.size(), 0);
  if (file.contains("added_tokens") && file["added_tokens"].is_array()) {
    for (const json& t : file["added_tokens"]) {
      ALTO_CHECK_AS(IoError, t.is_object() && t.contains("id") && t["id"].is_number_integer() &&
                                 t.contains("content") && t["content"].is_string(),
                    where, ": added_tokens entries need an integer id and a string content");
      const int64_t id = t["id"].get<int64_t>();
      ALTO_CHECK_AS(Unsupported, id >= 0 && id < static_cast<int64_t>(vocab.size()), where,
                    ": added token id ", id, " outside model.vocab (", vocab.size(), " pieces)");
      impl->added.emplace_back(t["content"].get<std::string>(), id);
      added_type[id] = t.value("special", false) ? kControl : kUserDefined;
    }
  }
  std::sort(impl->added.begin(), impl->added.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });

  // tokenizers falls back to the unknown piece when a byte piece is missing; SentencePiece
  // refuses byte_fallback without all 256, so it is set only when they are all there.
  int byte_pieces = 0;
  for (const json& entry : vocab)
    if (entry.is_array() && !entry.empty() && entry[0].is_string() &&
        is_byte_piece(entry[0].get<std::string>()))
      ++byte_pieces;
  const bool byte_fallback = model.value("byte_fallback", false) && byte_pieces == 256;

  ProtoWriter proto;
  impl->special.assign(vocab.size(), false);
  for (size_t id = 0; id < vocab.size(); ++id) {
    const json& entry = vocab[id];
    ALTO_CHECK_AS(IoError,
                  entry.is_array() && entry.size() == 2 && entry[0].is_string() &&
                      entry[1].is_number(),
                  where, ": model.vocab[", id, "] must be [piece, score]");
    const std::string piece = entry[0].get<std::string>();
    ALTO_CHECK_AS(IoError, !piece.empty(), where, ": model.vocab[", id, "] is an empty piece");
    int type = kNormal;
    if (static_cast<int64_t>(id) == unk_id) type = kUnknown;
    else if (added_type[id] == kControl) type = kControl;
    else if (added_type[id] == kUserDefined) type = kUserDefined;
    else if (byte_fallback && is_byte_piece(piece)) type = kByte;
    impl->special[id] = type == kControl || type == kUnknown;
    ProtoWriter p;
    p.bytes(1, piece);
    p.float32(2, entry[1].get<float>());
    if (type != kNormal) p.varint(3, type);
    proto.bytes(1, p.str());
  }

  // normalizer: optional Precompiled, then Metaspace's " " -> "▁" (SentencePiece's
  // escape_whitespaces) and optionally the collapse of space runs.
  std::string charsmap;
  std::vector<json> normalizers;
  if (file.contains("normalizer") && !file["normalizer"].is_null()) {
    const json& n = file["normalizer"];
    if (n.value("type", "") == "Sequence" && n.contains("normalizers"))
      for (const json& each : n["normalizers"]) normalizers.push_back(each);
    else
      normalizers.push_back(n);
  }
  for (const json& n : normalizers) {
    const std::string type = n.is_object() ? n.value("type", "") : "";
    if (type == "Precompiled" && n.contains("precompiled_charsmap") &&
        n["precompiled_charsmap"].is_string()) {
      charsmap = base64_decode(n["precompiled_charsmap"].get<std::string>(),
                               where + ": normalizer.precompiled_charsmap");
      continue;
    }
    if (type == "Replace" && n.contains("pattern") && n["pattern"].is_object()) {
      const json& pattern = n["pattern"];
      const std::string content = n.value("content", "");
      if (pattern.value("String", "") == " " && content == "\u2581") continue;
      if (pattern.value("Regex", "") == " {2,}" && (content == " " || content == "\u2581")) {
        impl->collapse_spaces = true;
        continue;
      }
    }
    throw Unsupported(where + ": normalizer " + n.dump().substr(0, 120) +
                      " is not one of a SentencePiece model (Precompiled, Replace \" \" -> \"▁\")");
  }
  const json& pre = file.contains("pre_tokenizer") ? file["pre_tokenizer"] : json();
  ALTO_CHECK_AS(Unsupported,
                pre.is_object() && pre.value("type", "") == "Metaspace" &&
                    pre.value("replacement", "\u2581") == "\u2581",
                where, ": pre_tokenizer ", pre.dump().substr(0, 120),
                " is not SentencePiece's Metaspace with \"▁\"");
  if (pre.contains("prepend_scheme") && pre["prepend_scheme"].is_string())
    impl->prepend_scheme = pre["prepend_scheme"].get<std::string>();
  else if (pre.contains("add_prefix_space") && pre["add_prefix_space"].is_boolean())
    impl->prepend_scheme = pre["add_prefix_space"].get<bool>() ? "always" : "never";
  ALTO_CHECK_AS(Unsupported,
                impl->prepend_scheme == "always" || impl->prepend_scheme == "first" ||
                    impl->prepend_scheme == "never",
                where, ": pre_tokenizer.prepend_scheme '", impl->prepend_scheme,
                "' is not always, first or never");

  ProtoWriter trainer;
  trainer.varint(3, 1);  // model_type UNIGRAM
  trainer.int32(4, static_cast<int32_t>(vocab.size()));
  trainer.varint(35, byte_fallback ? 1 : 0);
  trainer.int32(40, static_cast<int32_t>(unk_id));
  trainer.int32(41, -1);  // bos, eos, pad: tokenizer.json's added tokens say which are special
  trainer.int32(42, -1);
  trainer.int32(43, -1);
  proto.bytes(2, trainer.str());
  ProtoWriter normalizer;
  if (!charsmap.empty()) normalizer.bytes(2, charsmap);
  normalizer.varint(3, 0);  // add_dummy_prefix: the Metaspace scheme is applied in encode
  normalizer.varint(4, 0);  // remove_extra_whitespaces
  normalizer.varint(5, 1);  // escape_whitespaces
  proto.bytes(3, normalizer.str());
  impl->load_proto(proto.str());
  return impl;
}

std::shared_ptr<const SentencePieceTokenizer> SentencePieceTokenizer::from_pretrained(
    const std::string& path) {
  try {
    return load(path);
  } catch (const json::exception& e) {
    // A field of the wrong JSON type deep in a tokenizer.json: the file is corrupt.
    throw IoError(path + ": unexpected JSON structure (" + e.what() + ")");
  }
}

std::shared_ptr<const SentencePieceTokenizer> SentencePieceTokenizer::load(
    const std::string& path) {
  const fs::path p(path);
  std::shared_ptr<Impl> impl;
  if (fs::is_directory(p)) {
    if (fs::exists(p / "tokenizer.json")) {
      impl = Impl::load_tokenizer_json(p / "tokenizer.json");
    } else {
      std::vector<fs::path> models;
      for (const auto& entry : fs::directory_iterator(p)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("tokenizer", 0) == 0 && entry.path().extension() == ".model")
          models.push_back(entry.path());
      }
      ALTO_CHECK_AS(IoError, models.size() == 1, path,
                    ": expected tokenizer.json or exactly one tokenizer*.model, found ",
                    models.size(), " .model files");
      impl = Impl::load_model_file(models.front());
    }
  } else {
    ALTO_CHECK_AS(IoError, fs::exists(p), "cannot open ", path);
    impl = p.extension() == ".json" ? Impl::load_tokenizer_json(p) : Impl::load_model_file(p);
  }
  auto tokenizer = std::shared_ptr<SentencePieceTokenizer>(new SentencePieceTokenizer());
  tokenizer->impl_ = std::move(impl);
  return tokenizer;
}

std::vector<TokenSpan> SentencePieceTokenizer::encode_with_offsets(const std::string& text) const {
  std::vector<TokenSpan> out;
  const Impl& impl = *impl_;
  if (!impl.from_tokenizer_json) {
    impl.encode_section(text, 0, text.size(), true, out);
    return out;
  }
  // transformers splits added tokens out first (longest at each position), then normalises
  // and pre-tokenises each remaining section.
  size_t section = 0, i = 0;
  while (i < text.size()) {
    const std::pair<std::string, int64_t>* match = nullptr;
    for (const auto& added : impl.added)
      if (!added.first.empty() && text.compare(i, added.first.size(), added.first) == 0 &&
          (!match || added.first.size() > match->first.size()))
        match = &added;
    if (!match) {
      ++i;
      continue;
    }
    impl.encode_section(text, section, i, section == 0, out);
    out.push_back({match->second, i, i + match->first.size()});
    i += match->first.size();
    section = i;
  }
  impl.encode_section(text, section, text.size(), section == 0, out);
  return out;
}

std::vector<int64_t> SentencePieceTokenizer::encode(const std::string& text,
                                                    bool split_special_tokens) const {
  std::vector<TokenSpan> spans;
  if (split_special_tokens && impl_->from_tokenizer_json)
    impl_->encode_section(text, 0, text.size(), true, spans);
  else
    spans = encode_with_offsets(text);
  std::vector<int64_t> ids;
  ids.reserve(spans.size());
  for (const auto& s : spans) ids.push_back(s.id);
  return ids;
}

std::string SentencePieceTokenizer::decode(const std::vector<int64_t>& ids,
                                           bool skip_special_tokens) const {
  const Impl& impl = *impl_;
  const int64_t n = vocab_size();
  std::vector<int> known;
  for (int64_t id : ids)
    if (id >= 0 && id < n &&
        !(skip_special_tokens && impl.from_tokenizer_json && impl.special[id]))
      known.push_back(static_cast<int>(id));
  if (!impl.from_tokenizer_json) return impl.processor.decode(known);
  // tokenizer.json's decoder: Replace "▁" -> " ", ByteFallback, Fuse, Strip one leading space.
  std::string out, bytes;
  auto flush_bytes = [&] {
    out += unicode::replace_invalid_utf8(bytes);
    bytes.clear();
  };
  for (int id : known) {
    const std::string piece = impl.processor.piece(id);
    if (impl.processor.is_byte(id)) {
      bytes += static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16));
      continue;
    }
    flush_bytes();
    for (size_t i = 0; i < piece.size();) {
      if (piece.compare(i, 3, "\u2581") == 0) {
        out += ' ';
        i += 3;
      } else {
        out += piece[i++];
      }
    }
  }
  flush_bytes();
  if (!out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

int64_t SentencePieceTokenizer::vocab_size() const { return impl_->processor.size(); }

int64_t SentencePieceTokenizer::token_to_id(const std::string& token) const {
  const int id = impl_->processor.piece_to_id(token);
  // PieceToId answers unk_id for an unknown piece; only the unknown piece itself maps there.
  if (impl_->processor.is_unknown(id) && impl_->processor.piece(id) != token) return -1;
  return id;
}

std::string SentencePieceTokenizer::id_to_token(int64_t id) const {
  ALTO_CHECK(id >= 0 && id < vocab_size(), impl_->source, ": token id ", id,
             " is outside the vocabulary [0, ", vocab_size(), ")");
  return impl_->processor.piece(static_cast<int>(id));
}

bool SentencePieceTokenizer::is_special(int64_t id) const {
  return id >= 0 && id < vocab_size() && impl_->special[id];
}

std::vector<std::pair<std::string, int64_t>> SentencePieceTokenizer::added_tokens() const {
  return impl_->added;
}

const std::string& SentencePieceTokenizer::source() const { return impl_->source; }

namespace {
const Registration<TextTokenizerEntry> kRegistration(
    "sentencepiece",
    {"SentencePiece (a .model file, or a Unigram tokenizer.json as transformers converts it)",
     [](const std::string& path) {
       const fs::path p(path);
       if (fs::is_directory(p)) {
         if (fs::exists(p / "tokenizer.json"))
           return tokenizer_json_model_type((p / "tokenizer.json").string()) == "Unigram";
         for (const auto& entry : fs::directory_iterator(p))
           if (entry.path().filename().string().rfind("tokenizer", 0) == 0 &&
               entry.path().extension() == ".model")
             return true;
         return false;
       }
       if (p.extension() == ".model") return true;
       return p.extension() == ".json" && tokenizer_json_model_type(path) == "Unigram";
     },
     [](const std::string& path) -> std::shared_ptr<const TextTokenizer> {
       return SentencePieceTokenizer::from_pretrained(path);
     }});
}  // namespace

}  // namespace alto::tokenizers
