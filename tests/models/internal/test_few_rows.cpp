// models/internal/few_rows: the few-row products equal torch's for every row count, vector tails
// (sizes off the 8/16/32-element blocks) and with or without a bias, in float32 and bfloat16 and
// with int8 weights, on every instruction-set path and any thread count; matmul_few_rows with
// bfloat16 weights and in groups beyond kMaxFewRows rows; bfloat16 products of many rows as
// float32 GEMMs where the CPU lacks AVX-512 BF16; wrong operands are errors.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <limits>
#include <tuple>

#include "alto/core/error.h"
#include "alto/core/threading.h"
#include "alto/models/internal/few_rows.h"
#include "features/golden.h"

using namespace alto::models::kernels;  // NOLINT

TEST_CASE("linear_few_rows and matmul_few_rows equal torch on every path", "[few_rows]") {
  torch::manual_seed(5);
  const int threads = alto::num_threads();
  for (const Isa isa : {Isa::kPlain, Isa::kAvx2, Isa::kAvx512})
    for (int64_t rows = 1; rows <= kMaxFewRows; ++rows)
      for (const auto& [in, out] : {std::pair<int64_t, int64_t>{512, 1536},
                                    {37, 5},
                                    {16, 3},
                                    {7, 19},
                                    {1, 1},
                                    {8192, 33},
                                    {100, 40}}) {
        const Isa previous = limit_isa(isa);
        INFO("isa " << static_cast<int>(isa) << " rows " << rows << " in " << in << " out " << out);
        const torch::Tensor x = torch::randn({rows, in});
        const torch::Tensor w = torch::randn({out, in});
        const torch::Tensor b = torch::randn({out});
        REQUIRE(few_rows(x));
        const double atol = 1e-4 * std::sqrt(static_cast<double>(in));
        alto::test::require_close(linear_few_rows(x, w, b), torch::linear(x, w, b), atol, 1e-5,
                                  std::nullopt, "linear with bias");
        alto::test::require_close(linear_few_rows(x, w, {}), torch::linear(x, w), atol, 1e-5,
                                  std::nullopt, "linear");
        const torch::Tensor wt = torch::randn({in, out});
        alto::test::require_close(matmul_few_rows(x, wt), torch::mm(x, wt), atol, 1e-5,
                                  std::nullopt, "matmul");
        // Non-contiguous operands are taken as their values.
        alto::test::require_close(matmul_few_rows(x, wt.t().contiguous().t()), torch::mm(x, wt),
                                  atol, 1e-5, std::nullopt, "matmul, transposed view");
        // A bfloat16 weight is its float32 values, widened as read; every thread count splits
        // the columns alike.
        const torch::Tensor wb = wt.to(torch::kBFloat16);
        alto::set_num_threads(1);
        const torch::Tensor y = matmul_few_rows(x, wb);
        REQUIRE(y.scalar_type() == torch::kFloat32);
        alto::test::require_close(y, torch::mm(x, wb.to(torch::kFloat32)), atol, 1e-5, std::nullopt,
                                  "matmul, bfloat16");
        alto::set_num_threads(2);
        CHECK(torch::equal(matmul_few_rows(x, wb), y));
        alto::set_num_threads(threads);
        limit_isa(previous);
      }
}

TEST_CASE("matmul_few_rows beyond kMaxFewRows: groups of rows over column slabs", "[few_rows]") {
  torch::manual_seed(8);
  const int threads = alto::num_threads();
  // 512 inputs make slabs of 128 float32 (256 bfloat16) columns: 1000 outputs cross several,
  // the last one short; row counts leave a short last group.
  for (const Isa isa : {Isa::kPlain, Isa::kAvx2, Isa::kAvx512})
    for (const int64_t rows : {5, 8, 17})
      for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
        const Isa previous = limit_isa(isa);
        INFO("isa " << static_cast<int>(isa) << " rows " << rows << " " << dtype);
        const torch::Tensor x = torch::randn({rows, 512});
        const torch::Tensor w = torch::randn({512, 1000}).to(dtype);
        alto::set_num_threads(1);
        const torch::Tensor y = matmul_few_rows(x, w);
        alto::test::require_close(y, torch::mm(x, w.to(torch::kFloat32)), 1e-4 * std::sqrt(512.0),
                                  1e-5, std::nullopt, "grouped rows");
        // Each row's sums are those of its group alone, however the columns split.
        CHECK(torch::equal(matmul_few_rows(x.narrow(0, rows - 1, 1), w), y.narrow(0, rows - 1, 1)));
        alto::set_num_threads(2);
        CHECK(torch::equal(matmul_few_rows(x, w), y));
        alto::set_num_threads(threads);
        limit_isa(previous);
      }
}

