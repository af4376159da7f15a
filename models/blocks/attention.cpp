#include "alto/models/blocks/attention.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "alto/core/error.h"
#include "alto/models/internal/fused_attention.h"

namespace alto::models::blocks {

namespace {

// 0 where visible, the dtype's lowest where not.
torch::Tensor additive_mask(const torch::Tensor& visible, torch::ScalarType dtype) {
  const double lowest = dtype == torch::kFloat64    ? std::numeric_limits<double>::lowest()
                        : dtype == torch::kFloat16  ? -65504.0
                        : dtype == torch::kBFloat16 ? -3.3895313892515355e38
                                                    : std::numeric_limits<float>::lowest();
  return torch::zeros(visible.sizes(), torch::TensorOptions().dtype(dtype).device(visible.device()))
      .masked_fill(visible.logical_not(), lowest);
}

}  // namespace

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
  return additive_mask(visible, dtype);
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

torch::Tensor scaled_dot_product_attention(const torch::Tensor& q, const torch::Tensor& k,
                                           const torch::Tensor& v, const AttentionMask& mask,
                                           double scale, torch::Tensor* weights) {
  const AttentionMaskOptions& o = mask.options;
  if (!weights && kernels::fused_attention_fits(q, k, v))
    return kernels::fused_attention(q, k, v, scale, {o.causal, o.sliding_window, mask.query_offset},
                                    mask.key_padding);
  // No tensor where every query sees every key (a decoding step over real keys).
  const int64_t queries = q.size(2), keys = k.size(2);
  const bool all_visible =
      !mask.key_padding.defined() && (!o.causal || mask.query_offset >= keys - 1) &&
      (o.sliding_window == 0 || mask.query_offset + queries <= o.sliding_window);
  const torch::Tensor additive =
      all_visible ? torch::Tensor()
                  : attention_mask(queries, keys, mask.query_offset, o, mask.key_padding,
                                   q.scalar_type(), q.device());
  return scaled_dot_product_attention(q, k, v, additive, scale, weights);
}

KVCache::KVCache(int64_t batch, int64_t kv_heads, int64_t capacity, int64_t head_dim,
                 const torch::TensorOptions& options, int64_t max_length)
    : key_(torch::empty({batch, kv_heads, capacity, head_dim}, options)),
      value_(torch::empty({batch, kv_heads, capacity, head_dim}, options)),
      max_length_(std::max(max_length, capacity)) {}

std::pair<torch::Tensor, torch::Tensor> KVCache::append(const torch::Tensor& k,
                                                        const torch::Tensor& v) {
  ALTO_CHECK(key_.defined() && k.dim() == 4 && k.sizes() == v.sizes() &&
                 k.size(0) == key_.size(0) && k.size(1) == key_.size(1) &&
                 k.size(3) == key_.size(3),
             "KVCache::append: keys and values must be [", key_.size(0), ", ", key_.size(1),
             ", T, ", key_.size(3), "], got ", k.sizes(), " and ", v.sizes());
  const int64_t t = k.size(2);
  ALTO_CHECK(length_ + t <= max_length_, "KVCache::append: ", length_, " cached + ", t,
             " new positions exceed the capacity of ", max_length_);
  if (length_ + t > capacity()) {
    const int64_t grown = std::min(max_length_, std::max(2 * capacity(), length_ + t));
    auto regrown = [&](const torch::Tensor& buffer) {
      std::vector<int64_t> sizes = buffer.sizes().vec();
      sizes[2] = grown;
      torch::Tensor larger = torch::empty(sizes, buffer.options());
      larger.narrow(2, 0, length_).copy_(buffer.narrow(2, 0, length_));
      return larger;
    };
    key_ = regrown(key_);
    value_ = regrown(value_);
  }
  key_.narrow(2, length_, t).copy_(k);
  value_.narrow(2, length_, t).copy_(v);
  length_ += t;
  return {key_.narrow(2, 0, length_), value_.narrow(2, 0, length_)};
}

void KVCache::select_rows(const torch::Tensor& rows) {
  key_ = key_.index_select(0, rows);
  value_ = value_.index_select(0, rows);
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

SelfAttentionImpl::Projected SelfAttentionImpl::project(const torch::Tensor& x,
                                                        const RotaryEmbedding& rope,
                                                        const torch::Tensor& cos,
                                                        const torch::Tensor& sin) const {
  const SelfAttentionOptions& o = options_;
  ALTO_CHECK(x.dim() == 3 && x.size(2) == o.hidden_size, "SelfAttention: x must be [batch, T, ",
             o.hidden_size, "], got ", x.sizes());
  const int64_t batch = x.size(0), time = x.size(1);
  auto heads = [&](const torch::Tensor& t, int64_t n) {
    return t.view({batch, time, n, o.head_dim}).transpose(1, 2);
  };
  return {rope.apply(heads(q_proj->forward(x), o.num_attention_heads), cos, sin),
          rope.apply(heads(k_proj->forward(x), o.num_key_value_heads), cos, sin),
          heads(v_proj->forward(x), o.num_key_value_heads)};
}

torch::Tensor SelfAttentionImpl::project_out(const torch::Tensor& attended) const {
  return output_proj->forward(attended.to(output_proj->input_dtype())
                                  .transpose(1, 2)
                                  .reshape({attended.size(0), attended.size(2), -1}));
}

// Queries in the keys' dtype (a float32 ring under bfloat16 weights), the result back in the
// projection's.
torch::Tensor SelfAttentionImpl::forward(const torch::Tensor& x, const RotaryEmbedding& rope,
                                         const torch::Tensor& cos, const torch::Tensor& sin,
                                         const AttentionMask& mask, KVCache* cache,
                                         torch::Tensor* weights) const {
  const Projected p = project(x, rope, cos, sin);
  torch::Tensor k = p.k, v = p.v;
  if (cache) std::tie(k, v) = cache->append(k, v);
  return project_out(
      scaled_dot_product_attention(p.q.to(k.scalar_type()), k, v, mask, scale(), weights));
}

torch::Tensor SelfAttentionImpl::forward(const torch::Tensor& x, const RotaryEmbedding& rope,
                                         const torch::Tensor& cos, const torch::Tensor& sin,
                                         RingKVCache& cache,
                                         const RingPositions::Step& step) const {
  const Projected p = project(x, rope, cos, sin);
  const auto [k, v] = cache.update(p.k, p.v, step);
  return project_out(
      scaled_dot_product_attention(p.q.to(k.scalar_type()), k, v, step.mask, scale(), nullptr));
}

RingPositions::RingPositions(int64_t batch, int64_t window, torch::Device device)
    : window_(window) {
  ALTO_CHECK(batch > 0 && window > 0, "RingPositions: batch and window must be > 0, got ", batch,
             " and ", window);
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  slots_ = torch::full({batch, window}, -1, i64);
  next_ = torch::zeros({batch}, i64);
}

RingPositions::Step RingPositions::plan(int64_t time, const torch::Tensor& advancing,
                                        torch::ScalarType dtype) const {
  ALTO_CHECK(time >= 1, "RingPositions::plan: time must be >= 1, got ", time);
  ALTO_CHECK(
      !advancing.defined() || (time == 1 && advancing.dim() == 1 && advancing.size(0) == batch()),
      "RingPositions::plan: advancing must be bool [", batch(), "] with time 1");
  Step step;
  step.time = time;
  const auto i64 = next_.options();
  step.positions = next_.unsqueeze(1) + torch::arange(time, i64).unsqueeze(0);  // [B, T]
  step.rows = advancing.defined() ? advancing.to(next_.device()).nonzero().view({-1})
                                  : torch::arange(batch(), i64);
  torch::Tensor keys;  // positions of the keys the step sees, [B, S]
  if (time == 1) {
    keys = slots_.clone();
    keys.index_put_({step.rows, step.positions.index({step.rows, 0}) % window_},
                    step.positions.index({step.rows, 0}));
  } else {
    keys = torch::cat({slots_, step.positions}, 1);
  }
  const torch::Tensor q = step.positions.unsqueeze(2), k = keys.unsqueeze(1);  // [B, T, S]
  const torch::Tensor visible = (k >= 0).logical_and(k <= q).logical_and(q - k < window_);
  step.mask = additive_mask(visible.unsqueeze(1), dtype);
  return step;
}

void RingPositions::commit(const Step& step) {
  const int64_t kept = std::min(step.time, window_);
  const torch::Tensor newest = step.positions.index({step.rows}).narrow(1, step.time - kept, kept);
  const torch::Tensor rows = step.rows.unsqueeze(1).expand_as(newest);
  slots_.index_put_({rows, newest % window_}, newest);
  next_.index_put_({step.rows}, next_.index({step.rows}) + step.time);
}

void RingPositions::reset() {
  slots_.fill_(-1);
  next_.zero_();
}

void RingPositions::reset_row(int64_t row) {
  ALTO_CHECK(row >= 0 && row < batch(), "RingPositions::reset_row: row ", row,
             " does not exist (batch of ", batch(), ")");
  slots_[row].fill_(-1);
  next_[row].zero_();
}

RingKVCache::RingKVCache(int64_t batch, int64_t kv_heads, int64_t window, int64_t head_dim,
                         const torch::TensorOptions& options)
    : key_(torch::zeros({batch, kv_heads, window, head_dim}, options)),
      value_(torch::zeros({batch, kv_heads, window, head_dim}, options)) {}

std::pair<torch::Tensor, torch::Tensor> RingKVCache::update(const torch::Tensor& k,
                                                            const torch::Tensor& v,
                                                            const RingPositions::Step& step) {
  using torch::indexing::Slice;
  ALTO_CHECK(key_.defined() && k.dim() == 4 && k.sizes() == v.sizes() &&
                 k.size(0) == key_.size(0) && k.size(1) == key_.size(1) && k.size(2) == step.time &&
                 k.size(3) == key_.size(3),
             "RingKVCache::update: keys and values must be [", key_.size(0), ", ", key_.size(1),
             ", ", step.time, ", ", key_.size(3), "], got ", k.sizes(), " and ", v.sizes());
  const int64_t window = key_.size(2);
  const torch::Tensor k_in = k.to(key_.scalar_type()), v_in = v.to(value_.scalar_type());
  if (step.time == 1) {
    const torch::Tensor slots = step.positions.index({step.rows, 0}) % window;
    key_.index_put_({step.rows, Slice(), slots}, k_in.index({step.rows, Slice(), 0}));
    value_.index_put_({step.rows, Slice(), slots}, v_in.index({step.rows, Slice(), 0}));
    return {key_, value_};
  }
  std::pair<torch::Tensor, torch::Tensor> seen{torch::cat({key_, k_in}, 2),
                                               torch::cat({value_, v_in}, 2)};
  const int64_t kept = std::min(step.time, window);
  const torch::Tensor slots =
      (step.positions.narrow(1, step.time - kept, kept) % window)  // [B, kept]
          .view({k.size(0), 1, kept, 1})
          .expand({k.size(0), k.size(1), kept, k.size(3)});
  key_.scatter_(2, slots, k_in.narrow(2, step.time - kept, kept));
  value_.scatter_(2, slots, v_in.narrow(2, step.time - kept, kept));
  return seen;
}

}  // namespace alto::models::blocks
