#pragma once
// Products of a few rows with a large weight matrix: what a streaming step computes (Mimi's
// transformers see 2 positions per 80 ms frame, its SEANet's last convolutions 2 frames). They
// are bound by reading the weights: OpenBLAS's GEMM ran 2 rows against Mimi's 100 MB of
// transformer weights 3x slower than one matrix-vector product, and one GEMV per row reads the
// weights once per row. These kernels read each weight once for all rows (AVX2 + FMA where the
// CPU and OS have them, plain loops elsewhere; bfloat16 also with AVX-512 BF16; int8 weights
// with AVX-512 or AVX2), the outputs of large matrices split over alto's threads (a decoder step
// at batch 1 reads GBs of weights).

#include <torch/types.h>

namespace alto::models::kernels {

/// The instruction sets of alto's CPU kernels (these and fused_attention.h's), lowest first;
/// each is used where the CPU has it.
enum class Isa { kPlain, kAvx2, kAvx512, kAvx512Bf16 };
/// Caps the instruction set the kernels may use (so tests run every path); returns the old cap.
Isa limit_isa(Isa cap);
/// The highest instruction set this CPU and OS run, within the cap.
Isa available_isa();

/// The most rows these kernels take.
constexpr int64_t kMaxFewRows = 4;

/// x: float32 or bfloat16 CPU [rows, in] with 1 <= rows <= kMaxFewRows (callers check
/// few_rows()).
bool few_rows(const torch::Tensor& x);

/// x [rows, in] @ weight^T + bias, weight [out, in], bias [out] or undefined -> [rows, out], all
/// of x's dtype (bfloat16: summed in float32, rounded once). The weight may also be a
/// quantize_int8 tensor under float32 x and bias: each output's sum of x times the int8 weights,
/// in float32, times its channel's scale.
torch::Tensor linear_few_rows(const torch::Tensor& x, const torch::Tensor& weight,
                              const torch::Tensor& bias);

/// The same on raw row-major float32 arrays: y [rows, out] = x [rows, in] @ weight [out, in]^T
/// (+ bias [out] unless null), 1 <= rows <= kMaxFewRows.
void linear_few_rows(const float* x, int64_t rows, int64_t in, const float* weight, int64_t out,
                     const float* bias, float* y);

/// Symmetric int8 per output channel of a float32 weight [out, in]: scale[o] = max_i |w[o, i]|
/// / 127 (1 for a row of zeros), q = w / scale rounded half to even; held as libtorch holds
/// quantize_per_channel's result (qint8, per channel on axis 0, zero points 0). Throws
/// alto::InvalidArgument for NaN or infinite weights.
torch::Tensor quantize_int8(const torch::Tensor& weight);
/// Whether `weight` is a quantize_int8 tensor (qint8, per channel on axis 0, two dimensions).
bool is_int8(const torch::Tensor& weight);
/// x [rows, in] float32 @ weight^T + bias for a quantize_int8 weight, any number of rows: a few
/// go to linear_few_rows, more to float32 GEMMs on blocks of the weight dequantized in cache.
torch::Tensor linear_int8(const torch::Tensor& x, const torch::Tensor& weight,
                          const torch::Tensor& bias);

/// Whether bfloat16 products of many rows run as float32 GEMMs (linear_bfloat16_in_float32):
/// on CPUs without AVX-512 BF16, where libtorch's bfloat16 GEMM is a scalar loop (a whisper-base
/// encoder window took 37 s, float32 1.2 s).
bool widen_bfloat16_products();
/// `t` in float32 when `widen` and `t` is defined, else `t` as it is: an operand of a bfloat16
/// product that computes in float32.
torch::Tensor widened_if(bool widen, const torch::Tensor& t);
/// x [rows, in] @ weight^T + bias for bfloat16 x, weight [out, in] and bias [out] (or
/// undefined), summed in float32 GEMMs on blocks of the weight widened in cache; the float32
/// result, for the caller to round once (after an activation, if any).
torch::Tensor linear_bfloat16_in_float32(const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias);

/// x [rows, in] float32 @ weight, weight bfloat16 [in, out] -> float32 [rows, out], summed in
/// float32 GEMMs over blocks of the weight's rows widened in cache: for few rows, where widening
/// the whole weight per call would cost more than the product.
torch::Tensor matmul_bfloat16_in_float32(const torch::Tensor& x, const torch::Tensor& weight);

/// x [rows, in] float32 @ weight, weight [in, out] float32 or bfloat16 -> float32 [rows, out],
/// summed in float32 (bfloat16 widened exactly, as it is read): a transposed convolution's step
/// reads its weight once, without widening it first. Up to kMaxFewRows rows read the weight
/// once; more read it once from memory and once per kMaxFewRows of them from cache, which beat
/// OpenBLAS's and oneDNN's GEMMs up to a few dozen rows (17 rows of a 512 x 3072 weight: float32
/// 1.0 -> 0.7 ms, bfloat16 widened 1.0 -> 0.5 ms).
torch::Tensor matmul_few_rows(const torch::Tensor& x, const torch::Tensor& weight);

}  // namespace alto::models::kernels