TEST_CASE("bfloat16 products on every path and thread count", "[few_rows]") {
  torch::manual_seed(6);
  const int threads = alto::num_threads();
  for (const Isa isa : {Isa::kPlain, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Bf16}) {
    const Isa previous = limit_isa(isa);
    for (int64_t rows = 1; rows <= kMaxFewRows; ++rows)
      for (const auto& [in, out] : {std::pair<int64_t, int64_t>{1024, 5000}, {37, 5}, {64, 33}}) {
        INFO("isa " << static_cast<int>(isa) << " rows " << rows << " in " << in << " out " << out);
        const torch::Tensor x = torch::randn({rows, in}).to(torch::kBFloat16);
        const torch::Tensor w = torch::randn({out, in}).to(torch::kBFloat16);
        const torch::Tensor b = torch::randn({out}).to(torch::kBFloat16);
        // The float32 product of the same bfloat16 values, rounded once: what libtorch gives up
        // to summation order.
        const torch::Tensor expected =
            torch::linear(x.to(torch::kFloat32), w.to(torch::kFloat32), b.to(torch::kFloat32));
        const torch::Tensor y = linear_few_rows(x, w, b);
        REQUIRE(y.scalar_type() == torch::kBFloat16);
        alto::test::require_close(y.to(torch::kFloat32), expected,
                                  1e-4 * std::sqrt(static_cast<double>(in)), 1e-2, std::nullopt,
                                  "bfloat16 linear");
        // Each output is one thread's sum: any split over threads gives the same bits, in
        // float32 too.
        alto::set_num_threads(1);
        const torch::Tensor one = linear_few_rows(x, w, b);
        const torch::Tensor x32 = x.to(torch::kFloat32), w32 = w.to(torch::kFloat32);
        const torch::Tensor one32 = linear_few_rows(x32, w32, {});
        alto::set_num_threads(2);
        CHECK(torch::equal(linear_few_rows(x, w, b), one));
        CHECK(torch::equal(linear_few_rows(x32, w32, {}), one32));
        alto::set_num_threads(threads);
      }
    limit_isa(previous);
  }
}

TEST_CASE("bfloat16 products of many rows as float32 GEMMs on widened weight blocks",
          "[few_rows]") {
  torch::manual_seed(8);
  // Chosen by the instruction-set cap: without AVX-512 BF16 libtorch's bfloat16 GEMM is scalar.
  const Isa previous = limit_isa(Isa::kAvx512);
  CHECK(widen_bfloat16_products());
  limit_isa(Isa::kAvx512Bf16);
  CHECK(widen_bfloat16_products() == (available_isa() < Isa::kAvx512Bf16));
  limit_isa(previous);
  // 30000 outputs of 40 inputs cross two blocks of widened rows (2 MB: 13107 rows of 40); 5 rows
  // is the fewest that reach it from blocks::linear.
  for (const auto& [rows, in, out] :
       {std::tuple<int64_t, int64_t, int64_t>{5, 40, 30000}, {300, 384, 1536}, {37, 1, 3}}) {
    INFO("rows " << rows << " in " << in << " out " << out);
    const torch::Tensor x = torch::randn({rows, in}).to(torch::kBFloat16);
    const torch::Tensor w = torch::randn({out, in}).to(torch::kBFloat16);
    const torch::Tensor b = torch::randn({out}).to(torch::kBFloat16);
    const torch::Tensor y = linear_bfloat16_in_float32(x, w, b);
    REQUIRE(y.scalar_type() == torch::kFloat32);
    alto::test::require_close(
        y,
        torch::linear(x.to(torch::kFloat64), w.to(torch::kFloat64), b.to(torch::kFloat64))
            .to(torch::kFloat32),
        1e-5 * std::sqrt(static_cast<double>(in)), 1e-5, std::nullopt, "widened bfloat16 GEMM");
    alto::test::require_close(linear_bfloat16_in_float32(x, w, {}),
                              torch::linear(x.to(torch::kFloat32), w.to(torch::kFloat32)),
                              1e-5 * std::sqrt(static_cast<double>(in)), 1e-5, std::nullopt,
                              "without a bias");
  }
  REQUIRE_THROWS_WITH(linear_bfloat16_in_float32(torch::randn({6, 8}),
                                                 torch::randn({4, 8}).to(torch::kBFloat16), {}),
                      Catch::Contains("x must be bfloat16 [rows, in]"));
  REQUIRE_THROWS_WITH(linear_bfloat16_in_float32(torch::randn({6, 8}).to(torch::kBFloat16),
                                                 torch::randn({4, 8}).to(torch::kBFloat16),
                                                 torch::randn({5}).to(torch::kBFloat16)),
                      Catch::Contains("bias [5] does not fit weight [4, 8]"));
}

