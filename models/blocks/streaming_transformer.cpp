#include "alto/models/blocks/streaming_transformer.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "alto/core/error.h"
#include "alto/models/blocks/basic.h"
#include "alto/models/blocks/mlp.h"
#include "alto/models/blocks/norm.h"
#include "alto/models/internal/few_rows.h"
#include "alto/models/internal/fused_attention.h"

namespace alto::models::blocks {

namespace {

// Positions a cache buffer holds beyond the window before it compacts: a compaction copies
// sliding_window - 1 positions, so with 2 positions per step (one Mimi frame) it runs once
// every 64 steps.
constexpr int64_t kCacheSlack = 128;

RotaryEmbeddingOptions rope_options(const StreamingTransformerOptions& o) {
  RotaryEmbeddingOptions r;
  r.head_dim = o.head_dim;
  r.rope_theta = o.rope_theta;
  return r;
}

SelfAttentionOptions attention_options(const StreamingTransformerOptions& o) {
  SelfAttentionOptions a;
  a.hidden_size = o.hidden_size;
  a.num_attention_heads = o.num_attention_heads;
  a.num_key_value_heads = o.num_key_value_heads;
  a.head_dim = o.head_dim;
  a.qkv_bias = a.output_bias = o.attention_bias;
  return a;
}

class TransformerLayerImpl : public torch::nn::Module {
 public:
  TransformerLayerImpl(const StreamingTransformerOptions& o, const torch::TensorOptions& t)
      : self_attn(register_module("self_attn", SelfAttention(attention_options(o), t))),
        mlp(register_module("mlp",
                            Mlp(o.hidden_size, o.intermediate_size, false, o.hidden_act, t))),
        input_layernorm(
            register_module("input_layernorm", LayerNorm(o.hidden_size, o.norm_eps, t))),
        post_attention_layernorm(
            register_module("post_attention_layernorm", LayerNorm(o.hidden_size, o.norm_eps, t))),
        self_attn_layer_scale(
            register_module("self_attn_layer_scale", LayerScale(o.hidden_size, t))),
        mlp_layer_scale(register_module("mlp_layer_scale", LayerScale(o.hidden_size, t))) {}

  SelfAttention self_attn;
  Mlp mlp;
  LayerNorm input_layernorm, post_attention_layernorm;
  LayerScale self_attn_layer_scale, mlp_layer_scale;
};
TORCH_MODULE(TransformerLayer);

// x [rows, dim] += branch [rows, dim] * scale [dim]: a residual branch through its LayerScale.
void add_scaled_rows(float* x, const torch::Tensor& branch, const torch::Tensor& scale) {
  const int64_t rows = branch.size(0), dim = branch.size(1);
  const float* b = branch.data_ptr<float>();
  const float* s = scale.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < dim; ++i) x[r * dim + i] += s[i] * b[r * dim + i];
}

// In place: transformers' rotate_half RoPE of one head vector at angles cos/sin [head_dim].
void rotate_head(float* v, int64_t head_dim, const float* cos, const float* sin) {
  const int64_t half = head_dim / 2;
  for (int64_t j = 0; j < half; ++j) {
    const float a = v[j], b = v[j + half];
    v[j] = a * cos[j] - b * sin[j];
    v[j + half] = b * cos[j + half] + a * sin[j + half];
  }
}

// [batch, time, heads * head_dim] -> [batch, heads, time, head_dim]
torch::Tensor split_heads(const torch::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, -1}).transpose(1, 2);
}

}  // namespace

