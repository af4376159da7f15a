// models/internal/fused_attention: the one-pass kernel equals softmax(q k^T * scale + mask) v
// computed in float64 for every band (causal, sliding window, query offset), key padding
// (including rows that see nothing), grouped-query heads, head sizes off the vector widths,
// query counts on both sides of the packing threshold and of a tile, strided operands, every
// instruction-set path and any thread count; bfloat16 operands as the float32 kernel on their
// widened values.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <limits>

#include "alto/core/error.h"
#include "alto/core/threading.h"
#include "alto/models/internal/few_rows.h"
#include "alto/models/internal/fused_attention.h"
#include "features/golden.h"

using namespace alto::models::kernels;  // NOLINT

namespace {

// The reference: scores in float64, hidden keys at -inf, rows that see nothing all visible.
torch::Tensor reference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        double scale, const AttentionBand& band, const torch::Tensor& padding) {
  const int64_t group = q.size(1) / k.size(1);
  const torch::Tensor kk = k.to(torch::kFloat64).repeat_interleave(group, 1);
  const torch::Tensor vv = v.to(torch::kFloat64).repeat_interleave(group, 1);
  const torch::Tensor scores = torch::matmul(q.to(torch::kFloat64), kk.transpose(-1, -2)) * scale;
  const torch::Tensor qpos = torch::arange(q.size(2)).unsqueeze(1) + band.query_offset;
  const torch::Tensor kpos = torch::arange(k.size(2)).unsqueeze(0);
  torch::Tensor visible = torch::ones({q.size(2), k.size(2)}, torch::kBool);
  if (band.causal) visible = visible.logical_and(kpos <= qpos);
  if (band.window > 0) visible = visible.logical_and(qpos - kpos < band.window);
  visible = visible.view({1, 1, q.size(2), k.size(2)});
  if (padding.defined()) visible = visible.logical_and(padding.ne(0).view({q.size(0), 1, 1, -1}));
  visible = visible.logical_or(visible.logical_not().all(-1, true));
  const torch::Tensor probs =
      torch::softmax(scores.masked_fill(visible.logical_not(), -INFINITY), -1);
  return torch::matmul(probs, vv).to(torch::kFloat32);
}

struct Case {
  int64_t batch, heads, kv_heads, queries, keys, head_dim;
  AttentionBand band;
  bool padded;
};

}  // namespace

TEST_CASE("fused_attention equals the float64 reference", "[fused_attention]") {
  torch::manual_seed(11);
  const std::vector<Case> cases = {
      {1, 2, 2, 1, 1, 64, {}, false},                     // one query, one key
      {2, 4, 2, 1, 300, 64, {true, 0, 299}, false},       // a decode step, grouped heads
      {1, 3, 1, 4, 37, 5, {true, 0, 33}, true},           // odd head size, padding
      {2, 2, 2, 5, 5, 8, {true, 0, 0}, true},             // packed, padded rows see nothing
      {1, 2, 2, 130, 130, 64, {}, false},                 // tiles + tail, encoder-like
      {1, 8, 8, 200, 200, 64, {true, 50, 0}, false},      // Mimi's band
      {1, 2, 1, 70, 400, 80, {true, 100, 330}, false},    // a chunk after 330 cached keys
      {2, 4, 4, 65, 257, 16, {false, 0, 0}, true},        // key padding, no band
      {1, 1, 1, 3, 1000, 128, {true, 1000, 997}, false},  // long keys, few queries
      {1, 2, 2, 33, 33, 1, {true, 0, 0}, false},          // head size 1
  };
  const int threads = alto::num_threads();
  for (const Isa isa : {Isa::kPlain, Isa::kAvx2, Isa::kAvx512}) {
    const Isa previous = limit_isa(isa);
    for (const Case& c : cases) {
      INFO("isa " << static_cast<int>(isa) << " batch " << c.batch << " heads " << c.heads << "/"
                  << c.kv_heads << " T " << c.queries << " S " << c.keys << " D " << c.head_dim
                  << " causal " << c.band.causal << " window " << c.band.window << " offset "
                  << c.band.query_offset << " padded " << c.padded);
      // Strided operands: heads and time swapped in memory, as projections leave them.
      const torch::Tensor q =
          torch::randn({c.batch, c.queries, c.heads, c.head_dim}).transpose(1, 2) * 2;
      const torch::Tensor k =
          torch::randn({c.batch, c.keys, c.kv_heads, c.head_dim}).transpose(1, 2) * 2;
      const torch::Tensor v = torch::randn({c.batch, c.kv_heads, c.keys, c.head_dim});
      torch::Tensor padding;
      if (c.padded) {
        padding = torch::rand({c.batch, c.keys}).gt(0.3).to(torch::kInt64);
        padding[0].zero_();  // a row of the batch with no real key at all
      }
      const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
      const torch::Tensor expected = reference(q, k, v, scale, c.band, padding);
      alto::set_num_threads(1);
      const torch::Tensor one = fused_attention(q, k, v, scale, c.band, padding);
      REQUIRE(one.sizes() == expected.sizes());
      alto::test::require_close(one, expected, 2e-5, 1e-4, std::nullopt, "fused attention");
      // Work splits by head and query tile: any thread count gives the same bits.
      alto::set_num_threads(2);
      CHECK(torch::equal(fused_attention(q, k, v, scale, c.band, padding), one));
      alto::set_num_threads(threads);
    }
    limit_isa(previous);
  }
}

