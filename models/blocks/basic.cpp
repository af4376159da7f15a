#include "alto/models/blocks/basic.h"

#include <torch/torch.h>

#include <optional>

#include "alto/core/checkpoint.h"
#include "alto/core/error.h"
#include "alto/core/threading.h"
#include "alto/models/internal/activation.h"
#include "alto/models/internal/conv.h"
#include "alto/models/internal/few_rows.h"

namespace alto::models::blocks {

torch::Tensor uninitialised_parameter(torch::nn::Module& module, const std::string& name,
                                      torch::IntArrayRef shape,
                                      const torch::TensorOptions& options) {
  return module.register_parameter(name, declare_weight(shape, options), /*requires_grad=*/false);
}

LinearImpl::LinearImpl(int64_t in_features, int64_t out_features, bool with_bias,
                       const torch::TensorOptions& options) {
  weight = uninitialised_parameter(*this, "weight", {out_features, in_features}, options);
  if (with_bias) bias = uninitialised_parameter(*this, "bias", {out_features}, options);
}

namespace {

kernels::Activation kernel_activation(Activation activation) {
  switch (activation) {
    case Activation::kGelu:
      return kernels::Activation::kGelu;
    case Activation::kGeluTanh:
      return kernels::Activation::kGeluTanh;
    case Activation::kRelu:
      return kernels::Activation::kRelu;
    case Activation::kSilu:
      return kernels::Activation::kSilu;
    case Activation::kElu:
      return kernels::Activation::kElu;
  }
  throw InvalidArgument("blocks::Activation: unknown value");
}

// Both linear()s: the product on the path that suits it, then the activation if one is given.
torch::Tensor linear_then(const torch::Tensor& x, const torch::Tensor& weight,
                          const torch::Tensor& bias, const std::optional<Activation>& activation) {
  const torch::Tensor flat = x.reshape({-1, x.size(-1)});
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes.back() = weight.size(0);
  const bool same_dtype = weight.scalar_type() == x.scalar_type() &&
                          (!bias.defined() || bias.scalar_type() == x.scalar_type());
  torch::Tensor y;
  if (kernels::is_int8(weight)) {
    y = kernels::linear_int8(flat, weight, bias).view(sizes);
  } else if (same_dtype && kernels::few_rows(flat)) {
    y = kernels::linear_few_rows(flat, weight, bias).view(sizes);
  } else if (same_dtype && x.is_cpu() && x.scalar_type() == torch::kBFloat16 &&
             kernels::widen_bfloat16_products()) {
    // float32 GEMMs; the sums rounded to bfloat16 once, after the activation.
    y = kernels::linear_bfloat16_in_float32(flat, weight, bias);
    if (activation) kernels::activate_(y, {}, kernel_activation(*activation));
    return y.to(torch::kBFloat16).view(sizes);
  } else if (same_dtype && activation && x.is_cpu() && x.scalar_type() == torch::kFloat32) {
    // libtorch's addmm copies the bias into the output before the product: the product alone,
    // then the bias with the activation in one pass while the rows are warm.
    y = torch::mm(flat, weight.t());
    kernels::activate_(y, bias, kernel_activation(*activation));
    return y.view(sizes);
  } else {
    // oneDNN's bfloat16 GEMM runs on libtorch's OpenMP team, which the models hold to one thread.
    std::optional<TorchThreads> threaded;
    if (x.scalar_type() == torch::kBFloat16) threaded.emplace(num_threads());
    y = torch::linear(x, weight, bias);
  }
  if (!activation) return y;
  if (!kernels::activation_fits(y)) return activate(y, *activation);
  kernels::activate_(y, {}, kernel_activation(*activation));
  return y;
}

}  // namespace

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias) {
  return linear_then(x, weight, bias, std::nullopt);
}

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                     Activation activation) {
  return linear_then(x, weight, bias, activation);
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x) const {
  return linear(x, weight, bias);
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x, Activation activation) const {
  return linear(x, weight, bias, activation);
}

torch::ScalarType LinearImpl::input_dtype() const {
  return kernels::is_int8(weight) ? torch::kFloat32 : weight.scalar_type();
}

void LinearImpl::quantize_int8() {
  if (kernels::is_int8(weight)) return;
  weight = kernels::quantize_int8(weight);
  parameters_["weight"] = weight;  // the float32 weight's memory goes with its last reference
}

