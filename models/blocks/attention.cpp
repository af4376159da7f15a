#include "alto/models/blocks/attention.h"

#include <torch/torch.h>

#include <limits>

#include "alto/core/error.h"

namespace alto::models::blocks {

torch::Tensor attention_mask(int64_t queries, int64_t keys, int64_t query_offset,
                             const AttentionMaskOptions& options, const torch::Tensor& key_padding,
                             torch::ScalarType dtype, torch::Device device) {
  ALTO_CHECK(queries >= 0 && keys >= 0 && query_offset >= 0,
             "attention_mask: queries, keys and query_offset must be >= 0, got ", queries, ", ",
             keys, ", ", query_offset);
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  const torch::Tensor q = torch::arange(query_offset, query_offset + queries, i64).unsqueeze(1);
  const torch::Tensor k = torch::arange(keys, i64).unsqueeze(0);
  torch::Tensor visible = torch::ones({queries, keys}, i64.dtype(torch::kBool));
  if (options.causal) visible = visible.logical_and(k <= q);
  if (options.sliding_window > 0) visible = visible.logical_and(q - k < options.sliding_window);
  visible = visible.unsqueeze(0).unsqueeze(0);  // [1, 1, T, S]
  if (key_padding.defined()) {
    ALTO_CHECK(key_padding.dim() == 2 && key_padding.size(1) == keys,
               "attention_mask: key_padding must be [batch, ", keys, "], got ",
               key_padding.sizes());
    visible =
        visible.logical_and(key_padding.to(device).to(torch::kBool).unsqueeze(1).unsqueeze(1));
    // A query with no visible key (left padding) attends everywhere instead of producing NaN.
    const torch::Tensor empty_row = visible.logical_not().all(-1, /*keepdim=*/true);
    visible = visible.logical_or(empty_row);
  }
  const double lowest = dtype == torch::kFloat64    ? std::numeric_limits<double>::lowest()
                        : dtype == torch::kFloat16  ? -65504.0
                        : dtype == torch::kBFloat16 ? -3.3895313892515355e38
                                                    : std::numeric_limits<float>::lowest();
  return torch::zeros(visible.sizes(), torch::TensorOptions().dtype(dtype).device(device))
      .masked_fill(visible.logical_not(), lowest);
}

torch::Tensor scaled_dot_product_attention(const torch::Tensor& q, const torch::Tensor& k,
                                           const torch::Tensor& v, const torch::Tensor& mask,
                                           double scale, torch::Tensor* weights) {
  ALTO_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4 && k.sizes() == v.sizes() &&
                 q.size(0) == k.size(0) && q.size(3) == k.size(3) && k.size(1) > 0 &&
                 q.size(1) % k.size(1) == 0,
             "scaled_dot_product_attention: q must be [batch, heads, T, D] and k, v [batch, "
             "kv_heads, S, D] with heads a multiple of kv_heads, got ",
             q.sizes(), ", ", k.sizes(), ", ", v.sizes());
  const int64_t batch = q.size(0), heads = q.size(1), kv_heads = k.size(1);
  const int64_t group = heads / kv_heads, time = q.size(2), dim = q.size(3);
  // Grouping the query heads of one kv head as extra rows computes repeat_kv without copying k/v.
  const torch::Tensor grouped = q.reshape({batch, kv_heads, group * time, dim});
  torch::Tensor scores =
      torch::matmul(grouped, k.transpose(-1, -2)).view({batch, heads, time, k.size(2)});
  scores = scores.to(torch::kFloat32) * scale;
  if (mask.defined()) scores = scores + mask.to(torch::kFloat32);
  const torch::Tensor probs = torch::softmax(scores, -1).to(q.scalar_type());
  if (weights) *weights = probs;
  return torch::matmul(probs.reshape({batch, kv_heads, group * time, k.size(2)}), v)
      .view({batch, heads, time, dim});
}

