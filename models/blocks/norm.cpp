#include "alto/models/blocks/norm.h"

#include <torch/torch.h>

#include "alto/models/blocks/basic.h"

namespace alto::models::blocks {

LayerNormImpl::LayerNormImpl(int64_t dim, double eps_, const torch::TensorOptions& options)
    : eps(eps_) {
  weight = uninitialised_parameter(*this, "weight", {dim}, options);
  bias = uninitialised_parameter(*this, "bias", {dim}, options);
}

torch::Tensor LayerNormImpl::forward(const torch::Tensor& x) const {
  return torch::layer_norm(x, {weight.size(0)}, weight, bias, eps);
}

RmsNormImpl::RmsNormImpl(int64_t dim, double eps_, const torch::TensorOptions& options,
                         bool scale_in_float32_)
    : eps(eps_), scale_in_float32(scale_in_float32_) {
  weight = uninitialised_parameter(*this, "weight", {dim}, options);
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) const {
  const torch::Tensor h = x.to(torch::kFloat32);
  const torch::Tensor normed = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
  if (scale_in_float32) return (normed * weight.to(torch::kFloat32)).to(x.scalar_type());
  return weight * normed.to(x.scalar_type());
}

}  // namespace alto::models::blocks
