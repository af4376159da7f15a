// models/blocks/mlp: the gated (SwiGLU) and plain MLPs against their definitions.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/models/blocks/mlp.h"

using namespace alto::models::blocks;  // NOLINT

TEST_CASE("the gated MLP is down(silu(gate x) * up x), the plain one fc2(act(fc1 x))",
          "[models][blocks][mlp]") {
  torch::manual_seed(0);
  GatedMlp gated(6, 10, false, Activation::kSilu, torch::TensorOptions());
  for (auto& p : gated->parameters()) p.copy_(torch::randn(p.sizes()));
  const torch::Tensor x = torch::randn({2, 4, 6});
  const torch::Tensor g = x.matmul(gated->gate_proj->weight.t());
  const torch::Tensor u = x.matmul(gated->up_proj->weight.t());
  const torch::Tensor expected = (g * torch::sigmoid(g) * u).matmul(gated->down_proj->weight.t());
  CHECK(torch::allclose(gated->forward(x), expected, 1e-5, 1e-5));
  std::vector<std::string> names;
  for (const auto& item : gated->named_parameters()) names.push_back(item.key());
  CHECK(names ==
        std::vector<std::string>{"gate_proj.weight", "up_proj.weight", "down_proj.weight"});

  Mlp plain(6, 10, true, Activation::kGelu, torch::TensorOptions());
  for (auto& p : plain->parameters()) p.copy_(torch::randn(p.sizes()));
  const torch::Tensor h = torch::gelu(torch::linear(x, plain->fc1->weight, plain->fc1->bias));
  CHECK(torch::allclose(plain->forward(x), torch::linear(h, plain->fc2->weight, plain->fc2->bias),
                        1e-5, 1e-5));
}
