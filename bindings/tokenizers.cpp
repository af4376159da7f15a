// tokenizers/: the text-tokenizer interface and Whisper's byte-level BPE over it. (The codec
// tokenizers are in audio_tokenizer.cpp.)

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "alto/models/whisper/decoding.h"
#include "alto/tokenizers/bpe_tokenizer.h"
#include "bindings/common.h"

namespace alto::python {

namespace {

using tokenizers::BpeTokenizer;
using tokenizers::TextTokenizer;

/// Whisper's special tokens as this tokenizer names them (the Whisper layer over the BPE).
models::WhisperSpecialTokens whisper(const BpeTokenizer& t) {
  return models::WhisperSpecialTokens::from_tokenizer(t);
}

}  // namespace

namespace {

/// Token ids given as a list of ints or a 1-D integer tensor / array.
/// Ids to decode, each in [0, vocab_size) as `alto tokenize --decode` requires (an unknown id
/// would otherwise vanish from the text without a word).
std::vector<int64_t> ids_of(const py::object& ids, int64_t vocab_size) {
  std::vector<int64_t> out;
  if (THPVariable_Check(ids.ptr()) || py::isinstance<py::array>(ids)) {
    const torch::Tensor t = integral(py::cast<TensorArg>(ids).tensor, "ids", 1).contiguous().cpu();
    out.assign(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
  } else {
    try {
      out = py::cast<std::vector<int64_t>>(ids);
    } catch (const py::cast_error&) {
      throw InvalidArgument("ids must be a list of ints or a 1-D integer tensor");
    }
  }
  for (size_t i = 0; i < out.size(); ++i)
    ALTO_CHECK(out[i] >= 0 && out[i] < vocab_size, "ids[", i, "] = ", out[i],
               " is outside the vocabulary [0, ", vocab_size, ")");
  return out;
}

}  // namespace

void bind_tokenizers(py::module_& top) {
  py::module_ m = submodule(top, "tokenizers", "Text and audio tokenizers.");

  py::class_<TextTokenizer, std::shared_ptr<TextTokenizer>>(
      m, "TextTokenizer",
      R"doc(A text tokenizer in any format alto reads (tokenizer.json byte-level BPE as Qwen2's,
vocab.json + merges.txt, .tiktoken, Mistral's tekken.json). Immutable; safe to share::

    tok = alto.tokenizers.TextTokenizer.from_pretrained("Qwen2-Audio-7B-Instruct")
    ids = tok.encode("<|im_start|>user")
    tok.decode(ids, skip_special_tokens=True))doc")
      .def_static(
          "from_pretrained",
          [](const std::string& path) {
            py::gil_scoped_release release;
            return std::const_pointer_cast<TextTokenizer>(TextTokenizer::from_pretrained(path));
          },
          py::arg("path"),
          "The first format that recognises `path` (a folder or a file) loads it. Raises "
          "alto.IoError naming the path when none does, or a corrupt file.")
      .def("encode", &TextTokenizer::encode, py::arg("text"),
           py::arg("split_special_tokens") = false, py::call_guard<py::gil_scoped_release>(),
           "Text -> ids (list of int). Added-token text becomes that token unless "
           "split_special_tokens. Raises alto.Error for invalid UTF-8.")
      .def(
          "encode_with_offsets",
          [](const TextTokenizer& t, const std::string& text) {
            py::list out;
            for (const tokenizers::TokenSpan& s : t.encode_with_offsets(text))
              out.append(py::make_tuple(s.id, s.begin, s.end));
            return out;
          },
          py::arg("text"),
          "[(id, begin, end)]: each token and the bytes [begin, end) of the (normalised) text "
          "it covers.")
      .def(
          "decode",
          [](const TextTokenizer& t, const py::object& ids, bool skip_special_tokens) {
            const std::vector<int64_t> list = ids_of(ids, t.vocab_size());
            py::gil_scoped_release release;
            return t.decode(list, skip_special_tokens);
          },
          py::arg("ids"), py::arg("skip_special_tokens") = false,
          "Ids (list or 1-D integer tensor) -> text; special tokens dropped with "
          "skip_special_tokens.")
      .def_property_readonly("vocab_size", &TextTokenizer::vocab_size,
                             "Every id, added tokens included.")
      .def("token_to_id", &TextTokenizer::token_to_id, py::arg("token"), "-1 when absent.")
      .def("id_to_token", &TextTokenizer::id_to_token, py::arg("id"),
           "The token string of an id.")
      .def("is_special", &TextTokenizer::is_special, py::arg("id"),
           "Whether an id is a special token.")
      .def_property_readonly("added_tokens", &TextTokenizer::added_tokens,
                             "Added tokens [(content, id)] in id order.");

  py::class_<BpeTokenizer, TextTokenizer, std::shared_ptr<BpeTokenizer>> bpe(
      m, "BpeTokenizer",
      R"doc(Whisper's text tokenizer: GPT-2 byte-level BPE plus Whisper's special and timestamp tokens.

Encoding and decoding follow transformers' WhisperTokenizer exactly (decode_openai follows
openai-whisper's Tokenizer.decode). Immutable; safe to share between threads::

    tok = alto.BpeTokenizer.from_pretrained("whisper-tiny")
    ids = tok.encode(" Hello world")
    tok.decode(ids, skip_special_tokens=True))doc");
  bpe.def_static(
         "from_pretrained",
         [](const std::string& path) {
           py::gil_scoped_release release;
           return std::const_pointer_cast<BpeTokenizer>(BpeTokenizer::from_pretrained(path));
         },
         py::arg("path"),
         "A folder with tokenizer.json, or vocab.json + merges.txt (+ added_tokens.json), or an "
         "openai .tiktoken file. Raises alto.IoError naming a missing or corrupt file.")
      .def(
          "decode",
          [](const BpeTokenizer& t, const py::object& ids, bool skip_special_tokens,
             bool with_timestamps) {
            tokenizers::BpeDecodeOptions o;
            o.skip_special_tokens = skip_special_tokens;
            o.with_timestamps = with_timestamps;
            const std::vector<int64_t> list = ids_of(ids, t.vocab_size());
            py::gil_scoped_release release;
            return t.decode(list, o);
          },
          py::arg("ids"), py::arg("skip_special_tokens") = false,
          py::arg("with_timestamps") = false,
          "Ids (list or 1-D integer tensor) -> text as WhisperTokenizer.decode.")
      .def(
          "decode_openai",
          [](const BpeTokenizer& t, const py::object& ids, bool with_timestamps) {
            const std::vector<int64_t> list = ids_of(ids, t.vocab_size());
            py::gil_scoped_release release;
            return t.decode_openai(list, with_timestamps);
          },
          py::arg("ids"), py::arg("with_timestamps") = false,
          "openai-whisper's Tokenizer.decode (or decode_with_timestamps).")
      .def(
          "offsets",
          [](const BpeTokenizer& t, const py::object& ids) {
            py::list out;
            for (const tokenizers::BpeOffset& o : t.offsets(ids_of(ids, t.vocab_size()))) {
              py::dict d;
              d["text"] = o.text;
              d["timestamp"] = py::make_tuple(o.start, o.end);
              out.append(d);
            }
            return out;
          },
          py::arg("ids"),
          "Segments between timestamp pairs as WhisperTokenizer.decode(output_offsets=True): "
          "[{\"text\", \"timestamp\": (start, end)}].")
      .def(
          "language_token",
          [](const BpeTokenizer& t, const std::string& code) {
            return whisper(t).language_token(code);
          },
          py::arg("code"),
          "The id of a Whisper language token (<|en|>); alto.InvalidArgument for an unknown code.")
      .def_property_readonly(
          "languages", [](const BpeTokenizer& t) { return whisper(t).languages; },
          "Whisper language codes in token order.");
  // Whisper's special tokens as properties, each the id the Whisper layer finds by name.
  using Special = models::WhisperSpecialTokens;
  const std::tuple<const char*, int64_t Special::*, const char*> specials[] = {
      {"eot", &Special::eot, "The id of <|endoftext|>."},
      {"sot", &Special::sot, "The id of <|startoftranscript|>."},
      {"transcribe", &Special::transcribe, "The id of <|transcribe|>."},
      {"translate", &Special::translate, "The id of <|translate|>."},
      {"start_of_lm", &Special::start_of_lm, "The id of <|startoflm|>."},
      {"start_of_prev", &Special::start_of_prev, "The id of <|startofprev|>."},
      {"no_speech", &Special::no_speech, "The id of <|nospeech|> (or <|nocaptions|>)."},
      {"no_timestamps", &Special::no_timestamps, "The id of <|notimestamps|>."},
      {"timestamp_begin", &Special::timestamp_begin, "The id of <|0.00|>, the first timestamp."}};
  for (const auto& [name, member, doc] : specials)
    bpe.def_property_readonly(
        name, [member = member](const BpeTokenizer& t) { return whisper(t).*member; }, doc);
  top.attr("BpeTokenizer") = bpe;
}

}  // namespace alto::python