TEST_CASE("int8 weights: per-channel quantization as libtorch's, products on every path",
          "[few_rows]") {
  torch::manual_seed(7);
  const torch::Tensor w = torch::randn({300, 70}) * torch::rand({300, 1});
  w[3].zero_();  // a row of zeros takes scale 1
  const torch::Tensor q = quantize_int8(w);
  REQUIRE(is_int8(q));
  REQUIRE_FALSE(is_int8(w));
  const torch::Tensor scale = q.q_per_channel_scales();
  CHECK(scale[3].item<double>() == 1.0);
  // The format of torch.quantize_per_channel (qint8, axis 0, zero points 0), the values within
  // one step of its (it rounds w * (1 / scale); alto w / scale).
  const torch::Tensor reference =
      torch::quantize_per_channel(w, scale, torch::zeros({300}, torch::kInt64), 0, torch::kQInt8);
  CHECK((q.int_repr().to(torch::kInt32) - reference.int_repr().to(torch::kInt32))
            .abs()
            .max()
            .item<int>() <= 1);
  CHECK(q.int_repr().abs().max().item<int>() == 127);
  // Within half a step of the weight.
  const torch::Tensor back = q.dequantize();
  CHECK(((back - w).abs() <= scale.to(torch::kFloat32).unsqueeze(1) * 0.5001f).all().item<bool>());
  // Many rows: GEMMs on blocks of the weight dequantized (blocks of 748 rows of 700: one block
  // for 300 rows, three for 2000), as torch::linear on the dequantized weight.
  for (const int64_t out : {int64_t{300}, int64_t{2000}}) {
    const torch::Tensor qw = quantize_int8(torch::randn({out, 700}));
    const torch::Tensor x = torch::randn({37, 700}), b = torch::randn({out});
    alto::test::require_close(linear_int8(x, qw, b), torch::linear(x, qw.dequantize(), b), 1e-4,
                              1e-5, std::nullopt, "int8 GEMM");
    CHECK(linear_int8(torch::randn({0, 700}), qw, {}).sizes() == torch::IntArrayRef{0, out});
    REQUIRE_THROWS_WITH(linear_int8(x.to(torch::kFloat64), qw, {}),
                        Catch::Contains("float32 [rows, 700]"));
  }

  const int threads = alto::num_threads();
  for (const Isa isa : {Isa::kPlain, Isa::kAvx2, Isa::kAvx512})
    for (int64_t rows = 1; rows <= kMaxFewRows; ++rows)
      for (const auto& [in, out] : {std::pair<int64_t, int64_t>{1024, 5000}, {37, 5}, {70, 33}}) {
        const Isa previous = limit_isa(isa);
        INFO("isa " << static_cast<int>(isa) << " rows " << rows << " in " << in << " out " << out);
        const torch::Tensor x = torch::randn({rows, in});
        const torch::Tensor qw = quantize_int8(torch::randn({out, in}));
        const torch::Tensor b = torch::randn({out});
        // float32 x times the weights the int8 stand for, up to summation order.
        const torch::Tensor expected = torch::linear(x, qw.dequantize(), b);
        const torch::Tensor y = linear_few_rows(x, qw, b);
        REQUIRE(y.scalar_type() == torch::kFloat32);
        alto::test::require_close(y, expected, 1e-5 * std::sqrt(static_cast<double>(in)), 1e-5,
                                  std::nullopt, "int8 linear");
        alto::test::require_close(linear_few_rows(x, qw, {}), torch::linear(x, qw.dequantize()),
                                  1e-5 * std::sqrt(static_cast<double>(in)), 1e-5, std::nullopt,
                                  "int8 linear without bias");
        alto::set_num_threads(1);
        const torch::Tensor one = linear_few_rows(x, qw, b);
        alto::set_num_threads(2);
        CHECK(torch::equal(linear_few_rows(x, qw, b), one));
        alto::set_num_threads(threads);
        limit_isa(previous);
      }
  // int8 weights take float32 x only; float32 products refuse them.
  REQUIRE_THROWS_WITH(linear_few_rows(torch::randn({2, 70}).to(torch::kBFloat16), q, {}),
                      Catch::Contains("does not fit"));
  REQUIRE_THROWS_WITH(matmul_few_rows(torch::randn({2, 300}), q),
                      Catch::Contains("float32 or bfloat16 [300, out]"));
  REQUIRE_THROWS_WITH(quantize_int8(torch::randn({4, 8}).to(torch::kBFloat16)),
                      Catch::Contains("float32 [out, in]"));
  torch::Tensor bad = torch::randn({4, 8});
  bad[1][2] = std::numeric_limits<float>::infinity();
  REQUIRE_THROWS_WITH(quantize_int8(bad), Catch::Contains("infinite"));
  REQUIRE_THROWS_WITH(linear_int8(torch::randn({2, 8}), torch::randn({4, 8}), {}),
                      Catch::Contains("quantize_int8 weight"));
}

