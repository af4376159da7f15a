// models/blocks/mlp: the gated (SwiGLU) and plain MLPs against their definitions, blocks::linear
// with an activation against torch::linear and the activation, and blocks::activate on views.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/models/blocks/mlp.h"
#include "alto/models/internal/few_rows.h"

using namespace alto::models::blocks;  // NOLINT

namespace {

torch::Tensor activate_reference(const torch::Tensor& x, const std::string& name) {
  if (name == "gelu") return torch::gelu(x);
  if (name == "gelu tanh") return torch::gelu(x, "tanh");
  if (name == "relu") return torch::relu(x);
  if (name == "elu") return torch::elu(x);
  return torch::silu(x);
}

}  // namespace

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

TEST_CASE("linear with an activation is the activation of the linear layer on every path",
          "[models][blocks][mlp]") {
  torch::manual_seed(1);
  const torch::Tensor weight = torch::randn({37, 24}), bias = torch::randn({37});
  const std::vector<std::pair<Activation, std::string>> activations = {
      {Activation::kGelu, "gelu"},
      {Activation::kGeluTanh, "gelu tanh"},
      {Activation::kRelu, "relu"},
      {Activation::kSilu, "silu"}};
  // A GEMM (the bias and activation after it), a few-row step, and batched leading dimensions.
  for (const auto& shape : {std::vector<int64_t>{50, 24}, {2, 24}, {3, 5, 24}})
    for (const auto& [activation, name] : activations)
      for (const bool with_bias : {true, false}) {
        INFO(name << " rows " << shape.front() << " bias " << with_bias);
        const torch::Tensor x = torch::randn(shape);
        const torch::Tensor b = with_bias ? bias : torch::Tensor();
        const torch::Tensor expected = activate_reference(torch::linear(x, weight, b), name);
        const torch::Tensor y = linear(x, weight, b, activation);
        CHECK(y.sizes() == expected.sizes());
        CHECK(torch::allclose(y, expected, 1e-5, 1e-5));
        // int8 weights: the activation of the int8 product.
        const torch::Tensor int8 = alto::models::kernels::quantize_int8(weight);
        CHECK(torch::allclose(linear(x, int8, b, activation),
                              activate_reference(linear(x, int8, b), name), 1e-5, 1e-5));
        // bfloat16: the activation of the float32 product rounded once (widened GEMMs, where
        // the CPU lacks AVX-512 BF16) or libtorch's activation on libtorch's product.
        const torch::Tensor y16 = linear(x.to(torch::kBFloat16), weight.to(torch::kBFloat16),
                                         with_bias ? bias.to(torch::kBFloat16) : b, activation);
        CHECK(y16.scalar_type() == torch::kBFloat16);
        CHECK(torch::allclose(y16.to(torch::kFloat32), expected, 0.05, 0.1));
      }
}

TEST_CASE("activate takes strided views without touching them, and other dtypes",
          "[models][blocks][mlp]") {
  torch::manual_seed(2);
  const std::vector<std::pair<Activation, std::string>> activations = {
      {Activation::kGelu, "gelu"},
      {Activation::kGeluTanh, "gelu tanh"},
      {Activation::kRelu, "relu"},
      {Activation::kSilu, "silu"},
      {Activation::kElu, "elu"}};
  const torch::Tensor base = torch::randn({2, 8, 30}) * 3;
  // A convolution's time tile (narrowed last axis) and a transposed view.
  for (const torch::Tensor& x : {base.narrow(-1, 3, 20), base.transpose(1, 2)})
    for (const auto& [activation, name] : activations) {
      INFO(name << " contiguous " << x.is_contiguous());
      const torch::Tensor before = base.clone();
      const torch::Tensor y = activate(x, activation);
      CHECK(y.sizes() == x.sizes());
      CHECK(torch::allclose(y, activate_reference(x, name), 1e-5, 1e-6));
      CHECK(torch::equal(base, before));
      const torch::Tensor y16 = activate(x.to(torch::kBFloat16), activation);
      CHECK(y16.scalar_type() == torch::kBFloat16);
      CHECK(torch::allclose(y16.to(torch::kFloat32), activate_reference(x, name), 0.05, 0.05));
    }
}
