// models/internal/activation: GELU (erf and tanh), ReLU, SiLU and ELU with and without a bias
// against the functions in float64, on every instruction-set path and thread count, rows off the
// vector width; wrong operands are errors.

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
