#pragma once
// Whisper's encoder modules and the attention its decoder shares, registered under the
// checkpoint's names. Internal to models/whisper/.

#include <torch/torch.h>

#include <array>
#include <cmath>
#include <sstream>
#include <string>

#include "alto/models/blocks/attention.h"
#include "alto/models/blocks/basic.h"
#include "alto/models/blocks/norm.h"
#include "alto/models/internal/few_rows.h"
#include "alto/models/internal/fused_attention.h"
#include "alto/models/whisper/config.h"

namespace alto::models::whisper_internal {

using blocks::Activation;
using blocks::Conv1d;
using blocks::Conv1dOptions;
using blocks::Embedding;
using blocks::LayerNorm;
using blocks::Linear;

// transformers' nn.LayerNorm default: Whisper never overrides it.
constexpr double kLayerNormEps = 1e-5;

// [batch, time, heads * head_dim] <-> [batch, heads, time, head_dim]
inline torch::Tensor split_heads(const torch::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, -1}).transpose(1, 2);
}
inline torch::Tensor merge_heads(const torch::Tensor& x) {
  return x.transpose(1, 2).reshape({x.size(0), x.size(2), -1});
}

// WhisperAttention's parameters under their checkpoint names. After loading, the projections
// are fused into one GEMM: q, k and v for self-attention; k and v for the audio of
// cross-attention (each attention builds only the fused weights it uses: a large-v3 encoder's
// unused copies would hold 0.6 GB). The query scaling head_dim^-0.5 is folded into the query
// weights, which is exact for Whisper's power-of-four head sizes (64 in every released model).
class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(int64_t dim, int64_t heads_, const torch::TensorOptions& options)
      : heads(heads_),
        q_proj(register_module("q_proj", Linear(dim, dim, true, options))),
        k_proj(register_module("k_proj", Linear(dim, dim, false, options))),
        v_proj(register_module("v_proj", Linear(dim, dim, true, options))),
        out_proj(register_module("out_proj", Linear(dim, dim, true, options))) {}

  // For project_qkv.
  void fuse_self_attention() {
    qkv_weight = torch::cat({scaled_q_weight(), k_proj->weight, v_proj->weight});
    qkv_bias = torch::cat({scaled_q_bias(), torch::zeros_like(v_proj->bias), v_proj->bias});
  }
  // For project_q and project_kv.
  void fuse_cross_attention() {
    q_weight = scaled_q_weight();
    q_bias = scaled_q_bias();
    kv_weight = torch::cat({k_proj->weight, v_proj->weight});
    kv_bias = torch::cat({torch::zeros_like(v_proj->bias), v_proj->bias});
  }
  // The fused projections and out_proj as int8 per-channel weights (kernels::quantize_int8;
  // LoadOptions::linear_weights int8), after fusing: the products then run with float32
  // activations, the biases stay float32.
  void quantize_int8() {
    for (torch::Tensor* weight : {&qkv_weight, &q_weight, &kv_weight})
      if (weight->defined()) *weight = kernels::quantize_int8(*weight);
    out_proj->quantize_int8();
  }

  // x [B, T, D] -> (q, k, v), each [B, H, T, hd]; a decoder step's few rows read the weights
  // once (blocks::linear).
  std::array<torch::Tensor, 3> project_qkv(const torch::Tensor& x) const {
    auto parts = blocks::linear(x, qkv_weight, qkv_bias).chunk(3, -1);
    return {split_heads(parts[0], heads), split_heads(parts[1], heads),
            split_heads(parts[2], heads)};
  }
  // audio [A, S, D] -> (k, v), each [A, H, S, hd], contiguous for the repeated decoder steps
  std::array<torch::Tensor, 2> project_kv(const torch::Tensor& audio) const {
    auto parts = blocks::linear(audio, kv_weight, kv_bias).chunk(2, -1);
    return {split_heads(parts[0], heads).contiguous(), split_heads(parts[1], heads).contiguous()};
  }
  torch::Tensor project_q(const torch::Tensor& x) const {
    return split_heads(blocks::linear(x, q_weight, q_bias), heads);
  }

  int64_t heads;
  Linear q_proj, k_proj, v_proj, out_proj;
  torch::Tensor qkv_weight, qkv_bias, kv_weight, kv_bias, q_weight, q_bias;

 private:
  double scaling() const {
    return std::pow(static_cast<double>(q_proj->weight.size(0) / heads), -0.5);
  }
  torch::Tensor scaled_q_weight() const { return q_proj->weight * scaling(); }
  torch::Tensor scaled_q_bias() const { return q_proj->bias * scaling(); }
};
TORCH_MODULE(Attention);

