#pragma once
// Mimi's transformer (transformers' MimiTransformerModel, moshi's StreamingTransformer): pre-norm
// layers with RoPE self-attention, a GELU MLP and layer scale on both residual branches.
// Attention is causal with a sliding window: the key at position k is visible from the query at
// position q iff 0 <= q - k < sliding_window (moshi's `context`, current transformers' mask;
// transformers v4.45 dropped the window and, on its eager path, causality). Parameters carry the
// checkpoint's names (layers.N.self_attn.q_proj, layers.N.mlp.fc1, ...).
//
// forward() runs a whole sequence; step() runs consecutive pieces of one against a
// TransformerKVCache, whose buffers hold only the keys/values the window can still reach.

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <string>
#include <vector>

#include "alto/models/blocks/attention.h"
#include "alto/models/blocks/basic.h"
#include "alto/models/blocks/rope.h"

namespace alto::models::blocks {

/// Field names are MimiConfig's.
struct StreamingTransformerOptions {
  int64_t hidden_size = 512;
  int64_t num_hidden_layers = 8;
  int64_t num_attention_heads = 8;
  int64_t num_key_value_heads = 8;
  int64_t head_dim = 64;
  int64_t intermediate_size = 2048;
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  int64_t sliding_window = 250;
  bool attention_bias = false;
  Activation hidden_act = Activation::kGelu;

  /// Throws alto::InvalidArgument naming the field.
  void validate() const;
  std::string to_string() const;
};

/// What the keys of earlier step() calls look like to a new query.
enum class WindowCache {
  /// Exactly the sliding window: step() over any split of a sequence equals forward() on it.
  kExact,
  /// moshi's RingKVCache of sliding_window slots, written before attending: once full, the
  /// first queries of a multi-position step lose the oldest keys of their window, overwritten by
  /// the step's later positions. Reproduces moshi's streaming output (not chunking-invariant).
  kMoshiRing,
};

/// Streaming state of a StreamingTransformer: per layer the rotated keys and values of the
/// newest positions, in preallocated buffers [batch, kv_heads, capacity, head_dim].
struct TransformerKVCache {
  struct Layer {
    torch::Tensor key, value;
  };
  std::vector<Layer> layers;
  WindowCache mode = WindowCache::kExact;
  /// Positions fed so far: the RoPE position of the next one.
  int64_t position = 0;
  /// Positions held in the buffers (the newest `stored` ones).
  int64_t stored = 0;

  /// Forgets every position; the buffers are kept.
  void reset();
};

/// torch.nn.Parameter `scale` [dim] multiplying a residual branch (MimiLayerScale).
class LayerScaleImpl : public torch::nn::Module {
 public:
  LayerScaleImpl(int64_t dim, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x) const { return x * scale; }

  torch::Tensor scale;
};
TORCH_MODULE(LayerScale);

class StreamingTransformerImpl : public torch::nn::Module {
 public:
  StreamingTransformerImpl(const StreamingTransformerOptions& options,
                           const torch::TensorOptions& tensor_options);

  /// Fuses each layer's q/k/v projections into one GEMM. Call once after CheckpointBinder has
  /// filled the module; forward and step throw alto::InvalidArgument before.
  void prepare();

  /// x: [batch, time, hidden_size], positions 0 .. time-1 -> [batch, time, hidden_size].
  torch::Tensor forward(const torch::Tensor& x) const;

  /// An empty cache for `batch` streams on this module's device and dtype.
  TransformerKVCache init_cache(int64_t batch, WindowCache mode = WindowCache::kExact) const;
  /// x: [batch, time, hidden_size], the positions after those `cache` has seen (time may be 0).
  torch::Tensor step(const torch::Tensor& x, TransformerKVCache& cache) const;

  const StreamingTransformerOptions& options() const { return options_; }

  torch::nn::ModuleList layers;

 private:
  torch::Tensor run(const torch::Tensor& x, TransformerKVCache* cache) const;
  /// Layer l of a cached step of at most kMaxFewRows rows (float32 CPU), in place on x
  /// [batch, time, hidden_size] contiguous; cos/sin [time, head_dim] float32; the slots and
  /// positions as run() computes them.
  void step_layer_few_rows(size_t l, torch::Tensor& x, const torch::Tensor& cos,
                           const torch::Tensor& sin, TransformerKVCache& cache, int64_t write_at,
                           int64_t first_visible, int64_t start) const;

  StreamingTransformerOptions options_;
  torch::TensorOptions tensor_options_;
  RotaryEmbedding rope_;
  std::vector<torch::Tensor> qkv_weights_, qkv_biases_;  // per layer, from prepare()
};
TORCH_MODULE(StreamingTransformer);

}  // namespace alto::models::blocks
