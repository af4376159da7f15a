#include "alto/models/layers/streaming_transformer.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "alto/core/error.h"

namespace alto::models::layers {

namespace {

// Positions a cache buffer holds beyond the window before it compacts: a compaction copies
// sliding_window - 1 positions, so with 2 positions per step (one Mimi frame) it runs once
// every 64 steps.
constexpr int64_t kCacheSlack = 128;

class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const StreamingTransformerOptions& o, const torch::TensorOptions& t)
      : q_proj(register_module("q_proj", Linear(o.hidden_size, o.num_attention_heads * o.head_dim,
                                                o.attention_bias, t))),
        k_proj(register_module("k_proj", Linear(o.hidden_size,
                                                o.num_key_value_heads * o.head_dim,
                                                o.attention_bias, t))),
        v_proj(register_module("v_proj", Linear(o.hidden_size,
                                                o.num_key_value_heads * o.head_dim,
                                                o.attention_bias, t))),
        o_proj(register_module("o_proj", Linear(o.num_attention_heads * o.head_dim,
                                                o.hidden_size, o.attention_bias, t))) {}

  Linear q_proj, k_proj, v_proj, o_proj;
};
TORCH_MODULE(Attention);

class MlpImpl : public torch::nn::Module {
 public:
  MlpImpl(const StreamingTransformerOptions& o, const torch::TensorOptions& t)
      : fc1(register_module("fc1", Linear(o.hidden_size, o.intermediate_size, false, t))),
        fc2(register_module("fc2", Linear(o.intermediate_size, o.hidden_size, false, t))) {}

  Linear fc1, fc2;
};
TORCH_MODULE(Mlp);

class TransformerLayerImpl : public torch::nn::Module {
 public:
  TransformerLayerImpl(const StreamingTransformerOptions& o, const torch::TensorOptions& t)
      : self_attn(register_module("self_attn", Attention(o, t))),
        mlp(register_module("mlp", Mlp(o, t))),
        input_layernorm(
            register_module("input_layernorm", LayerNorm(o.hidden_size, o.norm_eps, t))),
        post_attention_layernorm(register_module("post_attention_layernorm",
                                                 LayerNorm(o.hidden_size, o.norm_eps, t))),
        self_attn_layer_scale(
            register_module("self_attn_layer_scale", LayerScale(o.hidden_size, t))),
        mlp_layer_scale(register_module("mlp_layer_scale", LayerScale(o.hidden_size, t))) {}

  Attention self_attn;
  Mlp mlp;
  LayerNorm input_layernorm, post_attention_layernorm;
  LayerScale self_attn_layer_scale, mlp_layer_scale;
};
TORCH_MODULE(TransformerLayer);

// transformers' rotate_half convention (the Hub weights' q/k rows are permuted for it):
// x * cos + [-x2, x1] * sin, with cos/sin [time, head_dim] broadcast over batch and heads.
torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  const torch::Tensor rotated = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos + rotated * sin;
}

// [batch, time, heads * head_dim] -> [batch, heads, time, head_dim]
torch::Tensor split_heads(const torch::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, -1}).transpose(1, 2);
}

}  // namespace

void StreamingTransformerOptions::validate() const {
  for (const auto& [name, value] :
       {std::pair{"hidden_size", hidden_size}, {"num_hidden_layers", num_hidden_layers},
        {"num_attention_heads", num_attention_heads},
        {"num_key_value_heads", num_key_value_heads}, {"head_dim", head_dim},
        {"intermediate_size", intermediate_size}, {"sliding_window", sliding_window}})
    ALTO_CHECK(value > 0, "StreamingTransformerOptions.", name, " must be positive, got ", value);
  ALTO_CHECK(head_dim % 2 == 0, "StreamingTransformerOptions.head_dim must be even for RoPE, got ",
             head_dim);
  ALTO_CHECK(num_attention_heads % num_key_value_heads == 0,
             "StreamingTransformerOptions.num_attention_heads (", num_attention_heads,
             ") must be a multiple of num_key_value_heads (", num_key_value_heads, ")");
  ALTO_CHECK(norm_eps > 0, "StreamingTransformerOptions.norm_eps must be positive, got ",
             norm_eps);
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
  scale = register_parameter("scale", torch::empty({dim}, options), /*requires_grad=*/false);
}

StreamingTransformerImpl::StreamingTransformerImpl(const StreamingTransformerOptions& options,
                                                   const torch::TensorOptions& tensor_options)
    : layers(register_module("layers", torch::nn::ModuleList())),
      options_(options),
      tensor_options_(tensor_options) {
  options_.validate();
  for (int64_t i = 0; i < options_.num_hidden_layers; ++i)
    layers->push_back(TransformerLayer(options_, tensor_options_));
  // transformers' default RoPE init, in float32 as it computes it:
  // 1 / theta ^ (arange(0, head_dim, 2) / head_dim).
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(tensor_options.device());
  inv_freq_ = 1.0 / torch::pow(torch::tensor(options_.rope_theta, f32),
                               torch::arange(0, options_.head_dim, 2, f32) /
                                   static_cast<double>(options_.head_dim));
}

