#pragma once
// Autoregressive generation with a TextDecoder as transformers' generate() does it: greedy or
// seeded sampling (temperature, top-k, top-p, min-p), repetition penalty, max_new_tokens, stop
// on any of generation_config.json's eos ids, finished rows padded, a callback per token.

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "alto/core/options.h"
#include "alto/models/text_decoder.h"

namespace alto::models {

/// generation_config.json's keys (absent ones keep transformers' defaults, except
/// max_new_tokens: alto's default when neither it nor max_length is written).
struct GenerationConfig {
  bool do_sample = false;
  double temperature = 1.0;
  int64_t top_k = 50;  // 0: off
  double top_p = 1.0;
  std::optional<double> min_p;
  double repetition_penalty = 1.0;
  int64_t max_new_tokens = 256;
  std::vector<int64_t> eos_token_id;  // an int or a list in the file
  std::optional<int64_t> pad_token_id;
  /// Seed of the sampling generator (alto's; transformers draws from torch's global one).
  uint64_t seed = 0;

  /// `path`: a generation_config.json or the folder holding it; a folder without one gives the
  /// defaults. alto::InvalidArgument naming the file and key for a bad value. With `key_prefix`,
  /// only the keys that start with it are read, without it (CSM's "depth_decoder_" settings).
  static GenerationConfig from_json(const std::string& path, const std::string& key_prefix = "");
  static const OptionSchema<GenerationConfig>& schema();
  void validate() const;
  std::string to_string() const;
  /// temperature 0 means greedy, as the CLI's --temperature 0 does.
  bool greedy() const { return !do_sample || temperature == 0; }
};

/// Called with (row, token id) for each new token as soon as it is chosen; returning false stops
/// generation after this step.
using TokenCallback = std::function<bool(int64_t row, int64_t token)>;

struct GenerationResult {
  /// [batch, new_tokens] int64: each row's tokens, pad_token_id (or the last eos) after it ended.
  torch::Tensor generated_ids;
  /// [steps, batch, vocab_size] float32 raw logits of each step (transformers' output_logits),
  /// when requested.
  torch::Tensor logits;
  double prefill_seconds = 0;
  std::vector<double> token_seconds;  // one per decoding step after the prefill
};

struct GenerateOptions {
  bool return_logits = false;
  TokenCallback on_token;
};

/// Runs the decoder on a prompt given as embeddings (text and audio already merged) and
/// generates. inputs_embeds [batch, T, hidden]; attention_mask [batch, T] (left padding) or
/// undefined; input_ids [batch, T] int64 (the repetition penalty's history; may be undefined
/// when the penalty is 1).
GenerationResult generate(const TextDecoder& decoder, const torch::Tensor& inputs_embeds,
                          const torch::Tensor& attention_mask, const torch::Tensor& input_ids,
                          const GenerationConfig& config, const GenerateOptions& options = {});

/// One step's choice from raw logits [batch, vocab] float32, after the repetition penalty over
/// `history` [batch, n] (undefined: none) and, when sampling, the warpers in transformers'
/// order (temperature, top-k, top-p, min-p), drawing from `generator`.
torch::Tensor next_tokens(const torch::Tensor& logits, const torch::Tensor& history,
                          const GenerationConfig& config, at::Generator& generator);

}  // namespace alto::models
