#include "alto/models/internal/conv.h"

#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>
#include <torch/torch.h>

#include <algorithm>
#include <vector>

#include "alto/core/activation_memory.h"
#include "alto/core/error.h"
#include "alto/core/internal/blas.h"
#include "alto/models/internal/few_rows.h"

namespace alto::models::kernels {

namespace {

// Bytes of one channel-time tile of float32. Measured on DAC's residual units (7-tap dilated
// convolution, Snake, 1x1 convolution; 64-768 channels, one thread): 512-2048 samples per tile
// ran 2.5-3.5x faster than whole activations of 7000-441000 samples, fewer samples lost the
// GEMMs' efficiency and more spilled from the cache.
constexpr int64_t kTileBytes = 512 * 1024;

// Input frames per tile of a transposed convolution: 1.6-4x libtorch's kernel on the codecs'
// upsampling layers (64-1536 channels, one thread); fewer frames starve the GEMM.
constexpr int64_t kTransposedTileFrames = 256;

// Output frames (times batch) up to which a convolution runs as one matrix product on the
// unfolded input: 1.5x oneDNN at 16 frames of Mimi's 256 -> 512 channel, 12-tap layer, slower
// from about 96 frames.
constexpr int64_t kShortRows = 32;

bool tiles_on(const torch::Tensor& x) { return x.device().is_cpu(); }

#define ALTO_KERNEL_FILE "alto/models/internal/conv_kernel.inc"
#include "alto/models/internal/per_isa.inc"
#undef ALTO_KERNEL_FILE

// One output channel, stride 1, float32 on the CPU: a codec decoder's last layer.
bool one_channel_fits(const torch::Tensor& x, const torch::Tensor& weight,
                      const torch::Tensor& bias, int64_t stride, int64_t groups) {
  return x.is_cpu() && x.dim() == 3 && x.scalar_type() == torch::kFloat32 && weight.dim() == 3 &&
         weight.size(0) == 1 && weight.scalar_type() == torch::kFloat32 && groups == 1 &&
         stride == 1 && (!bias.defined() || bias.scalar_type() == torch::kFloat32);
}

// oneDNN ran Mimi's 64 -> 1 channel, 3-tap layer over a 1920-sample frame at 4 GFLOP/s (0.18 ms;
// DAC's and EnCodec's 7-tap ones alike); a loop over the taps with a block of samples in
// registers takes a tenth of that. Tiles of the output, in cache, on libtorch's threads.
torch::Tensor one_channel_conv1d(const torch::Tensor& x, const torch::Tensor& weight,
                                 const torch::Tensor& bias, int64_t padding, int64_t dilation,
                                 int64_t out_length, const Pointwise& before) {
  const int64_t batch = x.size(0), channels = x.size(1), kernel = weight.size(2);
  const int64_t span = (kernel - 1) * dilation + 1;
  const torch::Tensor w = weight.contiguous();
  const float b = bias.defined() ? bias.item<float>() : 0.f;
  torch::Tensor y = empty_activation({batch, 1, out_length}, x.options());
  const Isa isa = available_isa();
  const auto run = isa >= Isa::kAvx512 ? avx512::one_channel_conv
                   : isa >= Isa::kAvx2 ? avx2::one_channel_conv
                                       : plain::one_channel_conv;
  for_each_time_tile(out_length, time_tile(channels), [&](int64_t o0, int64_t o1) {
    torch::Tensor window = zero_padded_window(x, o0 - padding, o1 - 1 - padding + span);
    // Copied when it is a view of x: the channels' rows, one signal's length apart, would be a
    // stream each for the prefetcher (441000 samples of DAC's 64 channels: 2x slower).
    window = before ? before(window).contiguous() : window.contiguous();
    for (int64_t r = 0; r < batch; ++r) {
      const float* rows = window.data_ptr<float>() + r * window.stride(0);
      float* out = y.data_ptr<float>() + r * out_length + o0;
      run(rows, window.stride(1), channels, w.data_ptr<float>(), kernel, dilation, b, out, o1 - o0);
    }
  });
  return y;
}

// libtorch 1.13 has no CPU bfloat16 kernel for transposed convolutions.
bool needs_float(const torch::Tensor& x) {
  return x.device().is_cpu() && x.scalar_type() != torch::kFloat32 &&
         x.scalar_type() != torch::kFloat64;
}

// One input and one output channel per group (Mimi's upsample, groups = 512): libtorch's CPU
// kernel runs one small convolution per group, hundreds of calls; overlap-adding the kernel
// taps computes the same sums at once. Full output, no bias.
torch::Tensor depthwise_transposed(const torch::Tensor& x, const torch::Tensor& weight,
                                   int64_t stride) {
  const int64_t frames = x.size(-1), kernel = weight.size(-1);
  const int64_t span = (frames - 1) * stride + 1;
  torch::Tensor y = torch::zeros({x.size(0), x.size(1), span - 1 + kernel}, x.options());
  const torch::Tensor taps = weight.select(1, 0);  // [channels, kernel]
  for (int64_t j = 0; j < kernel; ++j)
    y.slice(-1, j, j + span, stride).add_(x * taps.narrow(1, j, 1));
  return y;
}

// Full transposed-convolution output [batch, out, (frames + m - 1) * stride] for a kernel of
// m * stride taps, no bias. Output frame u (samples u*s .. u*s+s-1) sums tap block i of input
// frame u - i: per tile of output frames one GEMM W^T x over the tile's input frames (and the
// m - 1 before it) gives every tap's product, and m shifted adds place them. x is float32, the
// weight float32 or (for a short step) bfloat16: read as it lies by up to kShortRows frames,
// widened block by block in cache for more.
torch::Tensor gemm_transposed(const torch::Tensor& x, const torch::Tensor& weight, int64_t stride,
                              const torch::Tensor& bias, const Pointwise& before) {
  const int64_t batch = x.size(0), in = x.size(1), frames = x.size(2);
  const int64_t out = weight.size(1), kernel = weight.size(2), m = kernel / stride;
  const int64_t out_frames = frames + m - 1;
  // [in, out * kernel]: W^T's rows c * kernel + i * stride + j are its columns; a view, no copy.
  const torch::Tensor weight_flat = weight.reshape({in, out * kernel});
  torch::Tensor y = empty_activation({batch, out, out_frames * stride}, x.options());
  for_each_time_tile(out_frames, kTransposedTileFrames, [&](int64_t u0, int64_t u1) {
    const int64_t n = u1 - u0;
    torch::Tensor window = zero_padded_window(x, u0 - (m - 1), u1);
    if (before) window = before(window);
    for (int64_t b = 0; b < batch; ++b) {
      const torch::Tensor columns = window[b];  // [in, n + m - 1]
      const torch::Tensor taps =
          (columns.size(1) <= kShortRows ? matmul_few_rows(columns.t(), weight_flat).t()
           : weight.scalar_type() == torch::kBFloat16
               ? matmul_bfloat16_in_float32(columns.t(), weight_flat).t()
               : torch::mm(weight_flat.t(), columns))
              .reshape({out, m, stride, n + m - 1});
      torch::Tensor sum = taps.select(1, 0).narrow(-1, m - 1, n).clone();
      for (int64_t i = 1; i < m; ++i) sum.add_(taps.select(1, i).narrow(-1, m - 1 - i, n));
      if (bias.defined()) sum.add_(bias.view({out, 1, 1}));
      // Interleaved into [out, n * stride] here, in cache: a strided destination is slow.
      y[b].narrow(1, u0 * stride, n * stride).copy_(sum.permute({0, 2, 1}).reshape({out, -1}));
    }
  });
  return y;
}

}  // namespace

int64_t time_tile(int64_t channels) {
  return std::clamp<int64_t>(kTileBytes / (4 * std::max<int64_t>(channels, 1)), 512, 2048);
}

void for_each_time_tile(int64_t length, int64_t tile,
                        const std::function<void(int64_t, int64_t)>& fn) {
  ALTO_CHECK(tile > 0, "for_each_time_tile: tile must be positive, got ", tile);
  const int64_t tiles = (length + tile - 1) / tile;
  if (tiles <= 1) {
    if (length > 0) fn(0, length);
    return;
  }
  // Grad and inference mode are thread-local: the workers take the caller's.
  const at::ThreadLocalState caller;
  const SingleThreadedBlas one_blas_thread_per_tile;
  at::parallel_for(0, tiles, 1, [&](int64_t first, int64_t last) {
    at::ThreadLocalStateGuard guard(caller);
    for (int64_t t = first; t < last; ++t) fn(t * tile, std::min(length, (t + 1) * tile));
  });
}

void copy_to_time_slice(const torch::Tensor& out, int64_t begin, const torch::Tensor& tile) {
  for (int64_t b = 0; b < out.size(0); ++b) out[b].narrow(-1, begin, tile.size(-1)).copy_(tile[b]);
}

torch::Tensor zero_padded_window(const torch::Tensor& x, int64_t begin, int64_t end) {
  const int64_t length = x.size(-1);
  if (begin >= 0 && end <= length) return x.narrow(-1, begin, end - begin);
  const int64_t from = std::clamp<int64_t>(begin, 0, length);
  const int64_t to = std::clamp<int64_t>(end, from, length);
  if (from == to) {  // constant_pad_nd refuses an empty input
    std::vector<int64_t> sizes = x.sizes().vec();
    sizes.back() = end - begin;
    return torch::zeros(sizes, x.options());
  }
  return torch::constant_pad_nd(x.narrow(-1, from, to - from), {from - begin, end - to}, 0);
}

torch::Tensor conv1d(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                     int64_t stride, int64_t padding, int64_t dilation, int64_t groups,
                     const Pointwise& before) {
  // libtorch's bfloat16 convolution is a scalar loop on CPUs without AVX-512 BF16 (Whisper-base's
  // two: 630 ms): there bfloat16 computes in float32.
  const bool bfloat16 =
      x.scalar_type() == torch::kBFloat16 && weight.scalar_type() == torch::kBFloat16;
  const bool widen = x.is_cpu() && bfloat16 && widen_bfloat16_products();
  const int64_t span = (weight.size(-1) - 1) * dilation + 1;
  const int64_t out_length = (x.size(-1) + 2 * padding - span) / stride + 1;
  const int64_t rows = x.size(0) * out_length;
  if (out_length > 0 && one_channel_fits(x, weight, bias, stride, groups))
    return one_channel_conv1d(x, weight, bias, padding, dilation, out_length, before);
  if (groups == 1 && rows > 0 && rows <= kShortRows && x.is_cpu() &&
      (x.scalar_type() == torch::kFloat32 || bfloat16)) {
    // A short output (a streaming step's deeper layers): one product of the weights with the
    // unfolded input [batch * frames, in * kernel], which also skips oneDNN's per-call weight
    // reorder; up to kMaxFewRows rows read the weights once (layers/few_rows.h), bfloat16 ones
    // as they lie, not widened whole per call — also where AVX-512 BF16 runs libtorch's
    // bfloat16 convolution (oneDNN's reorders made Mimi's bfloat16 frame slower than float32's).
    torch::Tensor padded = before ? before(x) : x;
    if (padding > 0) padded = torch::constant_pad_nd(padded, {padding, padding}, 0);
    const torch::Tensor columns = padded.unfold(2, span, stride)
                                      .slice(3, 0, span, dilation)
                                      .permute({0, 2, 1, 3})
                                      .reshape({rows, -1});
    const torch::Tensor flat_weight = weight.reshape({weight.size(0), -1});
    const torch::Tensor y =
        rows <= kMaxFewRows ? linear_few_rows(columns, flat_weight, bias)
        : widen ? linear_bfloat16_in_float32(columns, flat_weight, bias).to(torch::kBFloat16)
                : torch::linear(columns, flat_weight, bias);
    return y.view({x.size(0), out_length, weight.size(0)}).permute({0, 2, 1}).contiguous();
  }
  // Widened, the weights once per call and the activation tile by tile, in cache.
  const torch::Tensor w = widened_if(widen, weight), b = widened_if(widen, bias);
  const int64_t tile = time_tile(std::max(x.size(1), weight.size(0)));
  if (!tiles_on(x) || out_length <= 2 * tile) {
    const torch::Tensor input = widened_if(widen, x);
    return torch::conv1d(before ? before(input) : input, w, b, stride, padding, dilation, groups)
        .to(x.scalar_type());
  }
  torch::Tensor y = empty_activation({x.size(0), weight.size(0), out_length}, x.options());
  const int64_t no_padding = 0;  // a literal 0 would also convert to conv1d's padding string
  for_each_time_tile(out_length, tile, [&](int64_t o0, int64_t o1) {
    const torch::Tensor window = widened_if(
        widen, zero_padded_window(x, o0 * stride - padding, (o1 - 1) * stride - padding + span));
    copy_to_time_slice(y, o0,
                       torch::conv1d(before ? before(window) : window, w, b, stride, no_padding,
                                     dilation, groups));
  });
  return y;
}

torch::Tensor conv_transpose1d(const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias, int64_t stride, int64_t padding,
                               int64_t groups, const Pointwise& before) {
  ALTO_CHECK(x.dim() == 3 && weight.dim() == 3 && x.size(1) == weight.size(0),
             "conv_transpose1d: x must be [batch, ", weight.size(0), ", frames], got ", x.sizes());
  const int64_t in = x.size(1), kernel = weight.size(2);
  const bool depthwise = groups > 1 && groups == in && weight.size(1) == 1;
  const bool gemm = groups == 1 && kernel % stride == 0;
  if (needs_float(x)) {
    // For a few frames (a stream's step) a bfloat16 GEMM-shaped weight stays bfloat16, widened
    // block by block in cache (gemm_transposed): widening it whole cost more than the product.
    const int64_t rows = x.size(0) * x.size(-1);
    const bool keep =
        weight.scalar_type() == torch::kBFloat16 && gemm && rows > 0 && rows <= kShortRows;
    return conv_transpose1d(x.to(torch::kFloat32), keep ? weight : weight.to(torch::kFloat32),
                            bias.defined() ? bias.to(torch::kFloat32) : bias, stride, padding,
                            groups, before)
        .to(x.scalar_type());
  }
  const int64_t full = (x.size(-1) - 1) * stride + kernel;
  ALTO_CHECK(full > 2 * padding, "conv_transpose1d: ", x.size(-1), " frames give no output after ",
             padding, " samples of padding on each side");
  if (!tiles_on(x) || x.size(-1) == 0 || !(depthwise || gemm))
    return torch::conv_transpose1d(before ? before(x) : x, weight, bias, stride, padding, 0,
                                   groups);
  torch::Tensor y;
  if (gemm) {
    y = gemm_transposed(x, weight, stride, bias, before);
  } else {
    y = depthwise_transposed(before ? before(x) : x, weight, stride);
    if (bias.defined()) y.add_(bias.view({1, -1, 1}));
  }
  return y.narrow(-1, padding, full - 2 * padding);
}

}  // namespace alto::models::kernels