void StreamingTransformerImpl::prepare() {
  qkv_weights_.clear();
  qkv_biases_.clear();
  for (size_t l = 0; l < layers->size(); ++l) {
    const AttentionImpl& attn = *layers->at<TransformerLayerImpl>(l).self_attn;
    qkv_weights_.push_back(
        torch::cat({attn.q_proj->weight, attn.k_proj->weight, attn.v_proj->weight}));
    qkv_biases_.push_back(options_.attention_bias ? torch::cat({attn.q_proj->bias,
                                                                attn.k_proj->bias,
                                                                attn.v_proj->bias})
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
            *buffer = torch::zeros({batch, o.num_key_value_heads, capacity, o.head_dim},
                                   tensor_options_);
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
  const torch::Tensor positions =
      torch::arange(start, start + time, inv_freq_.options()).unsqueeze(1);
  const torch::Tensor angles = torch::cat({positions * inv_freq_, positions * inv_freq_}, -1);
  const torch::Tensor cos = angles.cos().to(tensor_options_.dtype());
  const torch::Tensor sin = angles.sin().to(tensor_options_.dtype());

  // Band mask over (query, key) positions; a single query needs none: the visible keys computed
  // above are exactly its window.
  torch::Tensor mask;
  if (time > 1) {
    const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(input.device());
    const torch::Tensor delta = torch::arange(start, start + time, i64).unsqueeze(1) -
                                torch::arange(first_visible, start + time, i64).unsqueeze(0);
    const torch::Tensor allowed = delta.ge(0).logical_and(delta.lt(window));
    mask = torch::zeros({time, keys}, tensor_options_)
               .masked_fill_(allowed.logical_not(), -std::numeric_limits<float>::infinity());
  }
  const double scaling = 1.0 / std::sqrt(static_cast<double>(o.head_dim));

  torch::Tensor x = input;
  for (size_t l = 0; l < layers->size(); ++l) {
    const auto& layer = layers->at<TransformerLayerImpl>(l);
    const AttentionImpl& attn = *layer.self_attn;
    const torch::Tensor qkv = torch::linear(layer.input_layernorm->forward(x), qkv_weights_[l],
                                            qkv_biases_[l]);
    const int64_t q_width = o.num_attention_heads * o.head_dim;
    const int64_t kv_width = o.num_key_value_heads * o.head_dim;
    const torch::Tensor q =
        rotate(split_heads(qkv.narrow(2, 0, q_width), o.num_attention_heads), cos, sin);
    torch::Tensor k = rotate(split_heads(qkv.narrow(2, q_width, kv_width), o.num_key_value_heads),
                             cos, sin);
    torch::Tensor v = split_heads(qkv.narrow(2, q_width + kv_width, kv_width),
                                  o.num_key_value_heads);
    if (cache) {
      TransformerKVCache::Layer& buffers = cache->layers[l];
      buffers.key.narrow(2, write_at, time).copy_(k);
      buffers.value.narrow(2, write_at, time).copy_(v);
      const int64_t from = write_at + time - keys;
      k = buffers.key.narrow(2, from, keys);
      v = buffers.value.narrow(2, from, keys);
    }
    if (groups > 1) {
      k = k.repeat_interleave(groups, 1);
      v = v.repeat_interleave(groups, 1);
    }
    // scaled_dot_product_attention's reference order: (q k^T) * scale + mask, softmax, @ v;
    // the softmax in float32 as transformers upcasts it.
    torch::Tensor scores = torch::matmul(q, k.transpose(-1, -2)).mul_(scaling);
    if (mask.defined()) scores.add_(mask);
    const torch::Tensor probs =
        scores.scalar_type() == torch::kFloat32
            ? torch::softmax(scores, -1)
            : torch::softmax(scores, -1, torch::kFloat32).to(scores.scalar_type());
    const torch::Tensor attended =
        torch::matmul(probs, v).transpose(1, 2).reshape({batch, time, -1});
    x = x + layer.self_attn_layer_scale->forward(attn.o_proj->forward(attended));
    const torch::Tensor m = layer.post_attention_layernorm->forward(x);
    x = x + layer.mlp_layer_scale->forward(layer.mlp->fc2->forward(
                activate(layer.mlp->fc1->forward(m), o.hidden_act)));
  }
  if (cache) {
    cache->position += time;
    cache->stored += time;
  }
  return x;
}

}  // namespace alto::models::layers
