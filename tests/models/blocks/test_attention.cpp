// models/blocks/attention against transformers' semantics on small shapes: GQA as repeat_kv,
// causal and sliding-window masks, key padding (a left-padded batch equals each row alone),
// and cached decoding equal to recomputing the whole prefix.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/core/error.h"
#include "alto/models/blocks/attention.h"

using namespace alto::models::blocks;  // NOLINT

namespace {

// transformers' eager_attention_forward: repeat_kv, scores, additive mask, softmax, values.
torch::Tensor eager(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                    const torch::Tensor& mask, double scale) {
  const int64_t group = q.size(1) / k.size(1);
  const torch::Tensor kr = k.repeat_interleave(group, 1), vr = v.repeat_interleave(group, 1);
  torch::Tensor scores = torch::matmul(q, kr.transpose(-1, -2)) * scale;
  if (mask.defined()) scores = scores + mask;
  return torch::matmul(torch::softmax(scores, -1), vr);
}

// The softmax runs in float32 (as transformers' eager attention upcasts it), so float64 inputs
// agree to float32's rounding: sums over rows of different lengths round differently.
constexpr double kTol = 1e-6;

SelfAttentionOptions gqa_options() {
  SelfAttentionOptions o;
  o.hidden_size = 24;
  o.num_attention_heads = 6;
  o.num_key_value_heads = 2;
  o.head_dim = 8;  // not hidden_size / heads: an explicit head_dim, as Mistral's
  o.qkv_bias = true;
  return o;
}

// RoPE over gqa_options()'s head_dim.
RotaryEmbedding head_rope() {
  RotaryEmbeddingOptions o;
  o.head_dim = 8;
  return RotaryEmbedding(o);
}

SelfAttention random_attention() {
  SelfAttention attention(gqa_options(), torch::TensorOptions().dtype(torch::kFloat64));
  for (auto& p : attention->parameters()) p.copy_(torch::randn(p.sizes(), p.options()) * 0.3);
  return attention;
}

}  // namespace

TEST_CASE("masks: causal, sliding window, key padding", "[models][blocks][attention]") {
  AttentionMaskOptions o;
  o.sliding_window = 3;
  const torch::Tensor m = attention_mask(4, 6, 2, o, {}, torch::kFloat32);
  REQUIRE(m.sizes() == torch::IntArrayRef({1, 1, 4, 6}));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      const int64_t q = i + 2;
      const bool visible = j <= q && q - j < 3;
      CHECK((m[0][0][i][j].item<float>() == 0) == visible);
    }
  o.causal = false;
  o.sliding_window = 0;
  const torch::Tensor padding = torch::tensor({{0, 0, 1, 1}, {1, 1, 1, 1}});
  const torch::Tensor p = attention_mask(4, 4, 0, o, padding, torch::kFloat32);
  CHECK(p.sizes() == torch::IntArrayRef({2, 1, 4, 4}));
  CHECK(p[0][0][1][0].item<float>() < -1e38);
  CHECK(p[0][0][1][2].item<float>() == 0);
  CHECK(p[1].eq(0).all().item<bool>());
  CHECK_THROWS_WITH(attention_mask(4, 4, 0, o, torch::ones({2, 3}), torch::kFloat32),
                    Catch::Contains("key_padding must be [batch, 4]"));
}

TEST_CASE("grouped-query attention equals repeat_kv attention", "[models][blocks][attention]") {
  torch::manual_seed(1);
  const torch::Tensor q = torch::randn({2, 6, 5, 8}, torch::kFloat64);
  const torch::Tensor k = torch::randn({2, 2, 7, 8}, torch::kFloat64);
  const torch::Tensor v = torch::randn({2, 2, 7, 8}, torch::kFloat64);
  const torch::Tensor mask = attention_mask(5, 7, 2, {}, {}, torch::kFloat64);
  torch::Tensor weights;
  const torch::Tensor out = scaled_dot_product_attention(q, k, v, mask, 0.35, &weights);
  CHECK(torch::allclose(out, eager(q, k, v, mask, 0.35), 1e-6, 1e-6));
  CHECK(weights.sizes() == torch::IntArrayRef({2, 6, 5, 7}));
  CHECK(torch::allclose(weights.sum(-1), torch::ones({2, 6, 5}, torch::kFloat64)));
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, k.narrow(1, 0, 1).repeat({1, 4, 1, 1}), v,
                                                 torch::Tensor(), 1.0),
                    Catch::Contains("heads a multiple of kv_heads"));
}

