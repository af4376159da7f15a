#pragma once
// The decoder-only text transformer of the Llama, Mistral and Qwen2 families (transformers'
// LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM), read from config.json: grouped-query
// attention with an explicit head_dim, biases where the family has them, RMSNorm, SwiGLU,
// rotate-half RoPE with rope_scaling, sliding windows per layer, a tied or untied head. The text
// backbone of the audio LMs (Qwen2-Audio, Voxtral) and usable alone. Immutable after loading;
// per-sequence state (the KV caches) lives in TextDecoderState. With LoadOptions::linear_weights
// int8, every linear layer and the head hold int8 weights (the token table stays float32).

#include <torch/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alto/core/checkpoint.h"
#include "alto/core/options.h"
#include "alto/core/safetensors.h"
#include "alto/models/blocks/attention.h"
#include "alto/models/blocks/intermediates.h"
#include "alto/models/blocks/rope.h"

namespace alto::models {

/// config.json (or an audio LM's text_config) with the Hub's key names; absent keys take the
/// family's transformers defaults.
struct TextDecoderConfig {
  std::string model_type = "llama";  // "llama", "mistral" or "qwen2"
  int64_t vocab_size = 32000;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 11008;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  std::optional<int64_t> num_key_value_heads;  // absent: num_attention_heads (no GQA)
  std::optional<int64_t> head_dim;             // absent: hidden_size / num_attention_heads
  std::string hidden_act = "silu";
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  blocks::RopeScaling rope_scaling;  // rope_scaling, or transformers 5's rope_parameters
  bool attention_bias = false;       // llama: q/k/v/o biases; qwen2 always has q/k/v biases
  bool mlp_bias = false;
  bool tie_word_embeddings = false;
  std::optional<int64_t> sliding_window;
  bool use_sliding_window = false;  // qwen2: windows only when set, from max_window_layers on
  int64_t max_window_layers = 28;
  /// "full_attention" / "sliding_attention" per layer (transformers 5 writes them; derived from
  /// the keys above when absent).
  std::vector<std::string> layer_types;

  /// `path`: a config.json or the folder holding it; with `sub_config` ("text_config"), the
  /// decoder's keys are read from that nested object. alto::Unsupported for a model_type
  /// outside the three families, alto::InvalidArgument naming the file and key otherwise. With
  /// `defaults`, the keys are read over them whatever the model_type says (CSM's backbone and
  /// depth decoder: Llamas under their own model_types, with CSM's defaults).
  static TextDecoderConfig from_json(const std::string& path, const std::string& sub_config = "",
                                     const TextDecoderConfig* defaults = nullptr);
  static const OptionSchema<TextDecoderConfig>& schema();
  void validate() const;
  std::string to_string() const;

  int64_t kv_heads() const { return num_key_value_heads.value_or(num_attention_heads); }
  int64_t head_size() const { return head_dim.value_or(hidden_size / num_attention_heads); }
  /// The window of layer `layer` (0: full attention).
  int64_t window_of(int64_t layer) const;
  bool qkv_bias() const { return model_type == "qwen2" || attention_bias; }
  bool output_bias() const { return model_type == "llama" && attention_bias; }
};

/// The KV caches of a batch of rows and which of their positions are padding.
struct TextDecoderState {
  std::vector<blocks::KVCache> layers;
  /// [batch, capacity] int64: 1 for every real token fed so far, 0 for padding.
  torch::Tensor key_padding;
  /// [batch] int64: real tokens fed per row, the next token's position id (left padding shifts
  /// positions as transformers' generate does: position = number of real tokens before).
  torch::Tensor real_tokens;
  int64_t length() const { return layers.empty() ? 0 : layers.front().length(); }
  int64_t capacity() const { return layers.empty() ? 0 : layers.front().capacity(); }
};

class TextDecoder {
 public:
  /// A *ForCausalLM folder (config.json with one of the three model_types, model.safetensors or
  /// its sharded index): modules under "model.", the head at "lm_head.weight".
  static std::shared_ptr<const TextDecoder> from_pretrained(const std::string& dir,
                                                            const LoadOptions& options = {});
  /// Binds the modules at `prefix` ("model.", or an audio LM's "language_model.model.") and the
  /// head at `head_name` (falling back to the embedding when tied or absent and tied). An empty
  /// `head_name` binds no head, and `embed_tokens` false no token table: a model that embeds its
  /// own inputs and reads its own outputs (CSM's backbone and depth decoder) uses the layers.
  TextDecoder(const TextDecoderConfig& config, CheckpointBinder& binder, const std::string& prefix,
              const std::string& head_name, const LoadOptions& options, bool embed_tokens = true);

  /// input_ids int64 [batch, T] -> [batch, T, hidden_size] in the model's dtype.
  /// alto::InvalidArgument for a decoder bound without its token table.
  torch::Tensor embed(const torch::Tensor& input_ids) const;
  /// Empty caches for `batch` rows of up to `capacity` positions (prompt and generated tokens).
  /// alto::InvalidArgument when capacity exceeds max_position_embeddings.
  TextDecoderState start(int64_t batch, int64_t capacity) const;
  /// inputs_embeds [batch, T, hidden_size] appended after the state's positions; attention_mask
  /// [batch, T] (1 real, 0 padding; left padding for batched prompts) or undefined for all
  /// real -> the final-norm hidden states [batch, T, hidden_size]. Cached calls equal one call
  /// on the whole sequence. With `intermediates`, each layer's output under the checkpoint's
  /// names.
  torch::Tensor forward(const torch::Tensor& inputs_embeds, const torch::Tensor& attention_mask,
                        TextDecoderState& state, Intermediates* intermediates = nullptr) const;
  /// hidden [..., hidden_size] -> logits [..., vocab_size] float32. alto::InvalidArgument for a
  /// decoder bound without a head.
  torch::Tensor logits(const torch::Tensor& hidden) const;

  const TextDecoderConfig& config() const;
  const LoadOptions& load_options() const;
  /// The checkpoint prefix of the modules ("model.").
  const std::string& prefix() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace alto::models
