// models/internal/activation: GELU (erf and tanh), ReLU, SiLU and ELU with and without a bias
// against the functions in float64, on every instruction-set path and thread count, rows off the
// vector width; the gated product activation(gate) * up in float32 (the two steps' bits) and
// bfloat16 (libtorch's two roundings), on rows of views; wrong operands are errors.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "alto/core/error.h"
#include "alto/core/threading.h"
#include "alto/models/internal/activation.h"
#include "alto/models/internal/few_rows.h"

using namespace alto::models::kernels;  // NOLINT

namespace {

// The definitions, evaluated in float64.
torch::Tensor reference(const torch::Tensor& x, Activation activation) {
  if (activation == Activation::kGelu) return 0.5 * x * (1 + torch::erf(x * std::sqrt(0.5)));
  if (activation == Activation::kGeluTanh)
    return 0.5 * x * (1 + torch::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x.pow(3))));
  if (activation == Activation::kRelu) return x.clamp_min(0);
  if (activation == Activation::kElu) return torch::where(x > 0, x, torch::expm1(x));
  return x * torch::sigmoid(x);
}

}  // namespace

TEST_CASE("activations equal the float64 functions on every path", "[activation]") {
  torch::manual_seed(11);
  const int threads = alto::num_threads();
  for (const Isa isa : {Isa::kPlain, Isa::kAvx2, Isa::kAvx512})
    for (const int thread_count : {1, 2})
      for (const auto& [rows, columns] :
           {std::pair<int64_t, int64_t>{300, 2048}, {3, 37}, {1, 5}, {17, 1}}) {
        const Isa previous = limit_isa(isa);
        alto::set_num_threads(thread_count);
        // Normal values, a wide range, and exact zeros.
        torch::Tensor x = torch::randn({rows, columns}) * 3;
        x.view(-1).narrow(0, 0, std::min<int64_t>(x.numel(), 64)).mul_(10);
        x.view(-1)[x.numel() - 1] = 0.0f;
        const torch::Tensor bias = torch::randn({columns});
        for (const Activation activation :
             {Activation::kGelu, Activation::kGeluTanh, Activation::kRelu, Activation::kSilu,
              Activation::kElu}) {
          INFO("isa " << static_cast<int>(isa) << " threads " << thread_count << " shape " << rows
                      << "x" << columns << " activation " << static_cast<int>(activation));
          for (const bool with_bias : {false, true}) {
            const torch::Tensor b = with_bias ? bias : torch::Tensor();
            const torch::Tensor input = with_bias ? x + bias : x;
            const torch::Tensor expected =
                reference(input.to(torch::kFloat64), activation).to(torch::kFloat32);
            const torch::Tensor y = activate(x, b, activation);
            // The erf and e^x approximations' error, scaled with |x|, plus rounding.
            const torch::Tensor bound = 4e-7 * input.abs().clamp_min(1) + 1e-7;
            REQUIRE((y - expected).abs().le(bound).all().item<bool>());
            torch::Tensor in_place = x.clone();
            activate_(in_place, b, activation);
            REQUIRE(torch::equal(in_place, y));
          }
        }
        alto::set_num_threads(threads);
        limit_isa(previous);
      }
}

TEST_CASE("ELU keeps e^x - 1 exact near zero and saturates at -1", "[activation]") {
  // Where e^x - 1 would cancel (|x| < ln2 / 2) the error must stay relative to the value itself.
  const torch::Tensor x = -torch::logspace(-9, 2.5, 4001, 10, torch::kFloat64);
  const torch::Tensor expected = torch::expm1(x);
  for (const Isa isa : {Isa::kPlain, Isa::kAvx2, Isa::kAvx512}) {
    const Isa previous = limit_isa(isa);
    INFO("isa " << static_cast<int>(isa));
    const torch::Tensor y = activate(x.to(torch::kFloat32), {}, Activation::kElu);
    const torch::Tensor error = (y.to(torch::kFloat64) - expected).abs();
    REQUIRE(error.le(2.5e-7 * expected.abs()).all().item<bool>());
    REQUIRE(activate(torch::tensor({-100.0f, -1e30f}), {}, Activation::kElu)
                .equal(torch::tensor({-1.0f, -1.0f})));
    limit_isa(previous);
  }
}

TEST_CASE("activations keep NaN and take an empty tensor", "[activation]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const torch::Tensor x = torch::tensor({nan, 1.0f, nan});
  for (const Activation activation : {Activation::kGelu, Activation::kGeluTanh, Activation::kRelu,
                                      Activation::kSilu, Activation::kElu}) {
    const torch::Tensor y = activate(x, {}, activation);
    REQUIRE(std::isnan(y[0].item<float>()));
    REQUIRE(std::isnan(y[2].item<float>()));
    REQUIRE(activate(torch::empty({0, 8}), {}, activation).sizes() == std::vector<int64_t>{0, 8});
  }
}

TEST_CASE("activation refuses what it cannot take", "[activation]") {
  const torch::Tensor x = torch::randn({4, 8});
  REQUIRE_FALSE(activation_fits(x.t()));
  REQUIRE_FALSE(activation_fits(x.to(torch::kFloat64)));
  REQUIRE_THROWS_AS(activate(x.to(torch::kFloat64), {}, Activation::kGelu), alto::InvalidArgument);
  REQUIRE_THROWS_AS(activate(x.t(), {}, Activation::kGelu), alto::InvalidArgument);
  REQUIRE_THROWS_WITH(activate(x, torch::randn({7}), Activation::kGelu),
                      Catch::Contains("bias must be float32 [8]"));
}

