#include "alto/models/whisper/decoding.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>
#include <set>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/tokenizers/bpe_tokenizer.h"

namespace alto::models {

namespace {

constexpr int64_t kTextTokens = 50257;  // GPT-2's byte-level BPE vocabulary (multilingual: +1)
constexpr int64_t kTimestamps = 1501;   // <|0.00|> ... <|30.00|>
constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// A hypothesis: its tokens (prompt included) and the sum of its sampled tokens' logprobs.
struct Hypothesis {
  std::vector<int64_t> tokens;
  double sum_logprob = 0;
};

// openai-whisper's LogitFilters on CPU logits [rows, vocab], given each row's tokens.
class LogitRules {
 public:
  LogitRules(const WhisperSpecialTokens& special, const WhisperGenerationConfig& generation,
             const WhisperDecodingOptions& options, int64_t vocab_size, size_t sample_begin)
      : special_(special),
        sample_begin_(sample_begin),
        timestamps_(options.timestamps),
        max_initial_(generation.max_initial_timestamp_index) {
    auto keep = [&](std::vector<int64_t>& ids) {
      ids.erase(std::remove_if(ids.begin(), ids.end(),
                               [&](int64_t id) { return id < 0 || id >= vocab_size; }),
                ids.end());
    };
    if (options.suppress_blank) {
      begin_suppress_ = generation.begin_suppress_tokens.value_or(
          std::vector<int64_t>{220, special.eot});  // " " and <|endoftext|>
      keep(begin_suppress_);
    }
    if (options.suppress_tokens) {
      suppress_ = generation.suppress_tokens;
      for (int64_t id : {special.translate, special.transcribe, special.sot, special.start_of_prev,
                         special.start_of_lm, special.no_speech})
        suppress_.push_back(id);
      keep(suppress_);
    }
  }

  void apply(torch::Tensor& logits, const std::vector<Hypothesis>& rows) const {
    const int64_t vocab = logits.size(1);
    float* data = logits.data_ptr<float>();
    const bool at_begin = rows.front().tokens.size() == sample_begin_;
    for (size_t k = 0; k < rows.size(); ++k) {
      float* row = data + k * vocab;
      if (at_begin)
        for (int64_t id : begin_suppress_) row[id] = kMinusInf;
      for (int64_t id : suppress_) row[id] = kMinusInf;
      if (timestamps_) apply_timestamp_rules(row, vocab, rows[k].tokens, at_begin);
    }
  }

 private:
  void apply_timestamp_rules(float* row, int64_t vocab, const std::vector<int64_t>& tokens,
                             bool at_begin) const {
    const int64_t begin = special_.timestamp_begin;
    auto fill = [&](int64_t from, int64_t to) {
      std::fill(row + std::max<int64_t>(from, 0), row + std::min(to, vocab), kMinusInf);
    };
    row[special_.no_timestamps] = kMinusInf;
    const std::vector<int64_t> sampled(tokens.begin() + sample_begin_, tokens.end());
    const size_t n = sampled.size();
    const bool last_was_timestamp = n >= 1 && sampled[n - 1] >= begin;
    const bool penultimate_was_timestamp = n < 2 || sampled[n - 2] >= begin;
    // Timestamps come in pairs around text: after a pair, text; after a lone one, a timestamp.
    if (last_was_timestamp) {
      if (penultimate_was_timestamp)
        fill(begin, vocab);
      else
        fill(0, special_.eot);
    }
    // Timestamps never decrease; after a closing one the next segment starts at or after it.
    for (size_t i = n; i-- > 0;) {
      if (sampled[i] < begin) continue;
      const int64_t last =
          last_was_timestamp && !penultimate_was_timestamp ? sampled[i] : sampled[i] + 1;
      fill(begin, last);
      break;
    }
    if (at_begin) {
      fill(0, begin);  // the first token is a timestamp...
      if (max_initial_ >= 0) fill(begin + max_initial_ + 1, vocab);  // ...within the first second
    }
    // When the timestamps together are likelier than any single text token, take a timestamp.
    double max_logit = kMinusInf;
    for (int64_t i = 0; i < vocab; ++i) max_logit = std::max<double>(max_logit, row[i]);
    // (Both sides share softmax's normaliser, so the unnormalised masses compare the same.)
    double timestamp_mass = 0, max_text = 0;
    for (int64_t i = 0; i < vocab; ++i) {
      const double p = std::exp(row[i] - max_logit);
      if (i >= begin)
        timestamp_mass += p;
      else
        max_text = std::max(max_text, p);
    }
    if (timestamp_mass > max_text) fill(0, begin);
  }