TEST_CASE("x @ a bfloat16 weight [in, out] in float32 over widened row blocks", "[few_rows]") {
  torch::manual_seed(9);
  // 3000 inputs of 300 outputs cross two blocks of widened rows (2 MB: 1747 rows of 300); a
  // transposed x (as a transposed convolution's unfolded frames arrive) and one row.
  for (const auto& [rows, in, out] :
       {std::tuple<int64_t, int64_t, int64_t>{3, 3000, 300}, {1, 16, 40}, {32, 64, 8}}) {
    INFO("rows " << rows << " in " << in << " out " << out);
    const torch::Tensor x = torch::randn({in, rows}).t();
    const torch::Tensor w = torch::randn({in, out}).to(torch::kBFloat16);
    const torch::Tensor y = matmul_bfloat16_in_float32(x, w);
    REQUIRE(y.scalar_type() == torch::kFloat32);
    alto::test::require_close(
        y, torch::mm(x.to(torch::kFloat64), w.to(torch::kFloat64)).to(torch::kFloat32),
        1e-5 * std::sqrt(static_cast<double>(in)), 1e-5, std::nullopt, "widened row blocks");
  }
  REQUIRE_THROWS_WITH(matmul_bfloat16_in_float32(torch::randn({2, 8}), torch::randn({8, 4})),
                      Catch::Contains("weight bfloat16 [in, out]"));
  REQUIRE_THROWS_WITH(
      matmul_bfloat16_in_float32(torch::randn({2, 7}), torch::randn({8, 4}).to(torch::kBFloat16)),
      Catch::Contains("[2, 7]"));
}

TEST_CASE("few-row products refuse what they cannot take", "[few_rows]") {
  const torch::Tensor w = torch::randn({4, 8});
  REQUIRE_FALSE(few_rows(torch::randn({kMaxFewRows + 1, 8})));
  REQUIRE_FALSE(few_rows(torch::randn({2, 8}, torch::kFloat64)));
  REQUIRE_THROWS_WITH(linear_few_rows(torch::randn({2, 8}).to(torch::kBFloat16), w, {}),
                      Catch::Contains("does not fit"));
  REQUIRE_FALSE(few_rows(torch::randn({8})));
  REQUIRE_THROWS_AS(linear_few_rows(torch::randn({5, 8}), w, {}), alto::InvalidArgument);
  REQUIRE_THROWS_WITH(linear_few_rows(torch::randn({2, 7}), w, {}),
                      Catch::Contains("does not fit"));
  REQUIRE_THROWS_WITH(matmul_few_rows(torch::randn({2, 4}), w.to(torch::kFloat64)),
                      Catch::Contains("weight must be float32 or bfloat16 [4, out]"));
  REQUIRE_THROWS_WITH(matmul_few_rows(torch::randn({2, 4}).to(torch::kBFloat16), w),
                      Catch::Contains("x must be float32"));
  REQUIRE_THROWS_WITH(matmul_few_rows(torch::randn({0, 4}), w),
                      Catch::Contains("x must be float32 [rows >= 1, in]"));
}