void StreamingTransformerOptions::validate() const {
  for (const auto& [name, value] : {std::pair{"hidden_size", hidden_size},
                                    {"num_hidden_layers", num_hidden_layers},
                                    {"num_attention_heads", num_attention_heads},
                                    {"num_key_value_heads", num_key_value_heads},
                                    {"head_dim", head_dim},
                                    {"intermediate_size", intermediate_size},
                                    {"sliding_window", sliding_window}})
    ALTO_CHECK(value > 0, "StreamingTransformerOptions.", name, " must be positive, got ", value);
  ALTO_CHECK(head_dim % 2 == 0, "StreamingTransformerOptions.head_dim must be even for RoPE, got ",
             head_dim);
  ALTO_CHECK(num_attention_heads % num_key_value_heads == 0,
             "StreamingTransformerOptions.num_attention_heads (", num_attention_heads,
             ") must be a multiple of num_key_value_heads (", num_key_value_heads, ")");
  ALTO_CHECK(norm_eps > 0, "StreamingTransformerOptions.norm_eps must be positive, got ", norm_eps);
  ALTO_CHECK(rope_theta > 0, "StreamingTransformerOptions.rope_theta must be positive, got ",
             rope_theta);
}

std::string StreamingTransformerOptions::to_string() const {
  std::ostringstream s;
  s << "StreamingTransformerOptions(hidden_size=" << hidden_size
    << ", num_hidden_layers=" << num_hidden_layers
    << ", num_attention_heads=" << num_attention_heads
    << ", num_key_value_heads=" << num_key_value_heads << ", head_dim=" << head_dim
    << ", intermediate_size=" << intermediate_size << ", sliding_window=" << sliding_window
    << ", rope_theta=" << rope_theta << ")";
  return s.str();
}

void TransformerKVCache::reset() {
  position = 0;
  stored = 0;
}

LayerScaleImpl::LayerScaleImpl(int64_t dim, const torch::TensorOptions& options) {
  scale = uninitialised_parameter(*this, "scale", {dim}, options);
}

StreamingTransformerImpl::StreamingTransformerImpl(const StreamingTransformerOptions& options,
                                                   const torch::TensorOptions& tensor_options)
    : layers(register_module("layers", torch::nn::ModuleList())),
      options_(options),
      tensor_options_(tensor_options),
      rope_(rope_options(options)) {
  options_.validate();
  for (int64_t i = 0; i < options_.num_hidden_layers; ++i)
    layers->push_back(TransformerLayer(options_, tensor_options_));
}

void StreamingTransformerImpl::prepare() {
  qkv_weights_.clear();
  qkv_biases_.clear();
  for (size_t l = 0; l < layers->size(); ++l) {
    const SelfAttentionImpl& attn = *layers->at<TransformerLayerImpl>(l).self_attn;
    qkv_weights_.push_back(
        torch::cat({attn.q_proj->weight, attn.k_proj->weight, attn.v_proj->weight}));
    qkv_biases_.push_back(
        options_.attention_bias
            ? torch::cat({attn.q_proj->bias, attn.k_proj->bias, attn.v_proj->bias})
            : torch::Tensor());
  }
}

torch::Tensor StreamingTransformerImpl::forward(const torch::Tensor& x) const {
  ALTO_CHECK(x.dim() == 3 && x.size(2) == options_.hidden_size,
             "StreamingTransformer::forward: x must be [batch, time, ", options_.hidden_size,
             "], got ", x.sizes());
  if (x.size(1) == 0) return x;
  return run(x, nullptr);
}

TransformerKVCache StreamingTransformerImpl::init_cache(int64_t batch, WindowCache mode) const {
  ALTO_CHECK(batch > 0, "StreamingTransformer::init_cache: batch must be positive, got ", batch);
  TransformerKVCache cache;
  cache.mode = mode;
  const int64_t capacity = options_.sliding_window + kCacheSlack;
  for (int64_t i = 0; i < options_.num_hidden_layers; ++i)
    cache.layers.push_back(
        {torch::zeros({batch, options_.num_key_value_heads, capacity, options_.head_dim},
                      tensor_options_),
         torch::zeros({batch, options_.num_key_value_heads, capacity, options_.head_dim},
                      tensor_options_)});
  return cache;
}