TEST_CASE("the gated product is activation(gate) * up with each step's rounding", "[activation]") {
  torch::manual_seed(12);
  const int threads = alto::num_threads();
  const torch::Tensor h = torch::randn({300, 2 * 1030}) * 3;
  h.view(-1)[5] = std::numeric_limits<float>::quiet_NaN();
  for (const Isa isa : {Isa::kPlain, Isa::kAvx2, Isa::kAvx512})
    for (const int thread_count : {1, 2})
      for (const int64_t columns : {1030, 37, 1})
        for (const Activation activation :
             {Activation::kGelu, Activation::kGeluTanh, Activation::kRelu, Activation::kSilu,
              Activation::kElu}) {
          INFO("isa " << static_cast<int>(isa) << " threads " << thread_count << " columns "
                      << columns << " activation " << static_cast<int>(activation));
          const Isa previous = limit_isa(isa);
          alto::set_num_threads(thread_count);
          // Halves of one tensor's rows (Kyutai's gating MLP) and separate contiguous tensors.
          const torch::Tensor rows = h.narrow(1, 0, 2 * columns).contiguous();
          const torch::Tensor gate = rows.narrow(1, 0, columns),
                              up = rows.narrow(1, columns, columns);
          REQUIRE(gated_activation_fits(gate, up));
          // float32: the activation's bits times up, as activate() then torch::mul give them.
          const torch::Tensor expected = activate(gate.contiguous(), {}, activation) * up;
          torch::Tensor in_halves = rows.clone();
          activate_gated_(in_halves.narrow(1, 0, columns), in_halves.narrow(1, columns, columns),
                          activation);
          REQUIRE(torch::allclose(in_halves.narrow(1, 0, columns), expected, 0, 0, true));
          REQUIRE(torch::equal(in_halves.narrow(1, columns, columns), up));  // up untouched
          const torch::Tensor separate = gate.contiguous().view({3, 100, columns});
          activate_gated_(separate, up.contiguous().view({3, 100, columns}), activation);
          REQUIRE(torch::allclose(separate.view({300, columns}), expected, 0, 0, true));
          // bfloat16: the activation rounded to bfloat16, then the product rounded.
          const torch::Tensor gate16 = gate.to(torch::kBFloat16).contiguous();
          const torch::Tensor up16 = up.to(torch::kBFloat16).contiguous();
          const torch::Tensor expected16 =
              (activate(gate16.to(torch::kFloat32), {}, activation).to(torch::kBFloat16) * up16);
          torch::Tensor y16 = gate16.clone();
          activate_gated_(y16, up16, activation);
          REQUIRE(torch::allclose(y16, expected16, 0, 0, true));
          alto::set_num_threads(threads);
          limit_isa(previous);
        }
}

TEST_CASE("the bfloat16 gated product is libtorch's SiLU and product, or nearer the truth",
          "[activation]") {
  torch::manual_seed(13);
  const torch::Tensor gate = (torch::randn({64, 4864}) * 4).to(torch::kBFloat16);
  const torch::Tensor up = torch::randn({64, 4864}).to(torch::kBFloat16);
  const torch::Tensor eager = torch::silu(gate) * up;
  torch::Tensor y = gate.clone();
  activate_gated_(y, up, Activation::kSilu);
  // libtorch 1.13 rounds SiLU's every step (negation, e^x, sum, quotient) to bfloat16; the
  // kernel rounds the activation once, as libtorch 2.x does: within two bfloat16 ulps of 1.13's,
  // and no further than it from the float64 truth.
  const torch::Tensor ulp = eager.to(torch::kFloat32).abs() / 64;
  CHECK(((y - eager).to(torch::kFloat32).abs() <= ulp).all().item<bool>());
  const torch::Tensor g = gate.to(torch::kFloat64),
                      truth = g * torch::sigmoid(g) * up.to(torch::kFloat64);
  const double kernel_error = (y.to(torch::kFloat64) - truth).abs().mean().item<double>();
  const double eager_error = (eager.to(torch::kFloat64) - truth).abs().mean().item<double>();
  CHECK(kernel_error <= eager_error);
}

TEST_CASE("the gated product refuses what it cannot take", "[activation]") {
  const torch::Tensor gate = torch::randn({4, 8}), up = torch::randn({4, 8});
  CHECK(gated_activation_fits(gate, up));
  CHECK_FALSE(gated_activation_fits(gate.t(), up.t()));
  CHECK_FALSE(gated_activation_fits(gate, up.to(torch::kBFloat16)));
  CHECK_FALSE(gated_activation_fits(gate, up.narrow(1, 0, 7)));
  CHECK_FALSE(gated_activation_fits(gate.to(torch::kFloat64), up.to(torch::kFloat64)));
  CHECK_FALSE(gated_activation_fits(torch::randn({4, 3, 8}).narrow(1, 0, 2).transpose(0, 1),
                                    torch::randn({2, 4, 8})));
  REQUIRE_THROWS_WITH(activate_gated_(gate.t(), up.t(), Activation::kSilu),
                      Catch::Contains("gate and up must be float32 or bfloat16 CPU rows"));
  const torch::Tensor empty = torch::empty({0, 8});
  activate_gated_(empty, empty.clone(), Activation::kSilu);
  CHECK(empty.numel() == 0);
}
