#pragma once
// The parameter-holding building blocks of alto's models, with torch.nn's parameter names and
// shapes. Unlike torch::nn's modules they leave their tensors uninitialised: every value comes
// from a checkpoint (CheckpointBinder), and random initialisation of a large model would cost
// seconds for nothing.

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <functional>
#include <string>

namespace alto::models::blocks {

/// A pointwise function applied to each input tile before the convolution (an activation
/// such as ELU or Snake). It must map 0 to 0 where the convolution pads: it runs on the padded
/// tile.
using Pointwise = std::function<torch::Tensor(const torch::Tensor&)>;

/// A parameter of `module` named `name`, allocated but not initialised: every value comes from a
/// checkpoint.
torch::Tensor uninitialised_parameter(torch::nn::Module& module, const std::string& name,
                                      torch::IntArrayRef shape,
                                      const torch::TensorOptions& options);

/// Hugging Face's ACT2FN names: "gelu" (erf), "gelu_new" / "gelu_pytorch_tanh" (tanh
/// approximation), "relu", "silu" / "swish". Throws alto::Unsupported naming `field` otherwise.
/// kElu (alpha 1) is the SEANets' fixed activation, no config names it.
/// float32 CPU tensors run alto's vectorised kernels, other dtypes and devices libtorch's.
enum class Activation { kGelu, kGeluTanh, kRelu, kSilu, kElu };
Activation parse_activation(const std::string& name, const std::string& field);
torch::Tensor activate(const torch::Tensor& x, Activation activation);
/// activate(gate, activation) * up, a gated MLP's product, in one pass where the CPU kernel takes
/// the operands (float32 or bfloat16 rows): gate is then written over, so callers pass a
/// temporary.
torch::Tensor activate_gated(torch::Tensor gate, const torch::Tensor& up, Activation activation);

/// torch::linear(x, weight, bias) for x [..., in]. A few rows (a decoding or streaming step)
/// go to the kernels that read each weight once, on all intra-op threads (models/internal/
/// few_rows.h): libtorch's matrix-vector products run far below the memory bandwidth. The
/// weight may be int8 (kernels::quantize_int8) under float32 x.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias = {});

/// activate(linear(x, weight, bias), activation), in float32 on the CPU with the bias and the
/// activation in one pass over the product (models/internal/activation.h).
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                     Activation activation);

/// y = x W^T + b (torch.nn.Linear): weight [out, in], bias [out].
class LinearImpl : public torch::nn::Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features, bool bias,
             const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x) const;
  /// activate(forward(x), activation), fused as blocks::linear fuses it.
  torch::Tensor forward(const torch::Tensor& x, Activation activation) const;
  /// The dtype forward takes: the weight's, float32 for int8 weights.
  torch::ScalarType input_dtype() const;
  /// Replaces the float32 weight by its int8 per-channel form (kernels::quantize_int8), under
  /// the same parameter name; the bias stays float32.
  void quantize_int8();

  torch::Tensor weight, bias;
};
TORCH_MODULE(Linear);

/// LinearImpl::quantize_int8 on every Linear in `root` and below (LoadOptions::linear_weights
/// int8), once its weights are loaded.
void quantize_linears(torch::nn::Module& root);

/// torch.nn.Conv1d: weight [out, in / groups, kernel], bias [out].
struct Conv1dOptions {
  int64_t in_channels = 0, out_channels = 0, kernel_size = 1;
  int64_t stride = 1, padding = 0, dilation = 1, groups = 1;
  bool bias = true;
};
class Conv1dImpl : public torch::nn::Module {
 public:
  Conv1dImpl(const Conv1dOptions& conv, const torch::TensorOptions& options);
  /// x: [batch, in_channels, time]. `before`: a pointwise activation applied to the input
  /// first, tile by tile on CPU (layers/conv.h; it must map 0 to 0 where the conv pads).
  torch::Tensor forward(const torch::Tensor& x, const Pointwise& before = {}) const;

  Conv1dOptions conv;
  torch::Tensor weight, bias;
};
TORCH_MODULE(Conv1d);

/// torch.nn.ConvTranspose1d (output_padding 0): weight [in, out / groups, kernel], bias [out].
struct ConvTranspose1dOptions {
  int64_t in_channels = 0, out_channels = 0, kernel_size = 1, stride = 1, padding = 0;
  int64_t groups = 1;
  bool bias = true;
};
class ConvTranspose1dImpl : public torch::nn::Module {
 public:
  ConvTranspose1dImpl(const ConvTranspose1dOptions& conv, const torch::TensorOptions& options);
  /// x: [batch, in_channels, time] -> [batch, out_channels,
  /// (time - 1) * stride + kernel - 2 * padding]; `before` as Conv1d's.
  torch::Tensor forward(const torch::Tensor& x, const Pointwise& before = {}) const;
  /// As forward, without the bias (streaming overlap-adds partial outputs, then adds it once).
  torch::Tensor forward_without_bias(const torch::Tensor& x, const Pointwise& before = {}) const;

  ConvTranspose1dOptions conv;
  torch::Tensor weight, bias;
};
TORCH_MODULE(ConvTranspose1d);

/// torch.nn.Embedding: weight [num_embeddings, dim].
class EmbeddingImpl : public torch::nn::Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t dim, const torch::TensorOptions& options);
  /// ids: int64 of any shape -> [..., dim]
  torch::Tensor forward(const torch::Tensor& ids) const;

  torch::Tensor weight;
};
TORCH_MODULE(Embedding);

}  // namespace alto::models::blocks