TEST_CASE("fused_attention on bfloat16 operands is the float32 kernel on their widened values",
          "[fused_attention]") {
  // Widened block by block, the float32 arithmetic, the result rounded to bfloat16 once: the same
  // bits as widening first. Few queries read the bfloat16 keys and values as they lie (a decode
  // step over a bfloat16 cache), many pack the keys; strided operands as projections leave them.
  torch::manual_seed(12);
  const std::vector<Case> cases = {
      {2, 4, 2, 1, 300, 64, {true, 0, 299}, false},  // a decode step, grouped heads
      {1, 3, 1, 4, 37, 5, {true, 0, 33}, true},      // odd head size, padding, a row sees nothing
      {1, 2, 1, 70, 400, 80, {true, 100, 330}, false},  // packed keys, a chunk after the cache
      {2, 2, 2, 130, 130, 24, {}, true},                // tiles + tail, key padding
  };
  const int threads = alto::num_threads();
  for (const Isa isa : {Isa::kPlain, Isa::kAvx2, Isa::kAvx512}) {
    const Isa previous = limit_isa(isa);
    for (const Case& c : cases) {
      INFO("isa " << static_cast<int>(isa) << " heads " << c.heads << "/" << c.kv_heads << " T "
                  << c.queries << " S " << c.keys << " D " << c.head_dim);
      const torch::Tensor q = torch::randn({c.batch, c.queries, c.heads, c.head_dim})
                                  .to(torch::kBFloat16)
                                  .transpose(1, 2);
      const torch::Tensor k = torch::randn({c.batch, c.keys, c.kv_heads, c.head_dim})
                                  .to(torch::kBFloat16)
                                  .transpose(1, 2);
      const torch::Tensor v =
          torch::randn({c.batch, c.kv_heads, c.keys, c.head_dim}).to(torch::kBFloat16);
      torch::Tensor padding;
      if (c.padded) {
        padding = torch::rand({c.batch, c.keys}).gt(0.3).to(torch::kInt64);
        padding[0].zero_();
      }
      const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
      REQUIRE(fused_attention_fits(q, k, v));
      alto::set_num_threads(1);
      const torch::Tensor out = fused_attention(q, k, v, scale, c.band, padding);
      REQUIRE(out.scalar_type() == torch::kBFloat16);
      const torch::Tensor widened = fused_attention(q.to(torch::kFloat32), k.to(torch::kFloat32),
                                                    v.to(torch::kFloat32), scale, c.band, padding);
      CHECK(torch::equal(out, widened.to(torch::kBFloat16)));
      // And within bfloat16's rounding of the exact result.
      alto::test::require_close(out.to(torch::kFloat32), reference(q, k, v, scale, c.band, padding),
                                1e-4, 4e-3, std::nullopt, "bfloat16 fused attention");
      alto::set_num_threads(2);
      CHECK(torch::equal(fused_attention(q, k, v, scale, c.band, padding), out));
      alto::set_num_threads(threads);
    }
    limit_isa(previous);
  }
}

