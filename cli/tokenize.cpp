// alto tokenize --tokenizer DIR [--json] TEXT|-
// alto tokenize --tokenizer DIR --decode [--skip-special-tokens] ID...|-
// "-" reads the text (or the ids, separated by white space) from standard input.

#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "alto/core/error.h"
#include "alto/tokenizers/bpe_tokenizer.h"
#include "commands.h"

namespace alto::cli {

namespace {

struct TokenizeArgs {
  std::string tokenizer;
  std::vector<std::string> inputs;
  bool json = false, decode = false, skip_special_tokens = false;
};

// Standard input whole; one final newline (echo's) is not part of the text.
std::string read_stdin() {
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

void run_tokenize(TokenizeArgs a) {
  const tokenizers::BpeTokenizer tokenizer =
      *tokenizers::BpeTokenizer::from_pretrained(a.tokenizer);
  const bool from_stdin = a.inputs.size() == 1 && a.inputs[0] == "-";
  if (a.decode) {
    if (from_stdin) {
      std::istringstream words(read_stdin());
      a.inputs.clear();
      for (std::string word; words >> word;) a.inputs.push_back(word);
    }
    std::vector<int64_t> ids;
    for (const std::string& input : a.inputs) {
      size_t used = 0;
      int64_t id = -1;
      try {
        id = std::stoll(input, &used);
      } catch (const std::exception&) {
      }
      ALTO_CHECK(used == input.size() && id >= 0 && id < tokenizer.vocab_size(), "--decode: '",
                 input, "' is not a token id in [0, ", tokenizer.vocab_size(), ")");
      ids.push_back(id);
    }
    tokenizers::BpeDecodeOptions options;
    options.skip_special_tokens = a.skip_special_tokens;
    std::cout << tokenizer.decode(ids, options) << "\n";
    return;
  }
  ALTO_CHECK(a.inputs.size() == 1, "give the text as one argument (quote it), got ",
             a.inputs.size());
  const std::vector<int64_t> ids = tokenizer.encode(from_stdin ? read_stdin() : a.inputs[0]);
  if (a.json) {
    std::cout << nlohmann::json(ids).dump() << "\n";
    return;
  }
  for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
  std::cout << "\n";
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenize", "Text to Whisper token ids, or ids to text");
  auto a = std::make_shared<TokenizeArgs>();
  cmd->add_option("--tokenizer", a->tokenizer,
                  "Folder with tokenizer.json or vocab.json+merges.txt, or a .tiktoken file")
      ->required();
  cmd->add_option("inputs", a->inputs,
                  "The text, or with --decode the ids; - reads them from standard input")
      ->required();
  cmd->add_flag("--json", a->json, "Print the ids as a JSON array");
  cmd->add_flag("--decode", a->decode, "Decode ids to text");
  cmd->add_flag("--skip-special-tokens", a->skip_special_tokens,
                "--decode: drop special tokens and a <|startofprev|> prompt");
  cmd->callback([a] { run_tokenize(*a); });
}

}  // namespace alto::cli
