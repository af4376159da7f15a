// models/blocks/norm: RMSNorm as transformers' LlamaRMSNorm (float32 inside, any input dtype)
// and LayerNorm as torch.nn.LayerNorm.

#include <torch/torch.h>

#include <catch2/catch.hpp>

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