torch::Tensor StreamingTransformerImpl::step(const torch::Tensor& x,
                                             TransformerKVCache& cache) const {
  ALTO_CHECK(static_cast<int64_t>(cache.layers.size()) == options_.num_hidden_layers,
             "StreamingTransformer::step: the cache was not made by init_cache of this module");
  ALTO_CHECK(x.dim() == 3 && x.size(0) == cache.layers.front().key.size(0) &&
                 x.size(2) == options_.hidden_size,
             "StreamingTransformer::step: x must be [", cache.layers.front().key.size(0),
             ", time, ", options_.hidden_size, "], got ", x.sizes());
  if (x.size(1) == 0) return x;
  return run(x, &cache);
}

torch::Tensor StreamingTransformerImpl::run(const torch::Tensor& input,
                                            TransformerKVCache* cache) const {
  ALTO_CHECK(qkv_weights_.size() == layers->size(),
             "StreamingTransformer: prepare() was not called after loading");
  const StreamingTransformerOptions& o = options_;
  const int64_t batch = input.size(0), time = input.size(1);
  const int64_t start = cache ? cache->position : 0;  // position of input's first element
  const int64_t window = o.sliding_window;
  const int64_t groups = o.num_attention_heads / o.num_key_value_heads;

  // Where this call's keys go and which positions its queries may see.
  int64_t first_visible = 0;  // position of the first key attended to
  int64_t write_at = 0;       // buffer index of the new keys
  if (cache) {
    int64_t capacity = cache->layers.front().key.size(2);
    if (cache->stored + time > capacity) {
      const int64_t keep = std::min(cache->stored, window - 1);
      const int64_t needed = keep + time;
      const bool grow = needed > capacity;
      if (grow) capacity = needed + kCacheSlack;
      for (TransformerKVCache::Layer& layer : cache->layers) {
        for (torch::Tensor* buffer : {&layer.key, &layer.value}) {
          // clone: the kept tail may overlap its destination at the buffer's front.
          const torch::Tensor tail = buffer->narrow(2, cache->stored - keep, keep).clone();
          if (grow)
            *buffer =
                torch::zeros({batch, o.num_key_value_heads, capacity, o.head_dim}, tensor_options_);
          buffer->narrow(2, 0, keep).copy_(tail);
        }
      }
      cache->stored = keep;
    }
    write_at = cache->stored;
    const int64_t oldest_stored = start - cache->stored;
    const int64_t last = start + time - 1;
    first_visible = cache->mode == WindowCache::kMoshiRing
                        ? std::max(oldest_stored, last - window + 1)
                        : std::max(oldest_stored, start - window + 1);
  }
  const int64_t keys = start + time - first_visible;

  // RoPE angles in float32 as transformers computes them, then in the compute dtype.
  const auto [cos32, sin32] = rope_.cos_sin(
      torch::arange(start, start + time, torch::TensorOptions().dtype(torch::kInt64)));
  const torch::Tensor cos = cos32.to(tensor_options_.device(), tensor_options_.dtype());
  const torch::Tensor sin = sin32.to(tensor_options_.device(), tensor_options_.dtype());

  // A streaming step of a few positions runs each layer on raw rows: its dozens of small
  // tensor operations cost more than its weights take to read (layers/few_rows.h).
  const bool raw_rows = cache && input.is_cpu() && input.scalar_type() == torch::kFloat32 &&
                        batch * time <= kernels::kMaxFewRows;
  // float32 or bfloat16 on the CPU attends with the fused kernel, which skips the blocks outside
  // the band: memory and work grow linearly with the length, not with its square. Elsewhere, a
  // band mask over (query, key) positions; a single query needs none: the visible keys computed
  // above are exactly its window.
  const torch::ScalarType dtype = input.scalar_type();
  const bool fused = input.is_cpu() && tensor_options_.dtype() == dtype &&
                     (dtype == torch::kFloat32 || dtype == torch::kBFloat16);
  const kernels::AttentionBand band{true, window, start - first_visible};
  torch::Tensor mask;
  if (time > 1 && !raw_rows && !fused) {
    const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(input.device());
    const torch::Tensor delta = torch::arange(start, start + time, i64).unsqueeze(1) -
                                torch::arange(first_visible, start + time, i64).unsqueeze(0);
    const torch::Tensor allowed = delta.ge(0).logical_and(delta.lt(window));
    mask = torch::zeros({time, keys}, tensor_options_)
               .masked_fill_(allowed.logical_not(), -std::numeric_limits<float>::infinity());
  }
  const double scaling = 1.0 / std::sqrt(static_cast<double>(o.head_dim));

  if (raw_rows) {
    torch::Tensor x = input.contiguous().clone();
    const torch::Tensor cos_rows = cos.contiguous(), sin_rows = sin.contiguous();
    for (size_t l = 0; l < layers->size(); ++l)
      step_layer_few_rows(l, x, cos_rows, sin_rows, *cache, write_at, first_visible, start);
    cache->position += time;
    cache->stored += time;
    return x;
  }

  torch::Tensor x = input;
  for (size_t l = 0; l < layers->size(); ++l) {
    const auto& layer = layers->at<TransformerLayerImpl>(l);
    const SelfAttentionImpl& attn = *layer.self_attn;
    const torch::Tensor qkv =
        linear(layer.input_layernorm->forward(x), qkv_weights_[l], qkv_biases_[l]);
    const int64_t q_width = o.num_attention_heads * o.head_dim;
    const int64_t kv_width = o.num_key_value_heads * o.head_dim;
    const torch::Tensor q =
        rope_.apply(split_heads(qkv.narrow(2, 0, q_width), o.num_attention_heads), cos, sin);
    torch::Tensor k =
        rope_.apply(split_heads(qkv.narrow(2, q_width, kv_width), o.num_key_value_heads), cos, sin);
    torch::Tensor v =
        split_heads(qkv.narrow(2, q_width + kv_width, kv_width), o.num_key_value_heads);
    if (cache) {
      TransformerKVCache::Layer& buffers = cache->layers[l];
      buffers.key.narrow(2, write_at, time).copy_(k);
      buffers.value.narrow(2, write_at, time).copy_(v);
      const int64_t from = write_at + time - keys;
      k = buffers.key.narrow(2, from, keys);
      v = buffers.value.narrow(2, from, keys);
    }
    torch::Tensor attended;
    if (fused) {
      attended = kernels::fused_attention(q, k, v, scaling, band);
    } else {
      if (groups > 1) {
        k = k.repeat_interleave(groups, 1);
        v = v.repeat_interleave(groups, 1);
      }
      // scaled_dot_product_attention's reference order: (q k^T) * scale + mask, softmax, @ v;
      // the softmax in float32 as transformers upcasts it.
      torch::Tensor scores = torch::matmul(q, k.transpose(-1, -2)).mul_(scaling);
      if (mask.defined()) scores.add_(mask);
      attended =
          torch::matmul(scores.scalar_type() == torch::kFloat32
                            ? torch::softmax(scores, -1)
                            : torch::softmax(scores, -1, torch::kFloat32).to(scores.scalar_type()),
                        v);
    }
    attended = attended.transpose(1, 2).reshape({batch, time, -1});
    const NormedSum residual = layer.post_attention_layernorm->forward_sum(
        x, layer.self_attn_layer_scale->forward(
               linear(attended, attn.output_proj->weight, attn.output_proj->bias)));
    x = residual.sum;
    const torch::Tensor hidden =
        linear(residual.normed, layer.mlp->fc1->weight, layer.mlp->fc1->bias, o.hidden_act);
    x = x + layer.mlp_layer_scale->forward(
                linear(hidden, layer.mlp->fc2->weight, layer.mlp->fc2->bias));
  }
  if (cache) {
    cache->position += time;
    cache->stored += time;
  }
  return x;
}

