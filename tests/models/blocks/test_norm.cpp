// models/blocks/norm: RMSNorm as transformers' LlamaRMSNorm (float32 inside, any input dtype)
// and LayerNorm as torch.nn.LayerNorm.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/core/threading.h"
#include "alto/models/blocks/norm.h"

using namespace alto::models::blocks;  // NOLINT

TEST_CASE("RMSNorm and LayerNorm equal their definitions", "[models][blocks][norm]") {
  torch::manual_seed(0);
  RmsNorm rms(8, 1e-6, torch::TensorOptions());
  rms->weight.copy_(torch::randn({8}));
  const torch::Tensor x = torch::randn({2, 3, 8}) * 5;
  const torch::Tensor x64 = x.to(torch::kFloat64);
  const torch::Tensor expected =
      rms->weight.to(torch::kFloat64) * x64 / torch::sqrt(x64.pow(2).mean(-1, true) + 1e-6);
  CHECK(torch::allclose(rms->forward(x).to(torch::kFloat64), expected, 1e-5, 1e-6));
  // bfloat16 input: normalised in float32, cast back before the weight, as transformers does.
  const torch::Tensor xb = x.to(torch::kBFloat16);
  const torch::Tensor xf = xb.to(torch::kFloat32);
  const torch::Tensor inner =
      (xf * torch::rsqrt(xf.pow(2).mean(-1, true) + 1e-6)).to(torch::kBFloat16);
  CHECK(torch::equal(rms->forward(xb), rms->weight * inner));

  LayerNorm ln(8, 1e-5, torch::TensorOptions());
  ln->weight.copy_(torch::randn({8}));
  ln->bias.copy_(torch::randn({8}));
  torch::nn::LayerNorm reference(torch::nn::LayerNormOptions({8}).eps(1e-5));
  reference->weight.data().copy_(ln->weight);
  reference->bias.data().copy_(ln->bias);
  torch::NoGradGuard no_grad;
  CHECK(torch::allclose(ln->forward(x), reference->forward(x), 1e-5, 1e-6));
}

TEST_CASE("RMSNorm's one-pass CPU rows equal transformers' operators", "[models][blocks][norm]") {
  torch::manual_seed(1);
  const int saved = alto::num_threads();
  alto::set_num_threads(2);
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    for (const bool scale_in_float32 : {false, true}) {
      for (const auto& [rows, dim] :
           {std::pair<int64_t, int64_t>{1, 896}, {300, 13}, {3, 8}, {2, 0}}) {
        INFO("dtype " << dtype << " scale_in_float32 " << scale_in_float32 << " rows " << rows
                      << " dim " << dim);
        RmsNorm rms(dim, 1e-6, torch::TensorOptions().dtype(dtype), scale_in_float32);
        rms->weight.copy_(torch::randn({dim}));
        // Non-contiguous, as a slice of a fused projection arrives.
        const torch::Tensor x = (torch::randn({rows, 2 * dim}) * 3).to(dtype).narrow(1, 0, dim);
        const torch::Tensor h = x.to(torch::kFloat32);
        const torch::Tensor normed = h * torch::rsqrt(h.pow(2).mean(-1, true) + 1e-6);
        const torch::Tensor expected = scale_in_float32
                                           ? (normed * rms->weight.to(torch::kFloat32)).to(dtype)
                                           : rms->weight * normed.to(dtype);
        const torch::Tensor actual = rms->forward(x);
        REQUIRE(actual.scalar_type() == dtype);
        REQUIRE(actual.sizes() == expected.sizes());
        // Float32's summation order differs; in bfloat16 that can move a rounding by one step.
        const double rtol = dtype == torch::kFloat32 ? 1e-6 : 1.0 / 128;
        CHECK(
            torch::allclose(actual.to(torch::kFloat64), expected.to(torch::kFloat64), rtol, 1e-6));
      }
    }
  }
  alto::set_num_threads(saved);
}

TEST_CASE("A residual add fused with the norm equals the add, then the norm",
          "[models][blocks][norm]") {
  torch::manual_seed(2);
  torch::NoGradGuard no_grad;
  const int saved = alto::num_threads();
  alto::set_num_threads(2);
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    for (const auto& [rows, dim] :
         {std::pair<int64_t, int64_t>{1, 512}, {300, 13}, {3, 8}, {1500, 40}, {2, 0}}) {
      INFO("dtype " << dtype << " rows " << rows << " dim " << dim);
      const auto options = torch::TensorOptions().dtype(dtype);
      // Non-contiguous x, as a slice arrives; a mean far from zero tests the variance's two passes.
      const torch::Tensor x = (torch::randn({rows, 2 * dim}) * 3 + 20).to(dtype).narrow(1, 0, dim);
      const torch::Tensor delta = torch::randn({rows, dim}).to(dtype);
      const torch::Tensor sum = x + delta;

      RmsNorm rms(dim, 1e-6, options);
      rms->weight.copy_(torch::randn({dim}));
      const NormedSum r = rms->forward_sum(x, delta);
      CHECK(torch::equal(r.sum, sum));
      CHECK(torch::equal(r.normed, rms->forward(sum)));

      LayerNorm ln(dim, 1e-5, options);
      ln->weight.copy_(torch::randn({dim}));
      ln->bias.copy_(torch::randn({dim}));
      const NormedSum l = ln->forward_sum(x, delta);
      CHECK(torch::equal(l.sum, sum));
      REQUIRE(l.normed.scalar_type() == dtype);
      const torch::Tensor sum64 = sum.to(torch::kFloat64);
      const torch::Tensor expected = torch::layer_norm(sum64, {dim}, ln->weight.to(torch::kFloat64),
                                                       ln->bias.to(torch::kFloat64), 1e-5);
      // float32: lane sums against float64; bfloat16: one rounding of the result.
      const double tolerance = dtype == torch::kFloat32 ? 1e-5 : 1.0 / 128;
      CHECK(torch::allclose(l.normed.to(torch::kFloat64), expected, tolerance, tolerance));
      CHECK(torch::allclose(ln->forward(sum).to(torch::kFloat64), expected, tolerance, tolerance));
    }
  }
  // Anything else takes the two operations: a broadcast delta, float64.
  LayerNorm ln(8, 1e-5, torch::TensorOptions());
  ln->weight.copy_(torch::randn({8}));
  ln->bias.copy_(torch::randn({8}));
  const torch::Tensor x = torch::randn({3, 8}), row = torch::randn({8});
  const NormedSum broadcast = ln->forward_sum(x, row);
  CHECK(torch::equal(broadcast.sum, x + row));
  CHECK(torch::equal(broadcast.normed, ln->forward(x + row)));
  RmsNorm rms64(8, 1e-6, torch::TensorOptions().dtype(torch::kFloat64));
  rms64->weight.copy_(torch::randn({8}));
  const torch::Tensor x64 = torch::randn({3, 8}, torch::kFloat64);
  const NormedSum wide = rms64->forward_sum(x64, x64);
  CHECK(torch::equal(wide.sum, x64 + x64));
  CHECK(torch::equal(wide.normed, rms64->forward(x64 + x64)));
  alto::set_num_threads(saved);
}
