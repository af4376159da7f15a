#include "alto/models/blocks/norm.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "alto/core/threading.h"
#include "alto/models/blocks/basic.h"

namespace alto::models::blocks {

namespace {

// Whether the row kernels below take x: float32 or bfloat16 CPU rows as wide as `parameter`,
// which shares their dtype.
bool on_rows(const torch::Tensor& x, const torch::Tensor& parameter) {
  const auto dtype = x.scalar_type();
  return x.is_cpu() && parameter.is_cpu() && parameter.scalar_type() == dtype && x.dim() >= 1 &&
         x.size(-1) == parameter.size(0) && (dtype == torch::kFloat32 || dtype == torch::kBFloat16);
}

// Whether delta can be added to x on the rows of on_rows(x, ...).
bool adds_on_rows(const torch::Tensor& x, const torch::Tensor& delta) {
  return delta.is_cpu() && delta.scalar_type() == x.scalar_type() && delta.sizes() == x.sizes();
}

// Sums of eight float32 lanes, added pairwise at the end (the vector a compiler makes of them).
template <typename T, typename Term>
float lane_sum(const T* row, int64_t dim, const Term& term) {
  float lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= dim; i += 8)
    for (int j = 0; j < 8; ++j) lanes[j] += term(static_cast<float>(row[i + j]));
  float sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
              ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  for (; i < dim; ++i) sum += term(static_cast<float>(row[i]));
  return sum;
}

// torch.nn.LayerNorm of one row in float32 (biased variance), rounded to T once.
template <typename T>
void layer_norm_row(const T* row, const T* weight, const T* bias, T* out, int64_t dim, float eps) {
  const float mean = lane_sum(row, dim, [](float h) { return h; }) / static_cast<float>(dim);
  const float variance = lane_sum(row, dim, [mean](float h) { return (h - mean) * (h - mean); }) /
                         static_cast<float>(dim);
  const float inverse = 1.f / std::sqrt(variance + eps);
  for (int64_t i = 0; i < dim; ++i)
    out[i] = static_cast<T>((static_cast<float>(row[i]) - mean) * inverse *
                                static_cast<float>(weight[i]) +
                            static_cast<float>(bias[i]));
}

// transformers' RMSNorm of one row in float32, as its operators compute it (the sum of squares in
// eight lanes), rounded to T before the weight unless scale_in_float32.
template <typename T>
void rms_norm_row(const T* row, const T* weight, T* out, int64_t dim, float eps,
                  bool scale_in_float32) {
  const float sum = lane_sum(row, dim, [](float h) { return h * h; });
  const float inverse = 1.f / std::sqrt(sum / static_cast<float>(dim) + eps);
  for (int64_t k = 0; k < dim; ++k) {
    const float normed = static_cast<float>(row[k]) * inverse;
    const float w = static_cast<float>(weight[k]);
    out[k] = scale_in_float32 ? static_cast<T>(normed * w)
                              : static_cast<T>(w * static_cast<float>(static_cast<T>(normed)));
  }
}

// Each contiguous row of x, or of x + delta (rounded to T as torch's add rounds it, and kept in
// `sum`), normalised by norm_row(const T* row, T* out) in one pass instead of the operators'
// several (an RMSNorm row of 896: ~1 us against 12-16 us, measured; a decode step runs two norms
// a layer). `make_row(T{})` gives norm_row for T.
template <typename MakeRow>
NormedSum norm_rows(const torch::Tensor& x, const torch::Tensor& delta, const MakeRow& make_row) {
  const torch::Tensor xc = x.contiguous();
  const torch::Tensor dc = delta.defined() ? delta.contiguous() : delta;
  NormedSum out;
  out.normed = torch::empty_like(xc);
  if (dc.defined()) out.sum = torch::empty_like(xc);
  const int64_t dim = x.size(-1), rows = dim > 0 ? xc.numel() / dim : 0;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(dim, 1));
  auto run = [&](auto zero) {
    using T = decltype(zero);
    const auto norm_row = make_row(zero);
    const T* xs = xc.data_ptr<T>();
    const T* ds = dc.defined() ? dc.data_ptr<T>() : nullptr;
    T* sums = dc.defined() ? out.sum.data_ptr<T>() : nullptr;
    T* ys = out.normed.data_ptr<T>();
    alto::parallel_for(0, rows, grain, [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) {
        const T* row = xs + r * dim;
        if (ds) {
          T* sum = sums + r * dim;
          const T* d = ds + r * dim;
          for (int64_t i = 0; i < dim; ++i)
            sum[i] = static_cast<T>(static_cast<float>(row[i]) + static_cast<float>(d[i]));
          row = sum;
        }
        norm_row(row, ys + r * dim);
      }
    });
  };
  if (x.scalar_type() == torch::kFloat32)
    run(float{});
  else
    run(c10::BFloat16{});
  return out;
}

}  // namespace

