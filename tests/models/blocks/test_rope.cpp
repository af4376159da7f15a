// models/blocks/rope: transformers' inverse frequencies for each rope_scaling type (llama3 against
// Meta's per-frequency definition), rotate-half = interleaved on permuted dimensions, per-row
// positions, and the relative-position property that makes RoPE RoPE.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/models/blocks/rope.h"
#include "test_util.h"

using namespace alto::models::blocks;  // NOLINT

namespace {

// Meta's apply_scaling (llama-models), one frequency at a time in double.
double llama3_frequency(double freq, const RopeScaling& s) {
  const double low_wavelen = s.original_max_position_embeddings / s.low_freq_factor;
  const double high_wavelen = s.original_max_position_embeddings / s.high_freq_factor;
  const double wavelen = 2 * M_PI / freq;
  if (wavelen < high_wavelen) return freq;
  if (wavelen > low_wavelen) return freq / s.factor;
  const double smooth = (s.original_max_position_embeddings / wavelen - s.low_freq_factor) /
                        (s.high_freq_factor - s.low_freq_factor);
  return (1 - smooth) * freq / s.factor + smooth * freq;
}

}  // namespace

TEST_CASE("RoPE inverse frequencies follow rope_scaling", "[models][blocks][rope]") {
  RotaryEmbeddingOptions o;
  o.head_dim = 128;
  o.rope_theta = 500000.0;
  const torch::Tensor plain = RotaryEmbedding(o).inv_freq();
  REQUIRE(plain.sizes() == torch::IntArrayRef({64}));
  for (int64_t i = 0; i < 64; ++i)
    CHECK(plain[i].item<float>() == Approx(std::pow(500000.0, -2.0 * i / 128)).epsilon(1e-6));

  o.rope_scaling.rope_type = "linear";
  o.rope_scaling.factor = 4;
  CHECK(torch::allclose(RotaryEmbedding(o).inv_freq(), plain / 4));

  // Llama 3.1's configuration: the three bands (kept, divided, interpolated) all occur.
  o.rope_scaling = {"llama3", 8.0, 1.0, 4.0, 8192};
  const torch::Tensor llama = RotaryEmbedding(o).inv_freq();
  int kept = 0, divided = 0, smoothed = 0;
  for (int64_t i = 0; i < 64; ++i) {
    const double base = plain[i].item<float>();
    const double expected = llama3_frequency(base, o.rope_scaling);
    CHECK(llama[i].item<float>() == Approx(expected).epsilon(1e-5));
    if (expected == base)
      ++kept;
    else if (std::abs(expected - base / 8) < 1e-12 * base)
      ++divided;
    else
      ++smoothed;
  }
  CHECK(kept > 0);
  CHECK(divided > 0);
  CHECK(smoothed > 0);

  o.rope_scaling.rope_type = "yarn";
  CHECK_THROWS_AS(RotaryEmbedding(o), alto::Unsupported);
  o.rope_scaling.rope_type = "default";
  o.head_dim = 7;
  CHECK_THROWS_WITH(RotaryEmbedding(o), Catch::Contains("head_dim must be even"));
}

TEST_CASE("RoPE rotates by position, in either layout", "[models][blocks][rope]") {
  torch::manual_seed(0);
  RotaryEmbeddingOptions o;
  o.head_dim = 16;
  const RotaryEmbedding half(o);
  o.interleaved = true;
  const RotaryEmbedding pairs(o);
  const torch::Tensor positions = torch::arange(5, torch::kInt64);
  const torch::Tensor x = torch::randn({2, 3, 5, 16});
  auto [c, s] = half.cos_sin(positions);
  const torch::Tensor y = half.apply(x, c, s);
  // Interleaved pairs (2i, 2i+1) are rotate-half's (i, i + D/2): the same rotation once the
  // dimensions are permuted.
  std::vector<int64_t> order;
  for (int64_t i = 0; i < 8; ++i) order.insert(order.end(), {i, i + 8});
  const torch::Tensor perm = torch::tensor(order);
  auto [ci, si] = pairs.cos_sin(positions);
  const torch::Tensor yi = pairs.apply(x.index_select(-1, perm), ci, si);
  CHECK(torch::allclose(yi, y.index_select(-1, perm), 1e-6, 1e-6));
  // Norms are kept, and q.k depends on the position difference only.
  CHECK(torch::allclose(y.norm(2, -1), x.norm(2, -1), 1e-5, 1e-5));
  const torch::Tensor q = torch::randn({1, 1, 1, 16}), k = torch::randn({1, 1, 1, 16});
  auto dot_at = [&](int64_t pq, int64_t pk) {
    auto [cq, sq] = half.cos_sin(torch::tensor({pq}));
    auto [ck, sk] = half.cos_sin(torch::tensor({pk}));
    return (half.apply(q, cq, sq) * half.apply(k, ck, sk)).sum().item<float>();
  };
  CHECK(dot_at(7, 3) == Approx(dot_at(104, 100)).epsilon(1e-4));
  // Per-row positions [batch, T, D] (left padding) rotate each row by its own positions.
  const torch::Tensor rows = torch::stack({positions, positions + 3});
  auto [cb, sb] = half.cos_sin(rows);
  const torch::Tensor yb = half.apply(x, cb, sb);
  CHECK(torch::allclose(yb[0], y[0]));
  auto [c3, s3] = half.cos_sin(positions + 3);
  CHECK(torch::allclose(yb[1], half.apply(x.narrow(0, 1, 1), c3, s3)[0]));
}

