#include "alto/models/blocks/rope.h"

#include <torch/torch.h>

#include <cmath>

#include "alto/core/error.h"

namespace alto::models::blocks {

const OptionSchema<RopeScaling>& RopeScaling::schema() {
  static const auto schema =
      OptionSchema<RopeScaling>("RopeScaling")
          // Older configs say "type"; "rope_type", read after it, wins as in transformers.
          .field("type", &RopeScaling::rope_type, "Older spelling of rope_type")
          .field("rope_type", &RopeScaling::rope_type, "default | linear | llama3")
          .field("factor", &RopeScaling::factor, "Scaling factor")
          .field("low_freq_factor", &RopeScaling::low_freq_factor, "llama3: low band")
          .field("high_freq_factor", &RopeScaling::high_freq_factor, "llama3: high band")
          .field("original_max_position_embeddings", &RopeScaling::original_max_position_embeddings,
                 "llama3: trained context");
  return schema;
}

void RopeScaling::validate() const {
  ALTO_CHECK_AS(Unsupported,
                rope_type == "default" || rope_type == "linear" || rope_type == "llama3",
                "rope_scaling.rope_type '", rope_type,
                "' is not one alto computes (default, linear, llama3)");
  ALTO_CHECK(factor > 0, "rope_scaling.factor must be > 0, got ", factor);
  if (rope_type == "llama3") {
    ALTO_CHECK(high_freq_factor > low_freq_factor && low_freq_factor > 0,
               "rope_scaling: high_freq_factor (", high_freq_factor,
               ") must exceed low_freq_factor (", low_freq_factor, ") > 0");
    ALTO_CHECK(original_max_position_embeddings > 0,
               "rope_scaling.original_max_position_embeddings must be > 0, got ",
               original_max_position_embeddings);
  }
}

void RotaryEmbeddingOptions::validate() const {
  ALTO_CHECK(head_dim > 0 && head_dim % 2 == 0,
             "RotaryEmbeddingOptions.head_dim must be even and > 0, got ", head_dim);
  ALTO_CHECK(rope_theta > 0, "RotaryEmbeddingOptions.rope_theta must be > 0, got ", rope_theta);
  rope_scaling.validate();
}

namespace {

// transformers' _compute_default_rope_parameters then the scaling of rope_type, in float32 as
// transformers computes them.
torch::Tensor scaled_inv_freq(const RotaryEmbeddingOptions& o) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  const torch::Tensor exponents =
      torch::arange(0, o.head_dim, 2, torch::TensorOptions().dtype(torch::kInt64))
          .to(torch::kFloat32) /
      static_cast<double>(o.head_dim);
  torch::Tensor inv_freq = 1.0 / torch::pow(torch::tensor(o.rope_theta, f32), exponents);
  const RopeScaling& s = o.rope_scaling;
  if (s.rope_type == "linear") return inv_freq / s.factor;
  if (s.rope_type != "llama3") return inv_freq;
  // _compute_llama3_parameters: long wavelengths are divided by factor, short ones kept, and
  // the band between interpolated smoothly.
  const double old_context = static_cast<double>(s.original_max_position_embeddings);
  const double low_freq_wavelen = old_context / s.low_freq_factor;
  const double high_freq_wavelen = old_context / s.high_freq_factor;
  const torch::Tensor wavelen = 2 * M_PI / inv_freq;
  torch::Tensor llama = torch::where(wavelen > low_freq_wavelen, inv_freq / s.factor, inv_freq);
  const torch::Tensor smooth =
      (old_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  const torch::Tensor smoothed = (1 - smooth) * llama / s.factor + smooth * llama;
  const torch::Tensor medium = torch::logical_not(wavelen < high_freq_wavelen)
                                   .logical_and(torch::logical_not(wavelen > low_freq_wavelen));
  return torch::where(medium, smoothed, llama);
}

}  // namespace

RotaryEmbedding::RotaryEmbedding(RotaryEmbeddingOptions options) : options_(std::move(options)) {
  options_.validate();
  inv_freq_ = scaled_inv_freq(options_);
}

std::pair<torch::Tensor, torch::Tensor> RotaryEmbedding::cos_sin(
    const torch::Tensor& positions) const {
  ALTO_CHECK(!positions.is_floating_point(), "RotaryEmbedding: positions must be integers, got ",
             positions.scalar_type());
  const torch::Tensor inv_freq = inv_freq_.to(positions.device());
  const torch::Tensor angles = positions.to(torch::kFloat32).unsqueeze(-1) * inv_freq;
  const torch::Tensor doubled =
      options_.interleaved ? angles.repeat_interleave(2, -1) : torch::cat({angles, angles}, -1);
  return {doubled.cos(), doubled.sin()};
}

namespace {

// apply()'s x * cos + rotated(x) * sin for a few positions on CPU in one pass, where libtorch ran
// some ten operators whose dispatch outweighed their work (two per layer of every decode step).
// The same roundings as those operators: cos and sin in x's dtype, each product and the sum
// rounded to it (bfloat16), and no fused multiply-add (CMakeLists.txt builds this file with
// -ffp-contract=off). x [B, H, T, D] with unit stride in D; cos, sin float32 [T, D] or [B, T, D].
template <typename T>
torch::Tensor rotate_few_positions(const torch::Tensor& x, const torch::Tensor& cos,
                                   const torch::Tensor& sin, bool interleaved) {
  torch::Tensor out = torch::empty_like(x);
  const int64_t batch = x.size(0), heads = x.size(1), time = x.size(2), dim = x.size(3);
  const int64_t half = dim / 2, table_batch_stride = cos.dim() == 3 ? time * dim : 0;
  const torch::Tensor c = cos.contiguous(), s = sin.contiguous();
  const T* xs = x.data_ptr<T>();
  T* os = out.data_ptr<T>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < time; ++t) {
        const T* xr = xs + b * x.stride(0) + h * x.stride(1) + t * x.stride(2);
        T* yr = os + b * out.stride(0) + h * out.stride(1) + t * out.stride(2);
        const float* cr = c.data_ptr<float>() + b * table_batch_stride + t * dim;
        const float* sr = s.data_ptr<float>() + b * table_batch_stride + t * dim;
        for (int64_t j = 0; j < dim; ++j) {
          // (x0, x1) -> (-x1, x0) within each pair, or the halves swapped, the first negated.
          const T rotated = interleaved ? (j % 2 == 0 ? -xr[j + 1] : xr[j - 1])
                                        : (j < half ? -xr[j + half] : xr[j - half]);
          const T along = xr[j] * static_cast<T>(cr[j]);
          const T across = rotated * static_cast<T>(sr[j]);
          yr[j] = along + across;
        }
      }
  return out;
}

// Positions few enough that operator dispatch, not arithmetic, sets the time.
constexpr int64_t kFewPositions = 4;

bool rotates_in_one_pass(const torch::Tensor& x, const torch::Tensor& cos,
                         const torch::Tensor& sin) {
  return x.is_cpu() && x.size(0) * x.size(2) <= kFewPositions && x.stride(3) == 1 &&
         (x.scalar_type() == torch::kFloat32 || x.scalar_type() == torch::kBFloat16) &&
         cos.scalar_type() == torch::kFloat32 && sin.scalar_type() == torch::kFloat32 &&
         cos.is_cpu() && sin.is_cpu() && cos.sizes() == sin.sizes() &&
         (cos.dim() == 2 || (cos.dim() == 3 && cos.size(0) == x.size(0))) &&
         cos.size(-2) == x.size(2) && cos.size(-1) == x.size(3);
}

}  // namespace

