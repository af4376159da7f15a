#pragma once
// Named intermediate activations of a forward pass, for layer-by-layer parity checks against a
// PyTorch model: each name is the checkpoint's parameter prefix of the module that produced the
// tensor, so it lines up with what register_forward_hook sees on the Hugging Face model.

#include <torch/types.h>

#include <string>
#include <utility>
#include <vector>

namespace alto::models {

struct Intermediates {
  /// Also record attention probabilities ("<prefix>.self_attn.attn_weights", [B, H, T, S]).
  bool attention_weights = false;
  /// In the order the forward pass produced them.
  std::vector<std::pair<std::string, torch::Tensor>> tensors;

  void add(std::string name, torch::Tensor value) {
    tensors.emplace_back(std::move(name), std::move(value));
  }
};

}  // namespace alto::models
