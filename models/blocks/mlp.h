#pragma once
// The feed-forward blocks of transformer layers, under the checkpoint's names.

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "alto/models/blocks/basic.h"

namespace alto::models::blocks {

/// fc2(act(fc1(x))): Whisper's and Mimi's MLP (GELU).
class MlpImpl : public torch::nn::Module {
 public:
  MlpImpl(int64_t hidden_size, int64_t intermediate_size, bool bias, Activation activation,
          const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x) const;

  Activation activation;
  Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Mlp);

/// down_proj(act(gate_proj(x)) * up_proj(x)): the gated MLP of Llama, Qwen2 and Mistral (SwiGLU
/// with act = silu).
class GatedMlpImpl : public torch::nn::Module {
 public:
  GatedMlpImpl(int64_t hidden_size, int64_t intermediate_size, bool bias, Activation activation,
               const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x) const;

  Activation activation;
  Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(GatedMlp);

/// fc2(act(a) * b) where [a, b] are the two halves of fc1(x): moshi's ActivationGating, the MLP
/// of Moshi and Kyutai STT (fc1 [intermediate_size, hidden], fc2 [hidden, intermediate_size / 2]).
class GatingMlpImpl : public torch::nn::Module {
 public:
  GatingMlpImpl(int64_t hidden_size, int64_t intermediate_size, Activation activation,
                const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x) const;
  Activation activation;
  Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(GatingMlp);

}  // namespace alto::models::blocks
