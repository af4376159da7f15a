#include "alto/models/blocks/norm.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "alto/core/threading.h"
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

namespace {

// transformers' RMSNorm of one row in float32, as its operators compute it (the sum of squares in
// eight lanes), rounded to T before the weight unless scale_in_float32.
template <typename T>
void rms_norm_row(const T* row, const T* weight, T* out, int64_t dim, float eps,
                  bool scale_in_float32) {
  float lanes[8] = {};
  for (int64_t i = 0; i < dim; ++i) {
    const float h = static_cast<float>(row[i]);
    lanes[i % 8] += h * h;
  }
  const float sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
                    ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  const float inverse = 1.f / std::sqrt(sum / static_cast<float>(dim) + eps);
  for (int64_t k = 0; k < dim; ++k) {
    const float normed = static_cast<float>(row[k]) * inverse;
    const float w = static_cast<float>(weight[k]);
    out[k] = scale_in_float32 ? static_cast<T>(normed * w)
                              : static_cast<T>(w * static_cast<float>(static_cast<T>(normed)));
  }
}

// Contiguous CPU rows in one pass each instead of seven tensor operators (one row of 896: ~1 us
// against 12-16 us, measured; a decode step runs two norms a layer).
template <typename T>
void rms_norm_rows(const T* x, const T* weight, T* y, int64_t rows, int64_t dim, float eps,
                   bool scale_in_float32) {
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(dim, 1));
  alto::parallel_for(0, rows, grain, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r)
      rms_norm_row(x + r * dim, weight, y + r * dim, dim, eps, scale_in_float32);
  });
}

}  // namespace

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) const {
  const auto dtype = x.scalar_type();
  if (x.is_cpu() && weight.is_cpu() && weight.scalar_type() == dtype && x.dim() >= 1 &&
      x.size(-1) == weight.size(0) && (dtype == torch::kFloat32 || dtype == torch::kBFloat16)) {
    const torch::Tensor xc = x.contiguous();
    const torch::Tensor w = weight.contiguous();
    torch::Tensor y = torch::empty_like(xc);
    const int64_t dim = x.size(-1), rows = dim > 0 ? xc.numel() / dim : 0;
    if (dtype == torch::kFloat32)
      rms_norm_rows(xc.data_ptr<float>(), w.data_ptr<float>(), y.data_ptr<float>(), rows, dim,
                    static_cast<float>(eps), scale_in_float32);
    else
      rms_norm_rows(xc.data_ptr<c10::BFloat16>(), w.data_ptr<c10::BFloat16>(),
                    y.data_ptr<c10::BFloat16>(), rows, dim, static_cast<float>(eps),
                    scale_in_float32);
    return y;
  }
  const torch::Tensor h = x.to(torch::kFloat32);
  const torch::Tensor normed = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
  if (scale_in_float32) return (normed * weight.to(torch::kFloat32)).to(x.scalar_type());
  return weight * normed.to(x.scalar_type());
}

}  // namespace alto::models::blocks
