#pragma once
// Activations after a linear layer, with its bias, in one vectorised pass (AVX-512, AVX2 or
// plain loops, chosen at run time like the other kernels), the rows over alto's threads.
// In the whisper-base encoder's profile libtorch's GELU, a new output each call, took 237 ms for
// 20 M values (17 %; 1.9 ns a value when it reuses warm memory), and its addmm copies the bias
// into the output before the product; together they are 2 % of the encoder now.

#include <torch/types.h>

namespace alto::models::kernels {

/// blocks::Activation, spelled here so that kernels depend on nothing above them: GELU (erf),
/// GELU's tanh approximation, ReLU, SiLU, ELU (alpha 1, the SEANets').
enum class Activation { kGelu, kGeluTanh, kRelu, kSilu, kElu };

/// Whether activate() and activate_() take x: a float32 CPU tensor, contiguous.
bool activation_fits(const torch::Tensor& x);

/// activation(x + bias) for x [..., n] and bias [n] float32, or undefined for none (callers
/// check activation_fits(x)). GELU's erf within 1.5e-7 (Abramowitz and Stegun 7.1.26, as
/// PyTorch's vectorised erf), e^x within about one ulp, ELU's e^x - 1 within about two.
torch::Tensor activate(const torch::Tensor& x, const torch::Tensor& bias, Activation activation);
/// The same, written over x.
void activate_(const torch::Tensor& x, const torch::Tensor& bias, Activation activation);

/// Whether activate_gated_() takes gate and up: CPU tensors of one dtype (float32 or bfloat16)
/// and one shape [..., n], each a stack of rows of n adjacent values, evenly spaced (contiguous,
/// or a narrow of a contiguous tensor along its last dimension).
bool gated_activation_fits(const torch::Tensor& gate, const torch::Tensor& up);
/// gate = activation(gate) * up in one pass (callers check gated_activation_fits): a gated MLP's
/// product (SwiGLU with SiLU) without libtorch's two operators and their new tensors. bfloat16
/// rounds the activation, then the product, to bfloat16, as PyTorch 2.x's two operators do
/// (libtorch 1.13's bfloat16 SiLU also rounds each of its own steps).
void activate_gated_(const torch::Tensor& gate, const torch::Tensor& up, Activation activation);

}  // namespace alto::models::kernels