TEST_CASE("fused_attention: a few queries' rows do not depend on the rows beside them",
          "[fused_attention]") {
  // Up to 8 queries read the keys as they lie and their rows run four at a time, then one at a
  // time: Whisper's beams fold into the cross-attention's queries, and a beam's result must not
  // depend on how many beams are beside it. Head sizes on and off the vector widths and beyond
  // one single-row pass (144 = 9 AVX-512 vectors, 18 AVX2 ones).
  torch::manual_seed(13);
  for (const Isa isa : {Isa::kPlain, Isa::kAvx2, Isa::kAvx512}) {
    const Isa previous = limit_isa(isa);
    for (const int64_t head_dim : {64, 20, 144}) {
      for (const torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16}) {
        INFO("isa " << static_cast<int>(isa) << " D " << head_dim << " " << dtype);
        const torch::Tensor q = torch::randn({1, 2, 7, head_dim}).to(dtype);
        const torch::Tensor k = torch::randn({1, 2, 300, head_dim}).to(dtype);
        const torch::Tensor v = torch::randn({1, 2, 300, head_dim}).to(dtype);
        const torch::Tensor all = fused_attention(q, k, v, 0.1, {});
        for (int64_t row = 0; row < 7; ++row)
          CHECK(torch::equal(fused_attention(q.narrow(2, row, 1), k, v, 0.1, {}),
                             all.narrow(2, row, 1)));
        CHECK(torch::equal(fused_attention(q.narrow(2, 1, 5), k, v, 0.1, {}), all.narrow(2, 1, 5)));
      }
    }
    limit_isa(previous);
  }
}

TEST_CASE("fused_attention keeps memory to tiles: an hour of Mimi frames", "[fused_attention]") {
  // 45000 positions (an hour at 12.5 Hz) with Mimi's 250-key band: the score matrix alone would
  // be 8 GB per head; the kernel needs its tiles and the transposed keys.
  const int64_t positions = 45000;
  const torch::Tensor q = torch::randn({1, 1, positions, 64});
  const torch::Tensor k = torch::randn({1, 1, positions, 64});
  const torch::Tensor v = torch::randn({1, 1, positions, 64});
  const AttentionBand band{true, 250, 0};
  const torch::Tensor out = fused_attention(q, k, v, 0.125, band);
  // The last 100 queries against their 250 visible keys.
  const int64_t from = positions - 100, keys_from = from - 249;
  AttentionBand tail = band;
  tail.query_offset = 249;
  const torch::Tensor expected = reference(q.narrow(2, from, 100), k.narrow(2, keys_from, 349),
                                           v.narrow(2, keys_from, 349), 0.125, tail, {});
  alto::test::require_close(out.narrow(2, from, 100), expected, 2e-5, 1e-4, std::nullopt,
                            "the band's last queries");
}

TEST_CASE("fused_attention refuses what it cannot take", "[fused_attention]") {
  const torch::Tensor q = torch::randn({1, 4, 3, 8}), k = torch::randn({1, 3, 5, 8});
  CHECK_FALSE(fused_attention_fits(q, k, k));  // 4 heads over 3 kv heads
  CHECK_FALSE(fused_attention_fits(q.to(torch::kFloat64), k.narrow(1, 0, 2), k.narrow(1, 0, 2)));
  // Mixed dtypes: the kernel reads one element type.
  const torch::Tensor k2_bf16 = k.narrow(1, 0, 2).to(torch::kBFloat16);
  CHECK_FALSE(fused_attention_fits(q, k2_bf16, k2_bf16));
  REQUIRE_THROWS_WITH(fused_attention(q, k2_bf16, k2_bf16, 1.0, {}),
                      Catch::Contains("of its dtype"));
  REQUIRE_THROWS_AS(fused_attention(q, k, k, 1.0, {}), alto::Error);
  const torch::Tensor k2 = k.narrow(1, 0, 2);
  REQUIRE_THROWS_WITH(fused_attention(q, k2, k2, 1.0, {}, torch::ones({1, 4})),
                      Catch::Contains("key_padding must be [1, 5]"));
}