KVCache::KVCache(int64_t batch, int64_t kv_heads, int64_t capacity, int64_t head_dim,
                 const torch::TensorOptions& options)
    : key_(torch::empty({batch, kv_heads, capacity, head_dim}, options)),
      value_(torch::empty({batch, kv_heads, capacity, head_dim}, options)) {}

std::pair<torch::Tensor, torch::Tensor> KVCache::append(const torch::Tensor& k,
                                                        const torch::Tensor& v) {
  ALTO_CHECK(key_.defined() && k.dim() == 4 && k.sizes() == v.sizes() &&
                 k.size(0) == key_.size(0) && k.size(1) == key_.size(1) &&
                 k.size(3) == key_.size(3),
             "KVCache::append: keys and values must be [", key_.size(0), ", ", key_.size(1),
             ", T, ", key_.size(3), "], got ", k.sizes(), " and ", v.sizes());
  const int64_t t = k.size(2);
  ALTO_CHECK(length_ + t <= capacity(), "KVCache::append: ", length_, " cached + ", t,
             " new positions exceed the capacity of ", capacity());
  key_.narrow(2, length_, t).copy_(k);
  value_.narrow(2, length_, t).copy_(v);
  length_ += t;
  return {key_.narrow(2, 0, length_), value_.narrow(2, 0, length_)};
}

void SelfAttentionOptions::validate() const {
  ALTO_CHECK(hidden_size > 0 && num_attention_heads > 0 && num_key_value_heads > 0 && head_dim > 0,
             "SelfAttentionOptions: hidden_size, heads and head_dim must be > 0, got ", hidden_size,
             ", ", num_attention_heads, ", ", num_key_value_heads, ", ", head_dim);
  ALTO_CHECK(num_attention_heads % num_key_value_heads == 0,
             "num_key_value_heads must divide num_attention_heads, got ", num_attention_heads,
             " and ", num_key_value_heads);
}

SelfAttentionImpl::SelfAttentionImpl(const SelfAttentionOptions& o,
                                     const torch::TensorOptions& tensor_options)
    : options_(o) {
  o.validate();
  const int64_t q_width = o.num_attention_heads * o.head_dim;
  const int64_t kv_width = o.num_key_value_heads * o.head_dim;
  q_proj = register_module("q_proj", Linear(o.hidden_size, q_width, o.qkv_bias, tensor_options));
  k_proj = register_module("k_proj", Linear(o.hidden_size, kv_width, o.qkv_bias, tensor_options));
  v_proj = register_module("v_proj", Linear(o.hidden_size, kv_width, o.qkv_bias, tensor_options));
  output_proj =
      register_module(o.output_name, Linear(q_width, o.hidden_size, o.output_bias, tensor_options));
}

torch::Tensor SelfAttentionImpl::forward(const torch::Tensor& x, const RotaryEmbedding& rope,
                                         const torch::Tensor& cos, const torch::Tensor& sin,
                                         const torch::Tensor& mask, KVCache* cache,
                                         torch::Tensor* weights) const {
  const SelfAttentionOptions& o = options_;
  ALTO_CHECK(x.dim() == 3 && x.size(2) == o.hidden_size, "SelfAttention: x must be [batch, T, ",
             o.hidden_size, "], got ", x.sizes());
  const int64_t batch = x.size(0), time = x.size(1);
  auto heads = [&](const torch::Tensor& t, int64_t n) {
    return t.view({batch, time, n, o.head_dim}).transpose(1, 2);
  };
  torch::Tensor q = rope.apply(heads(q_proj->forward(x), o.num_attention_heads), cos, sin);
  torch::Tensor k = rope.apply(heads(k_proj->forward(x), o.num_key_value_heads), cos, sin);
  torch::Tensor v = heads(v_proj->forward(x), o.num_key_value_heads);
  if (cache) std::tie(k, v) = cache->append(k, v);
  const torch::Tensor attended = scaled_dot_product_attention(
      q, k, v, mask, 1.0 / std::sqrt(static_cast<double>(o.head_dim)), weights);
  return output_proj->forward(attended.transpose(1, 2).reshape({batch, time, -1}));
}

}  // namespace alto::models::blocks
