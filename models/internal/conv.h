#pragma once
// One-dimensional convolutions for long signals. On CPU, libtorch's oneDNN kernels run a
// convolution over a whole activation at once and slow down 5-10x once the activation outgrows
// the cache (a 96-channel, 7-tap convolution: ~150 GFLOP/s on 4096 samples, ~20 on 88200;
// slow_conv_transpose2d is slower still). These functions compute the same sums over time tiles
// that stay in cache, one tile per task on libtorch's intra-op threads, and give the reference
// result to float rounding; outputs come from alto::empty_activation. Other devices call
// libtorch directly.

#include <torch/types.h>

#include <functional>

namespace alto::models::kernels {

/// An activation applied to each input tile before the convolution (blocks::Pointwise: the same
/// type, spelled here so that kernels depend on nothing above them).
using Pointwise = std::function<torch::Tensor(const torch::Tensor&)>;

/// Output samples per tile for an activation of `channels` channels: a tile of input and output
/// stays within a few hundred KiB.
int64_t time_tile(int64_t channels);

/// Runs fn(begin, end) over [0, length) cut into tiles of `tile` (the last may be shorter),
/// spread over libtorch's intra-op threads; the tensor operations inside run single-threaded.
/// The first exception a tile throws is rethrown.
void for_each_time_tile(int64_t length, int64_t tile,
                        const std::function<void(int64_t, int64_t)>& fn);

/// x[..., begin:end) along the last axis, reading zeros outside [0, x.size(-1)).
torch::Tensor zero_padded_window(const torch::Tensor& x, int64_t begin, int64_t end);

/// out[..., begin:begin + n) = tile for out [batch, channels, time], tile [batch, channels, n],
/// one batch row at a time: libtorch 1.13 copies into a [1, channels, n] slice of a longer time
/// axis about 30x slower than into the same [channels, n] slice.
void copy_to_time_slice(const torch::Tensor& out, int64_t begin, const torch::Tensor& tile);

/// torch::conv1d(before(x), weight, bias, stride, padding, dilation, groups) with zero padding.
/// x: [batch, in_channels, time]; weight: [out, in / groups, kernel].
torch::Tensor conv1d(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                     int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1,
                     int64_t groups = 1, const Pointwise& before = {});

/// torch::conv_transpose1d(before(x), weight, bias, stride, padding, /*output_padding=*/0,
/// groups).
/// x: [batch, in_channels, frames]; weight: [in, out / groups, kernel] -> [batch, out,
/// (frames - 1) * stride + kernel - 2 * padding]. On CPU a kernel that is a multiple of the
/// stride (every codec's 2 * stride) runs as one GEMM per tile over the stacked, shifted input
/// frames; libtorch 1.13 has no CPU bfloat16 kernel for it, so bfloat16 computes in float32.
torch::Tensor conv_transpose1d(const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias, int64_t stride, int64_t padding = 0,
                               int64_t groups = 1, const Pointwise& before = {});

}  // namespace alto::models::kernels
