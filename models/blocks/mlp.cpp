#include "alto/models/blocks/mlp.h"

#include <torch/torch.h>

namespace alto::models::blocks {

MlpImpl::MlpImpl(int64_t hidden_size, int64_t intermediate_size, bool bias, Activation act,
                 const torch::TensorOptions& options)
    : activation(act),
      fc1(register_module("fc1", Linear(hidden_size, intermediate_size, bias, options))),
      fc2(register_module("fc2", Linear(intermediate_size, hidden_size, bias, options))) {}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) const {
  return fc2->forward(fc1->forward(x, activation));
}

GatedMlpImpl::GatedMlpImpl(int64_t hidden_size, int64_t intermediate_size, bool bias,
                           Activation act, const torch::TensorOptions& options)
    : activation(act),
      gate_proj(
          register_module("gate_proj", Linear(hidden_size, intermediate_size, bias, options))),
      up_proj(register_module("up_proj", Linear(hidden_size, intermediate_size, bias, options))),
      down_proj(
          register_module("down_proj", Linear(intermediate_size, hidden_size, bias, options))) {}

torch::Tensor GatedMlpImpl::forward(const torch::Tensor& x) const {
  return down_proj->forward(activate_gated(gate_proj->forward(x), up_proj->forward(x), activation));
}

GatingMlpImpl::GatingMlpImpl(int64_t hidden_size, int64_t intermediate_size, Activation act,
                             const torch::TensorOptions& options)
    : activation(act),
      fc1(register_module("fc1", Linear(hidden_size, intermediate_size, false, options))),
      fc2(register_module("fc2", Linear(intermediate_size / 2, hidden_size, false, options))) {}

torch::Tensor GatingMlpImpl::forward(const torch::Tensor& x) const {
  const torch::Tensor h = fc1->forward(x);
  const int64_t half = h.size(-1) / 2;
  return fc2->forward(activate_gated(h.narrow(-1, 0, half), h.narrow(-1, half, half), activation));
}

}  // namespace alto::models::blocks
