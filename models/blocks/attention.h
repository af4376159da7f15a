#pragma once
// Multi-head attention as transformers' decoder-only models compute it (LlamaAttention,
// Qwen2Attention, MistralAttention): grouped-query heads, an explicit head_dim, optional biases,
// rotary positions, additive masks built from causality, a sliding window and key padding, and a
// preallocated KV cache that a step writes into instead of concatenating.

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cmath>
#include <string>
#include <utility>

#include "alto/models/blocks/basic.h"
#include "alto/models/blocks/rope.h"

namespace alto::models::blocks {

/// Which keys a query sees. Positions are absolute: query i of a call sits at
/// `query_offset + i`, key j at j.
struct AttentionMaskOptions {
  bool causal = true;
  /// > 0: a query at q sees keys k with q - k < sliding_window (transformers' sliding-window
  /// mask; Mistral, Qwen2 with use_sliding_window); 0: no window.
  int64_t sliding_window = 0;
};

/// The additive float mask [batch or 1, 1, queries, keys] (0 where visible, the dtype's lowest
/// where not). `key_padding`, when defined, is [batch, keys] with 1 for real tokens and 0 for
/// padding (transformers' attention_mask); a query that sees no key at all (a padded row) gets
/// an all-visible row instead, as transformers' SDPA path does, so it stays finite.
torch::Tensor attention_mask(int64_t queries, int64_t keys, int64_t query_offset,
                             const AttentionMaskOptions& options, const torch::Tensor& key_padding,
                             torch::ScalarType dtype, torch::Device device = torch::kCPU);

/// The mask of one call, described rather than built: the band of `options` for queries at
/// positions `query_offset` + i, and `key_padding` [batch, keys] (1 real, 0 padding; undefined:
/// every key real). The fused kernel reads it as it is; other dtypes and devices get
/// attention_mask()'s tensor.
struct AttentionMask {
  AttentionMaskOptions options;
  int64_t query_offset = 0;
  torch::Tensor key_padding;
};

/// softmax(q k^T * scale + mask) v with grouped-query heads: q [batch, heads, T, D], k and v
/// [batch, kv_heads, S, D] with heads a multiple of kv_heads (each kv head serves
/// heads / kv_heads consecutive query heads, transformers' repeat_kv). The softmax runs in
/// float32. `weights`, when given, receives the probabilities [batch, heads, T, S].
torch::Tensor scaled_dot_product_attention(const torch::Tensor& q, const torch::Tensor& k,
                                           const torch::Tensor& v, const torch::Tensor& mask,
                                           double scale, torch::Tensor* weights = nullptr);

/// The same with a described mask: float32 or bfloat16 on the CPU without `weights` runs the
/// fused kernel (models/internal/fused_attention.h), which never builds the [T, S] scores.
torch::Tensor scaled_dot_product_attention(const torch::Tensor& q, const torch::Tensor& k,
                                           const torch::Tensor& v, const AttentionMask& mask,
                                           double scale, torch::Tensor* weights = nullptr);

/// Keys and values of every position fed so far, in buffers [batch, kv_heads, capacity, D]:
/// append() writes in place and returns views, so a decoding step copies only its own keys.
/// The capacity is fixed unless `max_length` exceeds it: then the buffers double when full, up
/// to max_length positions (Whisper's decoder, whose utterance length is not known ahead).
class KVCache {
 public:
  KVCache() = default;
  KVCache(int64_t batch, int64_t kv_heads, int64_t capacity, int64_t head_dim,
          const torch::TensorOptions& options, int64_t max_length = 0);
  /// k, v: [batch, kv_heads, T, D] -> the cached keys and values [batch, kv_heads, length, D]
  /// including them. alto::InvalidArgument when they do not fit the capacity or max_length.
  std::pair<torch::Tensor, torch::Tensor> append(const torch::Tensor& k, const torch::Tensor& v);
  /// Keeps batch rows `rows` (int64 [n] on the cache's device) in that order: beam search
  /// reorders, drops and duplicates hypotheses with it. The caller checks the indices.
  void select_rows(const torch::Tensor& rows);
  int64_t batch() const { return key_.defined() ? key_.size(0) : 0; }
  int64_t length() const { return length_; }
  int64_t capacity() const { return key_.defined() ? key_.size(2) : 0; }
  void reset() { length_ = 0; }

 private:
  torch::Tensor key_, value_;
  int64_t length_ = 0;
  int64_t max_length_ = 0;
};

/// Where each row of a batch stands in a ring of `window` key slots: the position each slot
/// holds and each row's next position. moshi's RingKVCache keeps one offset for the whole batch;
/// here every row has its own, so that batched streams join, wait and leave independently. One
/// per model, shared by the RingKVCaches of its layers; the KV memory is bounded by the window
/// however long a stream runs.
class RingPositions {
 public:
  /// The plan of one call: the queries' positions, which rows and slots it writes, and the
  /// additive mask [batch, 1, T, keys] over the keys RingKVCache::update returns.
  struct Step {
    torch::Tensor positions;  // int64 [batch, T]
    torch::Tensor rows;       // int64 [n]: the rows that advance
    torch::Tensor mask;
    int64_t time = 0;
  };