// softmax(q k^T + mask) v for q [B, H, T, hd], k/v [B, H, S, hd]; q is pre-scaled. The mask:
// the band (causality past a KV cache) and key padding [B, S] (Qwen2-Audio's valid frames).
// float32 and bfloat16 on the CPU run the fused kernel; recording the weights or other dtypes and
// devices take the explicit product.
inline torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            const kernels::AttentionBand& band, const torch::Tensor& key_padding,
                            torch::Tensor* weights) {
  if (!weights && kernels::fused_attention_fits(q, k, v))
    return kernels::fused_attention(q, k, v, 1.0, band, key_padding);
  torch::Tensor scores = torch::matmul(q, k.transpose(-1, -2));
  if (band.causal || band.window > 0 || key_padding.defined())
    scores.add_(blocks::attention_mask(q.size(2), k.size(2), band.query_offset,
                                       {band.causal, band.window}, key_padding,
                                       scores.scalar_type(), scores.device()));
  torch::Tensor probs = torch::softmax(scores, -1);
  if (weights) *weights = probs;
  return torch::matmul(probs, v);
}

inline torch::Tensor feed_forward(const torch::Tensor& x, const Linear& fc1, const Linear& fc2,
                                  Activation activation) {
  return fc2->forward(fc1->forward(x, activation));
}

class EncoderLayerImpl : public torch::nn::Module {
 public:
  EncoderLayerImpl(const WhisperConfig& c, const torch::TensorOptions& o)
      : self_attn(register_module("self_attn", Attention(c.d_model, c.encoder_attention_heads, o))),
        self_attn_layer_norm(
            register_module("self_attn_layer_norm", LayerNorm(c.d_model, kLayerNormEps, o))),
        fc1(register_module("fc1", Linear(c.d_model, c.encoder_ffn_dim, true, o))),
        fc2(register_module("fc2", Linear(c.encoder_ffn_dim, c.d_model, true, o))),
        final_layer_norm(
            register_module("final_layer_norm", LayerNorm(c.d_model, kLayerNormEps, o))) {}

  Attention self_attn;
  LayerNorm self_attn_layer_norm;
  Linear fc1, fc2;
  LayerNorm final_layer_norm;
};
TORCH_MODULE(EncoderLayer);

class EncoderImpl : public torch::nn::Module {
 public:
  EncoderImpl(const WhisperConfig& c, const torch::TensorOptions& o)
      : conv1(
            register_module("conv1", Conv1d(Conv1dOptions{c.num_mel_bins, c.d_model, 3, 1, 1}, o))),
        conv2(register_module("conv2", Conv1d(Conv1dOptions{c.d_model, c.d_model, 3, 2, 1}, o))),
        embed_positions(
            register_module("embed_positions", Embedding(c.max_source_positions, c.d_model, o))),
        layers(register_module("layers", torch::nn::ModuleList())),
        layer_norm(register_module("layer_norm", LayerNorm(c.d_model, kLayerNormEps, o))) {
    for (int64_t i = 0; i < c.encoder_layers; ++i) layers->push_back(EncoderLayer(c, o));
  }

  Conv1d conv1, conv2;
  Embedding embed_positions;
  torch::nn::ModuleList layers;
  LayerNorm layer_norm;
};
TORCH_MODULE(Encoder);

inline std::string shape_of(const torch::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

}  // namespace alto::models::whisper_internal