TEST_CASE("rope_scaling is read from config.json as transformers reads it",
          "[models][blocks][rope]") {
  const std::string path = alto::test::temp_path("rope_config.json");
  std::ofstream(path) << R"({"rope_scaling": {"type": "linear", "factor": 2.0},
    "text_config": {"rope_scaling": {"rope_type": "llama3", "type": "linear", "factor": 32,
                    "original_max_position_embeddings": 8192}}})";
  const auto config = alto::detail::JsonConfig::load(path);
  const RopeScaling old = config.sub("rope_scaling").read(RopeScaling::schema());
  CHECK(old.rope_type == "linear");
  CHECK(old.factor == 2.0);
  const RopeScaling nested =
      config.sub("text_config").sub("rope_scaling").read(RopeScaling::schema());
  CHECK(nested.rope_type == "llama3");  // rope_type wins over type
  CHECK(nested.factor == 32.0);
  std::ofstream(path) << R"({"rope_scaling": {"rope_type": "llama3", "factor": "big"}})";
  CHECK_THROWS_WITH(
      alto::detail::JsonConfig::load(path).sub("rope_scaling").read(RopeScaling::schema()),
      Catch::Contains("field 'rope_scaling.factor'"));
}

TEST_CASE("RoPE on a few positions is one pass with the operators' roundings",
          "[models][blocks][rope]") {
  torch::manual_seed(3);
  for (const bool interleaved : {false, true})
    for (const auto dtype : {torch::kFloat32, torch::kBFloat16})
      for (const auto& [batch, time, per_row] : {std::tuple<int64_t, int64_t, bool>{1, 1, false},
                                                 {1, 2, true},
                                                 {2, 2, false},
                                                 {4, 1, true}}) {
        INFO("interleaved " << interleaved << " dtype " << dtype << " batch " << batch << " time "
                            << time << " per-row positions " << per_row);
        RotaryEmbeddingOptions o;
        o.head_dim = 32;
        o.interleaved = interleaved;
        const RotaryEmbedding rope(o);
        const torch::Tensor positions = per_row
                                            ? torch::randint(0, 5000, {batch, time}, torch::kInt64)
                                            : torch::randint(0, 5000, {time}, torch::kInt64);
        auto [c, s] = rope.cos_sin(positions);
        // As the attention layers pass it: heads split from a projection, [B, T, H, D] transposed.
        const torch::Tensor x = torch::randn({batch, time, 3, 32}).to(dtype).transpose(1, 2);
        // The operators apply() runs beyond a few positions, written out.
        const torch::Tensor cb = (c.dim() == 3 ? c.unsqueeze(1) : c).to(dtype);
        const torch::Tensor sb = (s.dim() == 3 ? s.unsqueeze(1) : s).to(dtype);
        torch::Tensor rotated;
        if (interleaved) {
          const torch::Tensor p = x.unflatten(-1, {16, 2});
          rotated = torch::stack({-p.select(-1, 1), p.select(-1, 0)}, -1).flatten(-2);
        } else {
          rotated = torch::cat({-x.narrow(-1, 16, 16), x.narrow(-1, 0, 16)}, -1);
        }
        const torch::Tensor y = rope.apply(x, c, s);
        REQUIRE(y.scalar_type() == dtype);
        CHECK(torch::equal(y, x * cb + rotated * sb));
      }
}