  const WhisperSpecialTokens& special_;
  size_t sample_begin_;
  bool timestamps_;
  int64_t max_initial_;
  std::vector<int64_t> begin_suppress_, suppress_;
};

torch::Tensor last_logits(const Whisper& model, const std::vector<int64_t>& flat, int64_t rows,
                          WhisperDecoderState& state) {
  const int64_t length = static_cast<int64_t>(flat.size()) / rows;
  const torch::Tensor tokens = torch::tensor(flat, torch::kInt64).view({rows, length});
  return model.decode(tokens, state).select(1, -1).to(torch::kCPU).contiguous();
}

// Google NMT's length normalisation, or the plain mean when `penalty` is absent.
double ranking_score(double sum_logprob, size_t length, const std::optional<double>& penalty) {
  const double n = static_cast<double>(std::max<size_t>(length, 1));
  return sum_logprob / (penalty ? std::pow((5.0 + n) / 6.0, *penalty) : n);
}

}  // namespace

WhisperSpecialTokens WhisperSpecialTokens::for_vocab_size(int64_t vocab_size) {
  WhisperSpecialTokens s;
  const int64_t languages_99 = 99;
  int64_t languages = 0;
  bool multilingual = true;
  if (vocab_size == kTextTokens - 1 + 1 + 1 + languages_99 + 6 + kTimestamps) {
    multilingual = false;  // 51864: GPT-2's 50257 tokens end with <|endoftext|> itself
    languages = languages_99;
  } else if (vocab_size == kTextTokens + 1 + 1 + languages_99 + 6 + kTimestamps) {
    languages = languages_99;
  } else if (vocab_size == kTextTokens + 1 + 1 + languages_99 + 1 + 6 + kTimestamps) {
    languages = languages_99 + 1;
  } else {
    throw Unsupported("vocab_size " + std::to_string(vocab_size) +
                      " is not a Whisper vocabulary (51864 English-only, 51865 multilingual, "
                      "51866 large-v3)");
  }
  s.eot = multilingual ? kTextTokens : kTextTokens - 1;
  s.sot = s.eot + 1;
  s.languages.assign(tokenizers::whisper_language_codes().begin(),
                     tokenizers::whisper_language_codes().begin() + languages);
  s.translate = s.sot + 1 + languages;
  s.transcribe = s.translate + 1;
  s.start_of_lm = s.transcribe + 1;
  s.start_of_prev = s.start_of_lm + 1;
  s.no_speech = s.start_of_prev + 1;
  s.no_timestamps = s.no_speech + 1;
  s.timestamp_begin = s.no_timestamps + 1;
  return s;
}

WhisperSpecialTokens WhisperSpecialTokens::from_tokenizer(
    const tokenizers::TextTokenizer& tokenizer) {
  auto id = [&](const char* token) { return tokenizer.require_token(token, "Whisper"); };
  WhisperSpecialTokens s;
  s.eot = id("<|endoftext|>");
  s.sot = id("<|startoftranscript|>");
  s.translate = id("<|translate|>");
  s.transcribe = id("<|transcribe|>");
  s.start_of_lm = id("<|startoflm|>");
  s.start_of_prev = id("<|startofprev|>");
  s.no_speech =
      tokenizer.token_to_id("<|nospeech|>") >= 0 ? id("<|nospeech|>") : id("<|nocaptions|>");
  s.no_timestamps = id("<|notimestamps|>");
  s.timestamp_begin = id("<|0.00|>");
  // Languages follow <|startoftranscript|> in openai's order.
  for (const auto& code : tokenizers::whisper_language_codes())
    if (tokenizer.token_to_id("<|" + code + "|>") == s.sot + 1 + int64_t(s.languages.size()))
      s.languages.push_back(code);
  return s;
}

namespace {
// A language's name ("English") as its code; anything unknown as given, for the callers' messages.
std::string language_code(const std::string& code_or_name) {
  try {
    return tokenizers::whisper_language_code(code_or_name);
  } catch (const InvalidArgument&) {
    return code_or_name;
  }
}
}  // namespace

int64_t WhisperSpecialTokens::language_token(const std::string& code_or_name) const {
  const std::string code = language_code(code_or_name);
  auto it = std::find(languages.begin(), languages.end(), code);
  if (it == languages.end()) {
    std::string known;
    for (const auto& l : languages) known += (known.empty() ? "" : " ") + l;
    throw InvalidArgument("unknown language '" + code_or_name + "' (this model knows: " + known +
                          ")");
  }
  return sot + 1 + (it - languages.begin());
}

bool WhisperSpecialTokens::is_language_token(int64_t token) const {
  return token > sot && token <= sot + static_cast<int64_t>(languages.size());
}

WhisperGenerationConfig WhisperGenerationConfig::from_json(const std::string& path) {
  namespace fs = std::filesystem;
  WhisperGenerationConfig g;
  std::string file = path;
  if (fs::is_directory(path)) {
    file = (fs::path(path) / "generation_config.json").string();
    if (!fs::exists(file)) return g;
  }
  const detail::JsonConfig json = detail::JsonConfig::load(file);
  json.read("suppress_tokens", g.suppress_tokens);
  json.read("begin_suppress_tokens", g.begin_suppress_tokens);
  json.read("max_initial_timestamp_index", g.max_initial_timestamp_index);
  return g;
}

void WhisperDecodingOptions::validate() const {
  ALTO_CHECK(task == "transcribe" || task == "translate",
             "WhisperDecodingOptions.task must be transcribe or translate, got '", task, "'");
  ALTO_CHECK(beam_size >= 0, "WhisperDecodingOptions.beam_size must be >= 0, got ", beam_size);
  ALTO_CHECK(beam_size == 0 || temperature == 0.0,
             "WhisperDecodingOptions: beam search (beam_size ", beam_size,
             ") samples at temperature 0 only, got temperature ", temperature);
  ALTO_CHECK(patience > 0, "WhisperDecodingOptions.patience must be positive, got ", patience);
  ALTO_CHECK(temperature >= 0 && std::isfinite(temperature),
             "WhisperDecodingOptions.temperature must be >= 0, got ", temperature);
  ALTO_CHECK(best_of >= 1, "WhisperDecodingOptions.best_of must be >= 1, got ", best_of);
  ALTO_CHECK(sample_len >= 0, "WhisperDecodingOptions.sample_len must be >= 0, got ", sample_len);
}

WhisperDecoder::WhisperDecoder(const Whisper& model, WhisperSpecialTokens special,
                               WhisperGenerationConfig generation)
    : model_(model), special_(std::move(special)), generation_(std::move(generation)) {
  ALTO_CHECK(special_.timestamp_begin + kTimestamps == model_.config().vocab_size,
             "WhisperDecoder: the special tokens (timestamps from ", special_.timestamp_begin,
             ") do not fit the model's vocab_size ", model_.config().vocab_size);
}

std::map<std::string, double> WhisperDecoder::detect_language(
    const torch::Tensor& encoder_output) const {
  ALTO_CHECK(special_.multilingual(),
             "detect_language: this is an English-only Whisper model (vocab_size ",
             model_.config().vocab_size, ")");
  ALTO_CHECK(encoder_output.dim() == 3 && encoder_output.size(0) == 1,
             "detect_language: expected one window's encoder output [1, frames, d_model]");
  auto state = model_.start(encoder_output);
  const torch::Tensor logits = last_logits(model_, {special_.sot}, 1, state)[0];
  const int64_t first = special_.sot + 1, count = static_cast<int64_t>(special_.languages.size());
  const torch::Tensor probs = torch::softmax(logits.narrow(0, first, count).to(torch::kFloat64), 0);
  std::map<std::string, double> result;
  for (int64_t i = 0; i < count; ++i) result[special_.languages[i]] = probs[i].item<double>();
  return result;
}

std::string WhisperDecoder::most_likely_language(const torch::Tensor& encoder_output) const {
  const auto probs = detect_language(encoder_output);
  return std::max_element(probs.begin(), probs.end(),
                          [](auto& a, auto& b) { return a.second < b.second; })
      ->first;
}

WhisperDecodingResult WhisperDecoder::decode(const torch::Tensor& encoder_output,
                                             const WhisperDecodingOptions& options) const {
  options.validate();
  ALTO_CHECK(encoder_output.dim() == 3 && encoder_output.size(0) == 1,
             "WhisperDecoder::decode: expected one window's encoder output [1, frames, "
             "d_model]");
  const int64_t context = model_.config().max_target_positions;
  WhisperDecodingResult result;
  result.temperature = options.temperature;

  // <|startofprev|> previous text <|startoftranscript|> <|lang|> <|task|> [<|notimestamps|>]
  std::vector<int64_t> initial;
  if (!options.prompt.empty()) {
    initial.push_back(special_.start_of_prev);
    const size_t keep = std::min<size_t>(options.prompt.size(), context / 2 - 1);
    initial.insert(initial.end(), options.prompt.end() - keep, options.prompt.end());
  }
  const size_t sot_index = initial.size();
  initial.push_back(special_.sot);
  if (special_.multilingual()) {
    result.language = options.language.empty() ? most_likely_language(encoder_output)
                                               : language_code(options.language);
    initial.push_back(special_.language_token(result.language));
    initial.push_back(options.task == "translate" ? special_.translate : special_.transcribe);
  } else {
    ALTO_CHECK(options.language.empty() || language_code(options.language) == "en", "language '",
               options.language, "': this Whisper model is English-only");
    ALTO_CHECK(options.task == "transcribe", "this English-only Whisper model cannot translate");
    result.language = "en";
  }
  if (!options.timestamps) initial.push_back(special_.no_timestamps);
  const size_t sample_begin = initial.size();
  ALTO_CHECK(static_cast<int64_t>(sample_begin) < context, "the prompt of ", sample_begin,
             " tokens leaves no room in the decoder's ", context, " positions");
  const int64_t sample_len = options.sample_len > 0 ? options.sample_len : context / 2;

  const bool beam = options.beam_size > 0;
  const int64_t rows = beam ? options.beam_size : options.temperature > 0 ? options.best_of : 1;
  const LogitRules rules(special_, generation_, options, model_.config().vocab_size, sample_begin);
  std::optional<at::Generator> generator;
  if (options.temperature > 0) generator = at::detail::createCPUGenerator(options.seed);

  std::vector<Hypothesis> live(rows, Hypothesis{initial, 0.0});
  std::vector<Hypothesis> finished;
  const size_t max_finished =
      std::max<size_t>(1, std::llround(options.beam_size * options.patience));
  auto state = model_.start(encoder_output, rows);
  std::vector<int64_t> feed;
  for (int64_t r = 0; r < rows; ++r) feed.insert(feed.end(), initial.begin(), initial.end());

  for (int64_t step = 0; step < sample_len; ++step) {
    torch::Tensor logits;
    if (step == 0) {
      const int64_t length = static_cast<int64_t>(initial.size());
      const torch::Tensor all =
          model_.decode(torch::tensor(feed, torch::kInt64).view({rows, length}), state)
              .to(torch::kCPU);
      result.no_speech_prob =
          torch::softmax(all[0][sot_index].to(torch::kFloat64), 0)[special_.no_speech]
              .item<double>();
      logits = all.select(1, -1).contiguous();
    } else {
      logits = last_logits(model_, feed, rows, state);
    }
    rules.apply(logits, live);
    const torch::Tensor logprobs = torch::log_softmax(logits.to(torch::kFloat64), -1);
    feed.clear();

    if (beam) {
      // Every live hypothesis proposes its beam_size + 1 best continuations; the best
      // beam_size unfinished ones live on, those ending in <|endoftext|> are finished.
      struct Candidate {
        double score;
        int64_t source, token;
      };
      std::vector<Candidate> candidates;
      std::set<std::vector<int64_t>> seen;  // identical live rows (at the start) propose once
      const auto [top_lp, top_id] = logprobs.topk(options.beam_size + 1, -1);
      for (int64_t j = 0; j < rows; ++j)
        for (int64_t c = 0; c <= options.beam_size; ++c) {
          std::vector<int64_t> sequence = live[j].tokens;
          sequence.push_back(top_id[j][c].item<int64_t>());
          if (!seen.insert(std::move(sequence)).second) continue;
          candidates.push_back(
              {live[j].sum_logprob + top_lp[j][c].item<double>(), j, top_id[j][c].item<int64_t>()});
        }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
      std::vector<Hypothesis> next;
      std::vector<int64_t> sources;
      for (const Candidate& c : candidates) {
        Hypothesis h{live[c.source].tokens, c.score};
        h.tokens.push_back(c.token);
        if (c.token == special_.eot) {
          finished.push_back(std::move(h));
          continue;
        }
        next.push_back(std::move(h));
        sources.push_back(c.source);
        feed.push_back(c.token);
        if (static_cast<int64_t>(next.size()) == rows) break;
      }
      live = std::move(next);
      state.select_rows(torch::tensor(sources, torch::kInt64));
      if (finished.size() >= max_finished) break;
    } else {
      torch::Tensor chosen =
          generator ? torch::multinomial(torch::softmax(logits / options.temperature, -1), 1, false,
                                         *generator)
                          .squeeze(1)
                    : logits.argmax(-1);
      bool all_ended = true;
      for (int64_t k = 0; k < rows; ++k) {
        Hypothesis& h = live[k];
        const bool ended = h.tokens.back() == special_.eot;
        const int64_t token = ended ? special_.eot : chosen[k].item<int64_t>();
        if (!ended) h.sum_logprob += logprobs[k][token].item<double>();
        h.tokens.push_back(token);
        feed.push_back(token);
        all_ended = all_ended && token == special_.eot;
      }
      if (all_ended) break;
    }
    if (static_cast<int64_t>(live.front().tokens.size()) >= context) break;
  }

  // Greedy rows and unfinished beams end where they stopped; beam search tops up the
  // finished hypotheses with the best live ones.
  if (!beam) {
    finished = std::move(live);
  } else if (finished.size() < static_cast<size_t>(rows)) {
    std::stable_sort(live.begin(), live.end(), [](const Hypothesis& a, const Hypothesis& b) {
      return a.sum_logprob > b.sum_logprob;
    });
    for (Hypothesis& h : live) {
      if (finished.size() >= static_cast<size_t>(rows)) break;
      finished.push_back(std::move(h));
    }
  }
  const Hypothesis* best = nullptr;
  double best_score = 0;
  std::vector<int64_t> best_tokens;
  for (const Hypothesis& h : finished) {
    std::vector<int64_t> sampled(h.tokens.begin() + sample_begin, h.tokens.end());
    sampled.erase(std::find(sampled.begin(), sampled.end(), special_.eot), sampled.end());
    const double score = ranking_score(h.sum_logprob, sampled.size(), options.length_penalty);
    if (!best || score > best_score) {
      best = &h;
      best_score = score;
      best_tokens = std::move(sampled);
    }
  }
  result.tokens = std::move(best_tokens);
  result.sum_logprob = best->sum_logprob;
  result.avg_logprob = best->sum_logprob / static_cast<double>(result.tokens.size() + 1);
  return result;
}

}  // namespace alto::models