TEST_CASE("a described mask equals its tensor: fused in float32, explicit otherwise",
          "[models][blocks][attention]") {
  torch::manual_seed(4);
  const torch::Tensor q = torch::randn({2, 6, 5, 8}, torch::kFloat64);
  const torch::Tensor k = torch::randn({2, 2, 9, 8}, torch::kFloat64);
  const torch::Tensor v = torch::randn({2, 2, 9, 8}, torch::kFloat64);
  const torch::Tensor padding =
      torch::tensor({{0, 1, 1, 1, 1, 1, 1, 1, 1}, {0, 0, 0, 0, 0, 0, 0, 1, 1}});
  for (const AttentionMask& mask :
       {AttentionMask{{true, 0}, 4, {}}, AttentionMask{{true, 3}, 4, padding},
        AttentionMask{{false, 0}, 0, padding}, AttentionMask{{true, 0}, 8, {}}}) {
    INFO("causal " << mask.options.causal << " window " << mask.options.sliding_window << " offset "
                   << mask.query_offset << " padded " << mask.key_padding.defined());
    const torch::Tensor expected = eager(
        q, k, v,
        attention_mask(5, 9, mask.query_offset, mask.options, mask.key_padding, torch::kFloat64),
        0.35);
    CHECK(torch::allclose(scaled_dot_product_attention(q, k, v, mask, 0.35), expected, kTol, kTol));
    const torch::Tensor fused = scaled_dot_product_attention(
        q.to(torch::kFloat32), k.to(torch::kFloat32), v.to(torch::kFloat32), mask, 0.35);
    CHECK(torch::allclose(fused.to(torch::kFloat64), expected, 1e-5, 1e-5));
  }
}

TEST_CASE("a growing KV cache keeps every position through its doublings and row selections",
          "[models][blocks][attention]") {
  torch::manual_seed(5);
  const torch::Tensor k = torch::randn({3, 2, 11, 4}), v = torch::randn({3, 2, 11, 4});
  // Empty at first, at most 11 positions: 2 of prefill, then one at a time (capacities 2, 4, 8,
  // then 11, not 16).
  KVCache cache(3, 2, 0, 4, torch::TensorOptions(), 11);
  std::vector<int64_t> capacities;
  for (int64_t start = 0; start < 7;) {
    const int64_t n = start == 0 ? 2 : 1;
    auto [keys, values] = cache.append(k.narrow(2, start, n), v.narrow(2, start, n));
    start += n;
    CHECK(keys.equal(k.narrow(2, 0, start)));
    CHECK(values.equal(v.narrow(2, 0, start)));
    capacities.push_back(cache.capacity());
  }
  CHECK(capacities == std::vector<int64_t>{2, 4, 4, 8, 8, 8});

  // Beam search's reordering: row 2 twice and row 0, then growing past a doubling.
  const torch::Tensor rows = torch::tensor({2, 2, 0});
  cache.select_rows(rows);
  CHECK(cache.batch() == 3);
  CHECK(cache.length() == 7);
  const torch::Tensor k_rows = k.index_select(0, rows), v_rows = v.index_select(0, rows);
  auto [keys, values] = cache.append(k_rows.narrow(2, 7, 4), v_rows.narrow(2, 7, 4));
  CHECK(cache.capacity() == 11);
  CHECK(keys.equal(k_rows));
  CHECK(values.equal(v_rows));
  CHECK_THROWS_WITH(cache.append(k_rows.narrow(2, 0, 1), v_rows.narrow(2, 0, 1)),
                    Catch::Contains("11 cached + 1 new positions exceed the capacity of 11"));
}

