#pragma once
// Normalisation layers with torch.nn's / transformers' parameter names.

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace alto::models::blocks {

/// A pre-norm layer's residual add and the norm that reads its result: sum = x + delta (in their
/// dtype, as torch adds them) and normed = norm(sum).
struct NormedSum {
  torch::Tensor sum, normed;
};

/// torch.nn.LayerNorm over the last dimension: weight and bias [dim].
class LayerNormImpl : public torch::nn::Module {
 public:
  LayerNormImpl(int64_t dim, double eps, const torch::TensorOptions& options);
  /// torch::layer_norm; bfloat16 CPU rows in the row kernel of forward_sum (libtorch's is
  /// several times slower there).
  torch::Tensor forward(const torch::Tensor& x) const;
  /// {x + delta, forward(x + delta)}: one pass over each row for float32 or bfloat16 CPU tensors
  /// of one shape (mean and variance summed in float32 lanes rather than libtorch's order); the
  /// two operations elsewhere.
  NormedSum forward_sum(const torch::Tensor& x, const torch::Tensor& delta) const;

  double eps;
  torch::Tensor weight, bias;
};
TORCH_MODULE(LayerNorm);

/// transformers' LlamaRMSNorm / Qwen2RMSNorm / MistralRMSNorm: x / sqrt(mean(x^2) + eps), computed
/// in float32 whatever the input's dtype, cast back, then times weight [dim]. With
/// `scale_in_float32` the weight multiplies before the cast (Moshi's and Kyutai STT's RMSNorm).
class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(int64_t dim, double eps, const torch::TensorOptions& options,
              bool scale_in_float32 = false);
  torch::Tensor forward(const torch::Tensor& x) const;
  /// {x + delta, forward(x + delta)}: one pass over each row for float32 or bfloat16 CPU tensors
  /// of one shape (results equal to the two operations'); the two operations elsewhere.
  NormedSum forward_sum(const torch::Tensor& x, const torch::Tensor& delta) const;

  double eps;
  bool scale_in_float32;
  torch::Tensor weight;
};
TORCH_MODULE(RmsNorm);

}  // namespace alto::models::blocks
