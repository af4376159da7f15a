#pragma once
// Decoding one 30-second Whisper window into tokens as openai-whisper's DecodingTask does:
// the <|startoftranscript|> prompt (with previous text after <|startofprev|>), greedy,
// temperature sampling (best of N) or beam search with patience and length penalty, Whisper's
// logit rules (blank and non-speech suppression, timestamp pairing and monotonicity), language
// detection from the language-token distribution, and the no-speech probability.

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "alto/models/whisper/whisper.h"
#include "alto/tokenizers/text_tokenizer.h"

namespace alto::models {

/// The ids of Whisper's special tokens. Every released vocabulary lays them out the same way
/// after the text tokens: <|endoftext|>, <|startoftranscript|>, one token per language,
/// <|translate|>, <|transcribe|>, <|startoflm|>, <|startofprev|>, <|nospeech|>,
/// <|notimestamps|>, then 1501 timestamps <|0.00|> ... <|30.00|>.
struct WhisperSpecialTokens {
  int64_t eot = 0, sot = 0, translate = 0, transcribe = 0, start_of_lm = 0, start_of_prev = 0,
          no_speech = 0, no_timestamps = 0, timestamp_begin = 0;
  /// Language codes in token order: <|en|> is sot + 1.
  std::vector<std::string> languages;

  /// The layout for a model's vocabulary size: 51864 (English-only), 51865 (multilingual, 99
  /// languages) or 51866 (large-v3, 100 with Cantonese). Throws alto::Unsupported otherwise.
  static WhisperSpecialTokens for_vocab_size(int64_t vocab_size);
  /// The tokens as a tokenizer names them; alto::InvalidArgument naming the first one missing
  /// (a tokenizer that is not Whisper's).
  static WhisperSpecialTokens from_tokenizer(const tokenizers::TextTokenizer& tokenizer);
  bool multilingual() const { return eot == 50257; }
  /// A code ("de") or an English name ("German"); alto::InvalidArgument listing the known codes.
  int64_t language_token(const std::string& code_or_name) const;
  bool is_language_token(int64_t token) const;
  bool is_timestamp(int64_t token) const { return token >= timestamp_begin; }
};

/// generation_config.json of a Whisper checkpoint; absent keys keep openai-whisper's behaviour.
struct WhisperGenerationConfig {
  /// Non-speech tokens never sampled (openai's suppress_tokens="-1" set).
  std::vector<int64_t> suppress_tokens;
  /// Tokens suppressed at the first sampled position: " " and <|endoftext|> when absent.
  std::optional<std::vector<int64_t>> begin_suppress_tokens;
  /// The first timestamp may be at most this many 20 ms steps (1 s).
  int64_t max_initial_timestamp_index = 50;

  /// Reads `path` (a generation_config.json or the folder holding it; a folder without one
  /// gives the defaults). Errors name the file and field.
  static WhisperGenerationConfig from_json(const std::string& path);
};

struct WhisperDecodingOptions {
  std::string task = "transcribe";  // or "translate"
  /// A language code ("en", "de", ...) or English name ("German"); empty: the model's most
  /// likely language.
  std::string language;
  /// Predict timestamp tokens (segments) instead of starting with <|notimestamps|>.
  bool timestamps = false;
  /// >= 1: beam search with this many beams; 0: greedy (temperature 0) or sampling.
  int beam_size = 0;
  /// Beam search stops once beam_size * patience hypotheses have finished.
  double patience = 1.0;
  /// Ranking of finished hypotheses: none = sum logprob / length; else Google NMT's
  /// ((5 + length) / 6) ^ length_penalty.
  std::optional<double> length_penalty;
  /// 0: argmax; > 0: sampling from softmax(logits / temperature), best of `best_of` samples.
  double temperature = 0.0;
  int best_of = 5;
  uint64_t seed = 0;
  /// Maximum sampled tokens; 0: half the decoder's context (224), as openai-whisper.
  int64_t sample_len = 0;
  /// Text tokens of the previous window (or an initial prompt), fed after <|startofprev|>.
  std::vector<int64_t> prompt;
  bool suppress_blank = true;
  bool suppress_tokens = true;

  void validate() const;
};

struct WhisperDecodingResult {
  std::string language;
  std::vector<int64_t> tokens;  // sampled tokens, <|endoftext|> excluded
  double sum_logprob = 0, avg_logprob = 0;
  double no_speech_prob = 0;
  double temperature = 0;
  /// gzip ratio of the decoded text, as openai-whisper's DecodingResult; set by
  /// WhisperTranscriber, which holds the text tokenizer (0 from WhisperDecoder::decode).
  double compression_ratio = 0;
};

class WhisperDecoder {
 public:
  WhisperDecoder(const Whisper& model, WhisperSpecialTokens special,
                 WhisperGenerationConfig generation = {});

  /// Language probabilities (by code, summing to 1) for one window's encoder output [1, S, d].
  std::map<std::string, double> detect_language(const torch::Tensor& encoder_output) const;
  /// The language code detect_language rates highest.
  std::string most_likely_language(const torch::Tensor& encoder_output) const;
  /// Decodes one window's encoder output [1, S, d].
  WhisperDecodingResult decode(const torch::Tensor& encoder_output,
                               const WhisperDecodingOptions& options) const;

  const WhisperSpecialTokens& special_tokens() const { return special_; }

 private:
  Whisper model_;  // shares the loaded weights
  WhisperSpecialTokens special_;
  WhisperGenerationConfig generation_;
};

}  // namespace alto::models
