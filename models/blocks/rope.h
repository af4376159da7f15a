#pragma once
// Rotary position embeddings as transformers computes them (modeling_rope_utils): inverse
// frequencies from rope_theta and the checkpoint's rope_scaling, cos/sin per position in float32,
// applied in the rotate-half layout (Llama, Qwen2, Mistral, Mimi, Moshi) or the interleaved one
// (GPT-J style pairs, as Meta's original Llama weights and some GGUF exports lay out q and k).

#include <torch/types.h>

#include <string>
#include <utility>

#include "alto/core/options.h"

namespace alto::models::blocks {

/// config.json's `rope_scaling` object; `rope_type` (or the older `type`) names the method.
struct RopeScaling {
  /// "default" (none), "linear" (positions / factor), "llama3" (Llama 3.1's wavelength bands).
  std::string rope_type = "default";
  double factor = 1.0;
  double low_freq_factor = 1.0;                     // llama3
  double high_freq_factor = 4.0;                    // llama3
  int64_t original_max_position_embeddings = 8192;  // llama3

  static const OptionSchema<RopeScaling>& schema();
  /// alto::Unsupported for a rope_type alto lacks, alto::InvalidArgument naming a bad field.
  void validate() const;
};

struct RotaryEmbeddingOptions {
  int64_t head_dim = 64;  // the rotated width
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool interleaved = false;

  void validate() const;
};

/// Immutable after construction; cos_sin and apply are const and thread-safe.
class RotaryEmbedding {
 public:
  explicit RotaryEmbedding(RotaryEmbeddingOptions options);

  /// float32 [head_dim / 2], transformers' inv_freq after rope scaling.
  const torch::Tensor& inv_freq() const { return inv_freq_; }
  /// positions: int64 [..., T] -> cos, sin float32 [..., T, head_dim] in the layout apply()
  /// expects (rotate-half: the frequencies twice, [f0 .. fn, f0 .. fn]; interleaved: each
  /// twice in a row).
  std::pair<torch::Tensor, torch::Tensor> cos_sin(const torch::Tensor& positions) const;
  /// x: [batch, heads, T, head_dim]; cos/sin [T, head_dim] or [batch, T, head_dim] (per-row
  /// positions, as left-padded batches have) -> x rotated, in x's dtype.
  torch::Tensor apply(const torch::Tensor& x, const torch::Tensor& cos,
                      const torch::Tensor& sin) const;

  const RotaryEmbeddingOptions& options() const { return options_; }

 private:
  RotaryEmbeddingOptions options_;
  torch::Tensor inv_freq_;
};

}  // namespace alto::models::blocks