torch::Tensor RotaryEmbedding::apply(const torch::Tensor& x, const torch::Tensor& cos,
                                     const torch::Tensor& sin) const {
  ALTO_CHECK(x.dim() == 4 && x.size(-1) == options_.head_dim,
             "RotaryEmbedding: x must be [batch, heads, T, ", options_.head_dim, "], got ",
             x.sizes());
  if (rotates_in_one_pass(x, cos, sin))
    return x.scalar_type() == torch::kFloat32
               ? rotate_few_positions<float>(x, cos, sin, options_.interleaved)
               : rotate_few_positions<c10::BFloat16>(x, cos, sin, options_.interleaved);
  // [T, D] broadcasts over batch and heads; [B, T, D] over heads.
  const torch::Tensor c = (cos.dim() == 3 ? cos.unsqueeze(1) : cos).to(x.scalar_type());
  const torch::Tensor s = (sin.dim() == 3 ? sin.unsqueeze(1) : sin).to(x.scalar_type());
  torch::Tensor rotated;
  if (options_.interleaved) {
    // (x0, x1) -> (-x1, x0) within each pair.
    const torch::Tensor pairs = x.unflatten(-1, {options_.head_dim / 2, 2});
    rotated = torch::stack({-pairs.select(-1, 1), pairs.select(-1, 0)}, -1).flatten(-2);
  } else {
    const int64_t half = options_.head_dim / 2;
    rotated = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  }
  return x * c + rotated * s;
}

}  // namespace alto::models::blocks