void quantize_linears(torch::nn::Module& root) {
  for (const auto& module : root.modules())
    if (auto* linear = dynamic_cast<LinearImpl*>(module.get())) linear->quantize_int8();
}

Conv1dImpl::Conv1dImpl(const Conv1dOptions& c, const torch::TensorOptions& options) : conv(c) {
  ALTO_CHECK(c.in_channels > 0 && c.out_channels > 0 && c.kernel_size > 0 && c.groups > 0 &&
                 c.in_channels % c.groups == 0,
             "Conv1dOptions: bad channels/kernel/groups (", c.in_channels, ", ", c.out_channels,
             ", ", c.kernel_size, ", ", c.groups, ")");
  weight = uninitialised_parameter(
      *this, "weight", {c.out_channels, c.in_channels / c.groups, c.kernel_size}, options);
  if (c.bias) bias = uninitialised_parameter(*this, "bias", {c.out_channels}, options);
}

torch::Tensor Conv1dImpl::forward(const torch::Tensor& x, const Pointwise& before) const {
  return kernels::conv1d(x, weight, bias, conv.stride, conv.padding, conv.dilation, conv.groups,
                         before);
}

ConvTranspose1dImpl::ConvTranspose1dImpl(const ConvTranspose1dOptions& c,
                                         const torch::TensorOptions& options)
    : conv(c) {
  ALTO_CHECK(c.in_channels > 0 && c.out_channels > 0 && c.kernel_size > 0 && c.stride > 0 &&
                 c.groups > 0 && c.in_channels % c.groups == 0 && c.out_channels % c.groups == 0 &&
                 c.padding >= 0,
             "ConvTranspose1dOptions: bad channels/kernel/stride/padding/groups (", c.in_channels,
             ", ", c.out_channels, ", ", c.kernel_size, ", ", c.stride, ", ", c.padding, ", ",
             c.groups, ")");
  weight = uninitialised_parameter(
      *this, "weight", {c.in_channels, c.out_channels / c.groups, c.kernel_size}, options);
  if (c.bias) bias = uninitialised_parameter(*this, "bias", {c.out_channels}, options);
}

torch::Tensor ConvTranspose1dImpl::forward(const torch::Tensor& x, const Pointwise& before) const {
  return kernels::conv_transpose1d(x, weight, bias, conv.stride, conv.padding, conv.groups, before);
}

torch::Tensor ConvTranspose1dImpl::forward_without_bias(const torch::Tensor& x,
                                                        const Pointwise& before) const {
  return kernels::conv_transpose1d(x, weight, {}, conv.stride, conv.padding, conv.groups, before);
}

EmbeddingImpl::EmbeddingImpl(int64_t num_embeddings, int64_t dim,
                             const torch::TensorOptions& options) {
  weight = uninitialised_parameter(*this, "weight", {num_embeddings, dim}, options);
}

torch::Tensor EmbeddingImpl::forward(const torch::Tensor& ids) const {
  return torch::embedding(weight, ids);
}

Activation parse_activation(const std::string& name, const std::string& field) {
  if (name == "gelu") return Activation::kGelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return Activation::kGeluTanh;
  if (name == "relu") return Activation::kRelu;
  if (name == "silu" || name == "swish") return Activation::kSilu;
  throw Unsupported(field + " '" + name +
                    "' is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu, silu)");
}

torch::Tensor activate(const torch::Tensor& x, Activation activation) {
  if (kernels::activation_fits(x)) return kernels::activate(x, {}, kernel_activation(activation));
  // A strided view (a convolution's time tile): its contiguous copy is new, so in place.
  if (x.is_cpu() && x.scalar_type() == torch::kFloat32 && x.layout() == torch::kStrided) {
    torch::Tensor y = x.contiguous();
    kernels::activate_(y, {}, kernel_activation(activation));
    return y;
  }
  switch (activation) {
    case Activation::kGelu:
      return torch::gelu(x);
    case Activation::kGeluTanh:
      return torch::gelu(x, "tanh");
    case Activation::kRelu:
      return torch::relu(x);
    case Activation::kSilu:
      return torch::silu(x);
    case Activation::kElu:
      return torch::elu(x);
  }
  return x;
}

torch::Tensor activate_gated(torch::Tensor gate, const torch::Tensor& up, Activation activation) {
  if (!kernels::gated_activation_fits(gate, up)) return activate(gate, activation) * up;
  kernels::activate_gated_(gate, up, kernel_activation(activation));
  return gate;
}

}  // namespace alto::models::blocks
