#pragma once
// alto's models compute under c10::InferenceMode, whose tensors cannot be used freely outside
// it: in-place updates are refused, and libtorch 1.13's oneDNN GELU asserts on them. What a
// model hands back to its caller is therefore an ordinary tensor.

#include <ATen/core/Tensor.h>

#include "alto/models/intermediates.h"

namespace alto::models {

/// `t` itself when it is an ordinary tensor, else an ordinary copy. Call outside InferenceMode.
inline at::Tensor outside_inference(const at::Tensor& t) {
  return t.defined() && t.is_inference() ? t.clone() : t;
}

inline void outside_inference(Intermediates* intermediates) {
  if (!intermediates) return;
  for (auto& item : intermediates->tensors) item.second = outside_inference(item.second);
}

}  // namespace alto::models
