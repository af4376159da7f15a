// libFuzzer harness over the text tokenizers' untrusted inputs: a tokenizer.json, tekken.json,
// .tiktoken or SentencePiece .model from a model folder (their JSON, vocabularies, merges, added
// tokens, normalizers and pre-tokenizer patterns; the .model's protobuf) and the text given to
// them. The first byte picks what the rest is:
//   0: a pre-tokenizer pattern, a newline, then a text to split with it;
//   1: a tokenizer.json (byte-level BPE, or a SentencePiece Unigram), 2: a tekken.json,
//   3: an openai-whisper .tiktoken rank file, 4: a SentencePiece .model — loaded, then used on
//   a few texts.
// Every outcome must be a result or an alto::Error: no crash, hang, leak or undefined behaviour.

#include <cstdint>
#include <fstream>
#include <string>

#include "alto/core/error.h"
#include "alto/tokenizers/internal/regex.h"
#include "alto/tokenizers/internal/unicode.h"
#include "alto/tokenizers/text_tokenizer.h"
#include "scratch_folder.h"

namespace {

void split(const std::string& input) {
  const size_t newline = input.find('\n');
  const std::string pattern = input.substr(0, newline);
  const std::string text = newline == std::string::npos ? "" : input.substr(newline + 1);
  const alto::tokenizers::Regex regex(pattern, "fuzz");
  regex.split(alto::tokenizers::unicode::decode_utf8(text, "fuzz").code_points);
}

void load_and_use(const std::string& file, const std::string& contents) {
  const std::string& dir = scratch_folder("alto_fuzz_tokenizer");
  const std::string path = dir + "/" + file;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
  const auto tokenizer = alto::tokenizers::TextTokenizer::from_pretrained(path);
  for (const char* text : {"Hello world", " \u00e9t\u00e9  12345\n\n<|AUDIO|>[INST]", ""}) {
    const auto ids = tokenizer->encode(text);
    tokenizer->encode_with_offsets(text);
    tokenizer->decode(ids, true);
  }
  tokenizer->decode({0, 1, 2, tokenizer->vocab_size() - 1}, false);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 5) {
      case 0:
        split(rest);
        break;
      case 1:
        load_and_use("tokenizer.json", rest);
        break;
      case 2:
        load_and_use("tekken.json", rest);
        break;
      case 3:
        load_and_use("ranks.tiktoken", rest);
        break;
      default:
        load_and_use("tokenizer.model", rest);
        break;
    }
  } catch (const alto::Error&) {
    // A named error is the expected outcome for a bad file or pattern.
  }
  return 0;
}