LayerNormImpl::LayerNormImpl(int64_t dim, double eps_, const torch::TensorOptions& options)
    : eps(eps_) {
  weight = uninitialised_parameter(*this, "weight", {dim}, options);
  bias = uninitialised_parameter(*this, "bias", {dim}, options);
}

namespace {

NormedSum layer_norm_rows(const torch::Tensor& x, const torch::Tensor& delta,
                          const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
  const torch::Tensor w = weight.contiguous(), b = bias.contiguous();
  const float e = static_cast<float>(eps);
  return norm_rows(x, delta, [&](auto zero) {
    using T = decltype(zero);
    return [&, e](const T* row, T* out) {
      layer_norm_row(row, w.data_ptr<T>(), b.data_ptr<T>(), out, w.size(0), e);
    };
  });
}

}  // namespace

torch::Tensor LayerNormImpl::forward(const torch::Tensor& x) const {
  // libtorch 1.13's CPU layer_norm in bfloat16 took 6.1 ms for 1500 x 512 (float32 0.8 ms), the
  // row kernel 1.1 ms.
  if (x.scalar_type() == torch::kBFloat16 && on_rows(x, weight) && on_rows(x, bias))
    return layer_norm_rows(x, {}, weight, bias, eps).normed;
  return torch::layer_norm(x, {weight.size(0)}, weight, bias, eps);
}

NormedSum LayerNormImpl::forward_sum(const torch::Tensor& x, const torch::Tensor& delta) const {
  if (on_rows(x, weight) && on_rows(x, bias) && adds_on_rows(x, delta))
    return layer_norm_rows(x, delta, weight, bias, eps);
  torch::Tensor sum = x + delta;
  return {sum, forward(sum)};
}

RmsNormImpl::RmsNormImpl(int64_t dim, double eps_, const torch::TensorOptions& options,
                         bool scale_in_float32_)
    : eps(eps_), scale_in_float32(scale_in_float32_) {
  weight = uninitialised_parameter(*this, "weight", {dim}, options);
}

namespace {

NormedSum rms_norm_rows(const torch::Tensor& x, const torch::Tensor& delta,
                        const torch::Tensor& weight, double eps, bool scale_in_float32) {
  const torch::Tensor w = weight.contiguous();
  const float e = static_cast<float>(eps);
  return norm_rows(x, delta, [&](auto zero) {
    using T = decltype(zero);
    return [&, e](const T* row, T* out) {
      rms_norm_row(row, w.data_ptr<T>(), out, w.size(0), e, scale_in_float32);
    };
  });
}

}  // namespace

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) const {
  if (on_rows(x, weight)) return rms_norm_rows(x, {}, weight, eps, scale_in_float32).normed;
  const torch::Tensor h = x.to(torch::kFloat32);
  const torch::Tensor normed = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
  if (scale_in_float32) return (normed * weight.to(torch::kFloat32)).to(x.scalar_type());
  return weight * normed.to(x.scalar_type());
}

NormedSum RmsNormImpl::forward_sum(const torch::Tensor& x, const torch::Tensor& delta) const {
  if (on_rows(x, weight) && adds_on_rows(x, delta))
    return rms_norm_rows(x, delta, weight, eps, scale_in_float32);
  torch::Tensor sum = x + delta;
  return {sum, forward(sum)};
}

}  // namespace alto::models::blocks