void StreamingTransformerImpl::step_layer_few_rows(size_t l, torch::Tensor& x,
                                                   const torch::Tensor& cos,
                                                   const torch::Tensor& sin,
                                                   TransformerKVCache& cache, int64_t write_at,
                                                   int64_t first_visible, int64_t start) const {
  const StreamingTransformerOptions& o = options_;
  const auto& layer = layers->at<TransformerLayerImpl>(l);
  const int64_t batch = x.size(0), time = x.size(1), rows = batch * time, dim = o.hidden_size;
  const int64_t heads = o.num_attention_heads, kv_heads = o.num_key_value_heads;
  const int64_t head_dim = o.head_dim;
  const int64_t q_width = heads * head_dim, kv_width = kv_heads * head_dim;
  const int64_t keys = start + time - first_visible;
  const kernels::AttentionBand band{true, o.sliding_window, start - first_visible};
  const double scaling = 1.0 / std::sqrt(static_cast<double>(head_dim));
  float* xs = x.data_ptr<float>();

  // Attention: pre-norm, fused q/k/v, RoPE, the new keys/values into the cache buffers.
  const torch::Tensor qkv = kernels::linear_few_rows(
      layer.input_layernorm->forward(x.view({rows, dim})), qkv_weights_[l], qkv_biases_[l]);
  float* qkvs = qkv.data_ptr<float>();
  TransformerKVCache::Layer& buffers = cache.layers[l];
  const int64_t capacity = buffers.key.size(2);
  float* key_buffer = buffers.key.data_ptr<float>();
  float* value_buffer = buffers.value.data_ptr<float>();
  auto cached = [&](float* buffer, int64_t b, int64_t kv_head, int64_t slot) {
    return buffer + ((b * kv_heads + kv_head) * capacity + slot) * head_dim;
  };
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < time; ++t) {
      float* row = qkvs + (b * time + t) * (q_width + 2 * kv_width);
      const float* c = cos.data_ptr<float>() + t * head_dim;
      const float* s = sin.data_ptr<float>() + t * head_dim;
      for (int64_t head = 0; head < heads; ++head)
        rotate_head(row + head * head_dim, head_dim, c, s);
      for (int64_t head = 0; head < kv_heads; ++head) {
        float* k = row + q_width + head * head_dim;
        rotate_head(k, head_dim, c, s);
        std::copy(k, k + head_dim, cached(key_buffer, b, head, write_at + t));
        const float* v = row + q_width + kv_width + head * head_dim;
        std::copy(v, v + head_dim, cached(value_buffer, b, head, write_at + t));
      }
    }
  // The queries [batch, heads, time, head_dim] against the band's keys in the buffers, as run()
  // attends offline.
  const torch::Tensor q = qkv.view({batch, time, q_width + 2 * kv_width})
                              .narrow(2, 0, q_width)
                              .view({batch, time, heads, head_dim})
                              .transpose(1, 2);
  const int64_t from = write_at + time - keys;  // buffer slot of the band's first key
  const torch::Tensor attended =
      kernels::fused_attention(q, buffers.key.narrow(2, from, keys),
                               buffers.value.narrow(2, from, keys), scaling, band)
          .transpose(1, 2)
          .reshape({rows, q_width});
  const SelfAttentionImpl& attn = *layer.self_attn;
  const torch::Tensor projected =
      kernels::linear_few_rows(attended, attn.output_proj->weight, attn.output_proj->bias);
  add_scaled_rows(xs, projected, layer.self_attn_layer_scale->scale);

  // MLP: pre-norm, fc1, activation, fc2, layer scale.
  const torch::Tensor hidden = activate(
      kernels::linear_few_rows(layer.post_attention_layernorm->forward(x.view({rows, dim})),
                               layer.mlp->fc1->weight, layer.mlp->fc1->bias),
      o.hidden_act);
  const torch::Tensor mlp =
      kernels::linear_few_rows(hidden, layer.mlp->fc2->weight, layer.mlp->fc2->bias);
  add_scaled_rows(xs, mlp, layer.mlp_layer_scale->scale);
}

}  // namespace alto::models::blocks