TEST_CASE("cached decoding equals the whole prefix; left padding equals the row alone",
          "[models][blocks][attention]") {
  torch::manual_seed(2);
  torch::NoGradGuard no_grad;
  const SelfAttention attention = random_attention();
  const RotaryEmbedding rope = head_rope();
  const torch::Tensor x = torch::randn({1, 9, 24}, torch::kFloat64);
  AttentionMaskOptions window;
  window.sliding_window = 4;
  auto full_run = [&](const torch::Tensor& input) {
    const int64_t t = input.size(1);
    auto [c, s] = rope.cos_sin(torch::arange(t));
    return attention->forward(input, rope, c, s, AttentionMask{window, 0, {}});
  };
  const torch::Tensor full = full_run(x);
  // Step by step through a preallocated cache: 3 positions of prefill, then one at a time.
  KVCache cache(1, 2, 16, 8, torch::TensorOptions().dtype(torch::kFloat64));
  std::vector<torch::Tensor> parts;
  for (int64_t start = 0; start < 9;) {
    const int64_t n = start == 0 ? 3 : 1;
    auto [c, s] = rope.cos_sin(torch::arange(start, start + n));
    parts.push_back(attention->forward(x.narrow(1, start, n), rope, c, s,
                                       AttentionMask{window, start, {}}, &cache));
    start += n;
  }
  CHECK(cache.length() == 9);
  CHECK(torch::allclose(torch::cat(parts, 1), full, kTol, kTol));
  CHECK_THROWS_WITH(cache.append(torch::zeros({1, 2, 8, 8}, torch::kFloat64),
                                 torch::zeros({1, 2, 8, 8}, torch::kFloat64)),
                    Catch::Contains("exceed the capacity of 16"));

  // A batch of a 9-token row and a 6-token row left-padded by 3: each equals its row alone,
  // positions counted from the first real token as transformers' position_ids do.
  const torch::Tensor shorter = torch::randn({1, 6, 24}, torch::kFloat64);
  const torch::Tensor batch =
      torch::cat({x, torch::cat({torch::zeros({1, 3, 24}, torch::kFloat64), shorter}, 1)});
  const torch::Tensor padding =
      torch::tensor({{1, 1, 1, 1, 1, 1, 1, 1, 1}, {0, 0, 0, 1, 1, 1, 1, 1, 1}});
  const torch::Tensor positions = (padding.cumsum(1) - 1).clamp_min(0);
  auto [cb, sb] = rope.cos_sin(positions);
  const torch::Tensor out =
      attention->forward(batch, rope, cb, sb, AttentionMask{window, 0, padding});
  CHECK(torch::allclose(out[0], full[0], kTol, kTol));
  CHECK(torch::allclose(out[1].narrow(0, 3, 6), full_run(shorter)[0], kTol, kTol));
  CHECK(torch::isfinite(out).all().item<bool>());

  SelfAttentionOptions bad = gqa_options();
  bad.num_key_value_heads = 4;
  CHECK_THROWS_WITH(
      SelfAttention(bad, torch::TensorOptions()),
      Catch::Contains("num_key_value_heads must divide num_attention_heads, got 6 and 4"));
}

TEST_CASE("a sliding-window ring equals the windowed mask; rows advance independently",
          "[models][blocks][attention]") {
  torch::manual_seed(3);
  torch::NoGradGuard no_grad;
  const SelfAttention attention = random_attention();
  const RotaryEmbedding rope = head_rope();
  const int64_t window = 4, length = 13;
  const torch::Tensor x = torch::randn({2, length, 24}, torch::kFloat64);
  AttentionMaskOptions windowed;
  windowed.sliding_window = window;
  auto [c, s] = rope.cos_sin(torch::arange(length));
  const torch::Tensor full = attention->forward(x, rope, c, s, AttentionMask{windowed, 0, {}});
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);

  // Chunks of 3 (longer than nothing, shorter than the window), then single steps, then a
  // chunk of 6 (longer than the window): the ring holds 4 keys throughout.
  RingPositions positions(2, window, torch::kCPU);
  RingKVCache cache(2, 2, window, 8, f64);
  std::vector<torch::Tensor> parts;
  for (int64_t start = 0; start < length;) {
    const int64_t n = start < 3 ? 3 : start < 7 ? 1 : 6;
    const RingPositions::Step step = positions.plan(n, {}, torch::kFloat64);
    auto [cs, ss] = rope.cos_sin(step.positions);
    parts.push_back(attention->forward(x.narrow(1, start, n), rope, cs, ss, cache, step));
    positions.commit(step);
    start += n;
  }
  CHECK(torch::allclose(torch::cat(parts, 1), full, kTol, kTol));
  CHECK(positions.next().equal(torch::tensor({length, length})));

  // Row 1 waits every other step: each row still equals its own sequence alone.
  positions.reset();
  std::vector<std::vector<torch::Tensor>> rows(2);
  std::vector<int64_t> fed{0, 0};
  for (int64_t tick = 0; fed[0] < length || fed[1] < length; ++tick) {
    torch::Tensor advancing = torch::tensor({fed[0] < length, fed[1] < length && tick % 2 == 0});
    const RingPositions::Step step = positions.plan(1, advancing, torch::kFloat64);
    auto [cs, ss] = rope.cos_sin(step.positions);
    const torch::Tensor input =
        torch::stack({x[0][std::min(fed[0], length - 1)], x[1][std::min(fed[1], length - 1)]})
            .unsqueeze(1);
    const torch::Tensor out = attention->forward(input, rope, cs, ss, cache, step);
    positions.commit(step);
    for (int64_t r = 0; r < 2; ++r)
      if (advancing[r].item<bool>()) rows[r].push_back(out[r]), ++fed[r];
  }
  for (int64_t r = 0; r < 2; ++r)
    CHECK(torch::allclose(torch::cat(rows[r], 0), full[r], kTol, kTol));
  CHECK_THROWS_WITH(positions.reset_row(2), Catch::Contains("row 2 does not exist"));
}