  RingPositions() = default;
  RingPositions(int64_t batch, int64_t window, torch::Device device);

  /// `time` new positions for every row; or, with `advancing` (bool [batch]) and time 1, one
  /// position for those rows only (the others' outputs are to be ignored, their state is kept).
  /// A query at p sees the keys at p - window < k <= p, as transformers' sliding window.
  Step plan(int64_t time, const torch::Tensor& advancing, torch::ScalarType dtype) const;
  /// Records the step's positions once every layer has run it.
  void commit(const Step& step);
  /// Forgets every row, or one row.
  void reset();
  void reset_row(int64_t row);

  int64_t window() const { return window_; }
  int64_t batch() const { return next_.defined() ? next_.size(0) : 0; }
  /// int64 [batch]: the position each row's next token takes (tokens fed so far).
  const torch::Tensor& next() const { return next_; }

 private:
  int64_t window_ = 0;
  torch::Tensor slots_;  // int64 [batch, window]: the position a slot holds, -1 when empty
  torch::Tensor next_;   // int64 [batch]
};

/// One layer's keys and values of a RingPositions ring, in buffers [batch, kv_heads, window, D]
/// allocated once, in the dtype they were made with: keys and values are converted on the way in
/// and queries for the product (a float32 ring under bfloat16 weights attends at libtorch's
/// float32 speed).
class RingKVCache {
 public:
  RingKVCache() = default;
  RingKVCache(int64_t batch, int64_t kv_heads, int64_t window, int64_t head_dim,
              const torch::TensorOptions& options);
  /// k, v: [batch, kv_heads, T, D] at the step's positions -> the keys and values the step's
  /// mask covers. One position writes its slot first and attends over the ring in place; more
  /// attend over the ring and themselves, then keep their newest `window` in the ring.
  std::pair<torch::Tensor, torch::Tensor> update(const torch::Tensor& k, const torch::Tensor& v,
                                                 const RingPositions::Step& step);

 private:
  torch::Tensor key_, value_;
};

struct SelfAttentionOptions {
  int64_t hidden_size = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  /// Never derived from hidden_size / heads when the config gives it (Mistral, Voxtral).
  int64_t head_dim = 0;
  bool qkv_bias = false;  // Qwen2: true
  bool output_bias = false;
  /// The checkpoint's name of the output projection ("o_proj"; "out_proj" elsewhere).
  std::string output_name = "o_proj";

  void validate() const;
};

/// q_proj, k_proj, v_proj and the output projection under the checkpoint's names.
class SelfAttentionImpl : public torch::nn::Module {
 public:
  SelfAttentionImpl(const SelfAttentionOptions& options,
                    const torch::TensorOptions& tensor_options);

  /// x: [batch, T, hidden_size]; cos/sin from RotaryEmbedding::cos_sin for the T positions
  /// ([T, D] or [batch, T, D]); `mask` over the keys, which with `cache` are the cached ones
  /// followed by these T. -> [batch, T, hidden_size].
  torch::Tensor forward(const torch::Tensor& x, const RotaryEmbedding& rope,
                        const torch::Tensor& cos, const torch::Tensor& sin,
                        const AttentionMask& mask, KVCache* cache = nullptr,
                        torch::Tensor* weights = nullptr) const;

  /// As forward, the keys those of a sliding-window ring (`step` planned by its RingPositions).
  torch::Tensor forward(const torch::Tensor& x, const RotaryEmbedding& rope,
                        const torch::Tensor& cos, const torch::Tensor& sin, RingKVCache& cache,
                        const RingPositions::Step& step) const;

  const SelfAttentionOptions& options() const { return options_; }

  Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, output_proj{nullptr};

 private:
  struct Projected {
    torch::Tensor q, k, v;  // [batch, heads or kv_heads, T, head_dim], q and k rotated
  };
  Projected project(const torch::Tensor& x, const RotaryEmbedding& rope, const torch::Tensor& cos,
                    const torch::Tensor& sin) const;
  // attended [batch, heads, T, head_dim] -> the output projection [batch, T, hidden_size].
  torch::Tensor project_out(const torch::Tensor& attended) const;
  double scale() const { return 1.0 / std::sqrt(static_cast<double>(options_.head_dim)); }

  SelfAttentionOptions options_;
};
TORCH_MODULE(SelfAttention);

}  // namespace alto::models::blocks
