#include "alto/models/internal/few_rows.h"

// GCC 12's AVX-512 header initialises its "undefined" vectors from themselves (GCC bug 105593),
// which warns wherever _mm512_reduce_add_ps is inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "alto/core/error.h"
#include "alto/core/internal/blas.h"
#include "alto/core/threading.h"

namespace alto::models::kernels {

namespace {

std::atomic<Isa> isa_cap{Isa::kAvx512Bf16};

bool has_avx2() { return available_isa() >= Isa::kAvx2; }

// y[r, o] = bias[o] + sum_i x[r, i] w[o, i]; the plain loop the compiler vectorises for the
// baseline instruction set.
// Kernels compute the outputs [o_begin, o_end) of y, whose rows are ldy apart.
template <int R>
void linear_plain(const float* x, const float* w, const float* bias, float* y, int64_t in,
                  int64_t ldy, int64_t o_begin, int64_t o_end) {
  for (int64_t o = o_begin; o < o_end; ++o) {
    const float* row = w + o * in;
    float sum[R] = {};
    for (int64_t i = 0; i < in; ++i)
      for (int r = 0; r < R; ++r) sum[r] += x[r * in + i] * row[i];
    for (int r = 0; r < R; ++r) y[r * ldy + o] = sum[r] + (bias ? bias[o] : 0.f);
  }
}

__attribute__((target("avx2,fma"))) inline float horizontal_sum(__m256 v) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_shuffle_ps(quarter, quarter, 1)));
}

// Runs Rows<R, OB>::run(o, o_end, args...) on blocks of OB weight rows [o, o + OB) covering
// [o_begin, o_end), so that OB rows stream from memory at once. The last block ends at o_end
// and so repeats rows of the one before, to the same values (a row's sums do not depend on its
// place in a block, and each output is finished alone) instead of a narrower kernel's; ranges
// shorter than OB go a row at a time.
template <int R, int OB, template <int, int> class Rows, typename... Args>
void for_row_blocks(int64_t o_begin, int64_t o_end, const Args&... args) {
  if (o_end - o_begin < OB) {
    for (int64_t o = o_begin; o < o_end; ++o) Rows<R, 1>::run(o, o_end, args...);
    return;
  }
  for (int64_t o = o_begin; o < o_end; o += OB)
    Rows<R, OB>::run(std::min(o, o_end - OB), o_end, args...);
}

// bfloat16: x, w, bias and y in bfloat16, products summed in float32, y rounded to nearest even
// (as libtorch's bfloat16 linear). Three levels, chosen at run time.
using c10::BFloat16;

template <int R>
void linear_bf16_plain(const BFloat16* x, const BFloat16* w, const BFloat16* bias, BFloat16* y,
                       int64_t in, int64_t ldy, int64_t o_begin, int64_t o_end) {
  for (int64_t o = o_begin; o < o_end; ++o) {
    const BFloat16* row = w + o * in;
    float sum[R] = {};
    for (int64_t i = 0; i < in; ++i)
      for (int r = 0; r < R; ++r) sum[r] += float(x[r * in + i]) * float(row[i]);
    for (int r = 0; r < R; ++r) y[r * ldy + o] = BFloat16(sum[r] + (bias ? float(bias[o]) : 0.f));
  }
}

// y[r, o + b] for OB weight rows at a time, AVX-512 BF16: one vdpbf16ps multiplies 32 bfloat16
// pairs and adds them in float32 pairs. The next block's rows are prefetched as the rows stream:
// with a row at a time the 272 MB Qwen2 head read at 27 GB/s on one thread but 33 GB/s on two,
// with 8 rows (and 8 prefetched) at 22-24 and 40-44 GB/s; 16 and 16 read at 27 and 50-55 GB/s
// (the hardware prefetcher alone streams 12-15 GB/s a thread here).
template <int R, int OB>
struct Bf16RowsAvx512 {
  __attribute__((target("avx512f,avx512bw,avx512bf16"))) static void run(
      int64_t o, int64_t o_end, const BFloat16* x, const BFloat16* w, const BFloat16* bias,
      BFloat16* y, int64_t in, int64_t ldy) {
    const int64_t vector_end = in / 32 * 32;
    const bool prefetch = o + 2 * OB <= o_end;
    __m512 acc[OB][R];
    for (int b = 0; b < OB; ++b)
      for (int r = 0; r < R; ++r) acc[b][r] = _mm512_setzero_ps();
    for (int64_t i = 0; i < vector_end; i += 32) {
      if (prefetch)
        for (int b = 0; b < OB; ++b)
          _mm_prefetch(reinterpret_cast<const char*>(w + (o + OB + b) * in + i), _MM_HINT_T0);
      __m512bh xs[R];
      for (int r = 0; r < R; ++r) xs[r] = (__m512bh)_mm512_loadu_si512(x + r * in + i);
      for (int b = 0; b < OB; ++b) {
        const __m512bh wv = (__m512bh)_mm512_loadu_si512(w + (o + b) * in + i);
        for (int r = 0; r < R; ++r) acc[b][r] = _mm512_dpbf16_ps(acc[b][r], wv, xs[r]);
      }
    }
    for (int b = 0; b < OB; ++b) {
      const BFloat16* row = w + (o + b) * in;
      for (int r = 0; r < R; ++r) {
        float sum = _mm512_reduce_add_ps(acc[b][r]);
        for (int64_t i = vector_end; i < in; ++i) sum += float(x[r * in + i]) * float(row[i]);
        y[r * ldy + o + b] = BFloat16(sum + (bias ? float(bias[o + b]) : 0.f));
      }
    }
  }
};

template <int R>
void linear_bf16_avx512(const BFloat16* x, const BFloat16* w, const BFloat16* bias, BFloat16* y,
                        int64_t in, int64_t ldy, int64_t o_begin, int64_t o_end) {
  // As many rows as 24 of the 32 vector registers hold accumulators for.
  for_row_blocks<R, R == 1 ? 16 : 24 / R, Bf16RowsAvx512>(o_begin, o_end, x, w, bias, y, in, ldy);
}

bool has_avx512_bf16() { return available_isa() >= Isa::kAvx512Bf16; }

// int8 weights: y[r, o] = scale[o] * sum_i x[r, i] q[o, i] + bias[o], all float32 but q; the
// sums run in float32 (each int8 converted exactly), so only the order of the additions differs
// from float32 x times the dequantized weight.
template <int R>
void linear_int8_plain(const float* x, const int8_t* w, const float* scale, const float* bias,
                       float* y, int64_t in, int64_t ldy, int64_t o_begin, int64_t o_end) {
  for (int64_t o = o_begin; o < o_end; ++o) {
    const int8_t* row = w + o * in;
    float sum[R] = {};
    for (int64_t i = 0; i < in; ++i)
      for (int r = 0; r < R; ++r) sum[r] += x[r * in + i] * float(row[i]);
    for (int r = 0; r < R; ++r) y[r * ldy + o] = sum[r] * scale[o] + (bias ? bias[o] : 0.f);
  }
}

// acc[b][r] += x[r, i + 16k ..] * rows[b, i + 16k ..] for k < count: sixteen int8 weights
// widened to sixteen floats per vector (weight_vectors_avx2's loop for AVX-512).
template <int R, int OB>
__attribute__((target("avx512f"))) inline void int8_vectors_avx512(const float* x,
                                                                   const int8_t* rows, int64_t in,
                                                                   int64_t i, int count,
                                                                   __m512 (&acc)[OB][R]) {
  for (int k = 0; k < count; ++k, i += 16) {
    __m512 xs[R];
    for (int r = 0; r < R; ++r) xs[r] = _mm512_loadu_ps(x + r * in + i);
    for (int b = 0; b < OB; ++b) {
      const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows + b * in + i));
      const __m512 wv = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(raw));
      for (int r = 0; r < R; ++r) acc[b][r] = _mm512_fmadd_ps(wv, xs[r], acc[b][r]);
    }
  }
}

// Eight weights as eight floats (bfloat16's bits are the float's upper half).
__attribute__((target("avx2,fma"))) inline __m256 widen8(const float* p) {
  return _mm256_loadu_ps(p);
}
__attribute__((target("avx2,fma"))) inline __m256 widen8(const BFloat16* p) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
}
__attribute__((target("avx2,fma"))) inline __m256 widen8(const int8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// acc[b][r] += x[r, i + 8k ..] * rows[b, i + 8k ..] for k < count.
template <int R, int OB, typename W>
__attribute__((target("avx2,fma"))) inline void weight_vectors_avx2(const float* x, const W* rows,
                                                                    int64_t in, int64_t i,
                                                                    int64_t count,
                                                                    __m256 (&acc)[OB][R]) {
  for (int64_t k = 0; k < count; ++k, i += 8) {
    __m256 xs[R];
    for (int r = 0; r < R; ++r) xs[r] = _mm256_loadu_ps(x + r * in + i);
    for (int b = 0; b < OB; ++b) {
      const __m256 wv = widen8(rows + b * in + i);
      for (int r = 0; r < R; ++r) acc[b][r] = _mm256_fmadd_ps(wv, xs[r], acc[b][r]);
    }
  }
}

// sums[r * ld + o + b - o_begin] = x[r] . w[o + b] for OB weight rows at a time (float32,
// bfloat16 or int8 weights, float32 x), a 64-byte line of each per pass, the next block's lines
// prefetched: eight rows streaming at once ran a 136 MB int8 matrix at 25 GB/s where four ran at
// 15.
template <int R, int OB>
struct WeightRowsAvx2 {
  template <typename W>
  __attribute__((target("avx2,fma"))) static void run(int64_t o, int64_t o_end, const float* x,
                                                      const W* w, int64_t in, float* sums,
                                                      int64_t ld, int64_t o_begin) {
    constexpr int64_t kLine = 64 / sizeof(W);
    const int64_t line_end = in / kLine * kLine, vector_end = in / 8 * 8;
    const bool prefetch = o + 2 * OB <= o_end;
    __m256 acc[OB][R];
    for (int b = 0; b < OB; ++b)
      for (int r = 0; r < R; ++r) acc[b][r] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i < line_end; i += kLine) {
      if (prefetch)
        for (int b = 0; b < OB; ++b)
          _mm_prefetch(reinterpret_cast<const char*>(w + (o + OB + b) * in + i), _MM_HINT_T0);
      weight_vectors_avx2<R, OB>(x, w + o * in, in, i, kLine / 8, acc);
    }
    weight_vectors_avx2<R, OB>(x, w + o * in, in, i, (vector_end - i) / 8, acc);
    for (int b = 0; b < OB; ++b)
      for (int r = 0; r < R; ++r) {
        float sum = horizontal_sum(acc[b][r]);
        for (int64_t t = vector_end; t < in; ++t) sum += x[r * in + t] * float(w[(o + b) * in + t]);
        sums[r * ld + o + b - o_begin] = sum;
      }
  }
};

// sums[r * ld + o - o_begin] = x[r] . w[o] for the outputs [o_begin, o_end), as many weight rows
// at a time as the 16 vector registers hold accumulators for. Callers apply scales and biases
// in one loop afterwards, so that every output is rounded alike however the outputs were
// split into blocks and threads.
template <int R, typename W>
void weight_products_avx2(const float* x, const W* w, int64_t in, int64_t o_begin, int64_t o_end,
                          float* sums, int64_t ld) {
  constexpr int kBlock = R == 1 ? 8 : R == 2 ? 4 : 2;
  for_row_blocks<R, kBlock, WeightRowsAvx2>(o_begin, o_end, x, w, in, sums, ld, o_begin);
}

template <int R>
__attribute__((target("avx2,fma"))) void linear_int8_avx2(const float* x, const int8_t* w,
                                                          const float* scale, const float* bias,
                                                          float* y, int64_t in, int64_t ldy,
                                                          int64_t o_begin, int64_t o_end) {
  weight_products_avx2<R>(x, w, in, o_begin, o_end, y + o_begin, ldy);
  for (int r = 0; r < R; ++r)
    for (int64_t o = o_begin; o < o_end; ++o)
      y[r * ldy + o] = y[r * ldy + o] * scale[o] + (bias ? bias[o] : 0.f);
}

template <int R>
__attribute__((target("avx2,fma"))) void linear_avx2(const float* x, const float* w,
                                                     const float* bias, float* y, int64_t in,
                                                     int64_t ldy, int64_t o_begin, int64_t o_end) {
  weight_products_avx2<R>(x, w, in, o_begin, o_end, y + o_begin, ldy);
  if (bias)
    for (int r = 0; r < R; ++r)
      for (int64_t o = o_begin; o < o_end; ++o) y[r * ldy + o] += bias[o];
}

// x widened to float32 once; the sums rounded to bfloat16 after the bias.
template <int R>
__attribute__((target("avx2,fma"))) void linear_bf16_avx2(const BFloat16* x, const BFloat16* w,
                                                          const BFloat16* bias, BFloat16* y,
                                                          int64_t in, int64_t ldy, int64_t o_begin,
                                                          int64_t o_end) {
  const int64_t n = o_end - o_begin;
  std::vector<float> widened(R * in), sums(R * n);
  for (int64_t i = 0; i < R * in; ++i) widened[i] = float(x[i]);
  weight_products_avx2<R>(widened.data(), w, in, o_begin, o_end, sums.data(), n);
  for (int r = 0; r < R; ++r)
    for (int64_t o = o_begin; o < o_end; ++o)
      y[r * ldy + o] = BFloat16(sums[r * n + o - o_begin] + (bias ? float(bias[o]) : 0.f));
}

// WeightRowsAvx2's streaming for int8 weights with AVX-512, sixteen weights to a vector.
template <int R, int OB>
struct Int8RowsAvx512 {
  __attribute__((target("avx512f"))) static void run(int64_t o, int64_t o_end, const float* x,
                                                     const int8_t* w, const float* scale,
                                                     const float* bias, float* y, int64_t in,
                                                     int64_t ldy) {
    const int64_t line_end = in / 64 * 64, vector_end = in / 16 * 16;
    const bool prefetch = o + 2 * OB <= o_end;
    __m512 acc[OB][R];
    for (int b = 0; b < OB; ++b)
      for (int r = 0; r < R; ++r) acc[b][r] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i < line_end; i += 64) {
      if (prefetch)
        for (int b = 0; b < OB; ++b)
          _mm_prefetch(reinterpret_cast<const char*>(w + (o + OB + b) * in + i), _MM_HINT_T0);
      int8_vectors_avx512<R, OB>(x, w + o * in, in, i, 4, acc);
    }
    int8_vectors_avx512<R, OB>(x, w + o * in, in, i, static_cast<int>((vector_end - i) / 16), acc);
    for (int b = 0; b < OB; ++b)
      for (int r = 0; r < R; ++r) {
        float sum = _mm512_reduce_add_ps(acc[b][r]);
        for (int64_t t = vector_end; t < in; ++t) sum += x[r * in + t] * float(w[(o + b) * in + t]);
        y[r * ldy + o + b] = sum * scale[o + b] + (bias ? bias[o + b] : 0.f);
      }
  }
};

template <int R>
void linear_int8_avx512(const float* x, const int8_t* w, const float* scale, const float* bias,
                        float* y, int64_t in, int64_t ldy, int64_t o_begin, int64_t o_end) {
  // As many rows as the 32 vector registers hold accumulators for.
  for_row_blocks<R, R <= 2 ? 8 : 4, Int8RowsAvx512>(o_begin, o_end, x, w, scale, bias, y, in, ldy);
}

bool has_avx512() { return available_isa() >= Isa::kAvx512; }

#define ALTO_KERNEL_FILE "alto/models/internal/matmul_kernel.inc"
#include "alto/models/internal/per_isa.inc"
#undef ALTO_KERNEL_FILE

// Calls kernel<R> for the runtime row count.
template <template <int> class Kernel, typename... Args>
void dispatch_rows(int64_t rows, Args... args) {
  switch (rows) {
    case 1:
      return Kernel<1>::run(args...);
    case 2:
      return Kernel<2>::run(args...);
    case 3:
      return Kernel<3>::run(args...);
    default:
      return Kernel<4>::run(args...);
  }
}

template <int R>
struct Linear {
  static void run(const float* x, const float* w, const float* bias, float* y, int64_t in,
                  int64_t ldy, int64_t o_begin, int64_t o_end) {
    has_avx2() ? linear_avx2<R>(x, w, bias, y, in, ldy, o_begin, o_end)
               : linear_plain<R>(x, w, bias, y, in, ldy, o_begin, o_end);
  }
};

template <int R>
struct LinearBf16 {
  static void run(const BFloat16* x, const BFloat16* w, const BFloat16* bias, BFloat16* y,
                  int64_t in, int64_t ldy, int64_t o_begin, int64_t o_end) {
    if (has_avx512_bf16())
      linear_bf16_avx512<R>(x, w, bias, y, in, ldy, o_begin, o_end);
    else if (has_avx2())
      linear_bf16_avx2<R>(x, w, bias, y, in, ldy, o_begin, o_end);
    else
      linear_bf16_plain<R>(x, w, bias, y, in, ldy, o_begin, o_end);
  }
};

template <int R>
struct LinearInt8 {
  static void run(const float* x, const int8_t* w, const float* scale, const float* bias, float* y,
                  int64_t in, int64_t ldy, int64_t o_begin, int64_t o_end) {
    if (has_avx512())
      linear_int8_avx512<R>(x, w, scale, bias, y, in, ldy, o_begin, o_end);
    else if (has_avx2())
      linear_int8_avx2<R>(x, w, scale, bias, y, in, ldy, o_begin, o_end);
    else
      linear_int8_plain<R>(x, w, scale, bias, y, in, ldy, o_begin, o_end);
  }
};

// The outputs split over alto's threads: each thread streams its own rows of the weight, so the
// product runs at the memory bandwidth of all of them. Chunks of at least 128K weights (512 KiB
// in float32): on alto's persistent pool a hand-off costs microseconds, so even a step's
// 512 x 512 projections split (chunks of 2M weights kept them inline: whisper-base's step on two
// threads 14.5-16.2 -> 10.5-12.1 ms, Mimi's frame 40-42 -> 30-33 ms). `operands`: the kernel's
// arguments before `in` (x, the weight, ..., y).
template <template <int> class Kernel, typename... Operands>
void linear_parallel(int64_t rows, int64_t in, int64_t out, Operands... operands) {
  const int64_t grain = std::max<int64_t>(16, (int64_t{1} << 17) / std::max<int64_t>(in, 1));
  parallel_for(0, out, grain, [&](int64_t begin, int64_t end) {
    dispatch_rows<Kernel>(rows, operands..., in, out, begin, end);
  });
}

// bfloat16 weights as the kernels read them: their bits.
inline const uint16_t* bits(const BFloat16* w) { return reinterpret_cast<const uint16_t*>(w); }
inline const float* bits(const float* w) { return w; }

template <int R>
struct Matmul {
  template <typename W>
  static void run(const float* x, const W* w, float* y, int64_t in, int64_t out, int64_t o_begin,
                  int64_t o_end) {
    const Isa isa = available_isa();
    if (isa >= Isa::kAvx512)
      avx512::matmul_rows<R>(x, bits(w), y, in, out, o_begin, o_end);
    else if (isa >= Isa::kAvx2)
      avx2::matmul_rows<R>(x, bits(w), y, in, out, o_begin, o_end);
    else
      plain::matmul_rows<R>(x, bits(w), y, in, out, o_begin, o_end);
  }
};

void check_operands(const torch::Tensor& x, const torch::Tensor& weight, int64_t in_dim,
                    const char* what) {
  ALTO_CHECK(few_rows(x), what, ": x must be float32 or bfloat16 [1..", kMaxFewRows,
             ", in] on CPU, got ", x.sizes(), " ", x.scalar_type());
  const torch::ScalarType expected = is_int8(weight) ? torch::kFloat32 : weight.scalar_type();
  ALTO_CHECK(weight.dim() == 2 && expected == x.scalar_type() && weight.is_cpu() &&
                 weight.size(in_dim) == x.size(1),
             what, ": weight ", weight.sizes(), " ", weight.scalar_type(), " does not fit x ",
             x.sizes(), " ", x.scalar_type());
}

}  // namespace

Isa limit_isa(Isa cap) { return isa_cap.exchange(cap); }

Isa available_isa() {
  static const Isa cpu_isa = [] {
    const CpuInfo cpu = cpu_info();
    if (cpu.avx512f && cpu.avx512bw && cpu.avx512_bf16 && cpu.os_avx512 && cpu.fma)
      return Isa::kAvx512Bf16;
    if (cpu.avx512f && cpu.os_avx512 && cpu.fma) return Isa::kAvx512;
    return cpu.avx2 && cpu.fma && cpu.os_avx ? Isa::kAvx2 : Isa::kPlain;
  }();
  return std::min(cpu_isa, isa_cap.load());
}

bool few_rows(const torch::Tensor& x) {
  return x.dim() == 2 && x.size(0) >= 1 && x.size(0) <= kMaxFewRows && x.is_cpu() &&
         (x.scalar_type() == torch::kFloat32 || x.scalar_type() == torch::kBFloat16);
}

torch::Tensor linear_few_rows(const torch::Tensor& x, const torch::Tensor& weight,
                              const torch::Tensor& bias) {
  check_operands(x, weight, 1, "linear_few_rows");
  ALTO_CHECK(!bias.defined() || (bias.scalar_type() == x.scalar_type() && bias.is_cpu() &&
                                 bias.numel() == weight.size(0)),
             "linear_few_rows: bias ", bias.sizes(), " does not fit weight ", weight.sizes());
  const torch::Tensor xc = x.contiguous(), wc = weight.contiguous();
  const torch::Tensor bc = bias.defined() ? bias.contiguous() : bias;
  torch::Tensor y = torch::empty({x.size(0), weight.size(0)}, x.options());
  if (is_int8(weight)) {
    const torch::Tensor scales = weight.q_per_channel_scales().to(torch::kFloat32);
    linear_parallel<LinearInt8>(x.size(0), x.size(1), weight.size(0), xc.data_ptr<float>(),
                                static_cast<const int8_t*>(wc.data_ptr()), scales.data_ptr<float>(),
                                bc.defined() ? bc.data_ptr<float>() : nullptr, y.data_ptr<float>());
  } else if (x.scalar_type() == torch::kBFloat16) {
    linear_parallel<LinearBf16>(
        x.size(0), x.size(1), weight.size(0), xc.data_ptr<BFloat16>(), wc.data_ptr<BFloat16>(),
        bc.defined() ? bc.data_ptr<BFloat16>() : nullptr, y.data_ptr<BFloat16>());
  } else {
    linear_few_rows(xc.data_ptr<float>(), x.size(0), x.size(1), wc.data_ptr<float>(),
                    weight.size(0), bc.defined() ? bc.data_ptr<float>() : nullptr,
                    y.data_ptr<float>());
  }
  return y;
}

void linear_few_rows(const float* x, int64_t rows, int64_t in, const float* weight, int64_t out,
                     const float* bias, float* y) {
  ALTO_CHECK(rows >= 1 && rows <= kMaxFewRows, "linear_few_rows: rows must lie in [1, ",
             kMaxFewRows, "], got ", rows);
  linear_parallel<Linear>(rows, in, out, x, weight, bias, y);
}

torch::Tensor quantize_int8(const torch::Tensor& weight) {
  ALTO_CHECK(weight.dim() == 2 && weight.scalar_type() == torch::kFloat32 && weight.is_cpu(),
             "quantize_int8: weight must be float32 [out, in] on CPU, got ", weight.sizes(), " ",
             weight.scalar_type(), " on ", weight.device());
  const int64_t out = weight.size(0), in = weight.size(1);
  const torch::Tensor wc = weight.contiguous();
  torch::Tensor scale = torch::empty({out}, torch::kFloat32);
  torch::Tensor q = torch::empty({out, in}, torch::kInt8);
  const float* w = wc.data_ptr<float>();
  float* s = scale.data_ptr<float>();
  int8_t* qs = q.data_ptr<int8_t>();
  std::atomic<bool> finite{true};
  // Plain loops the compiler vectorises, rows over alto's threads: a 3B decoder is quantized in
  // seconds (libtorch's quantize_per_channel took 17 ns a weight here).
  parallel_for(0, out, std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(in, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t o = begin; o < end; ++o) {
                   const float* row = w + o * in;
                   float largest = 0;
                   bool bad = false;
                   for (int64_t i = 0; i < in; ++i) {
                     const float a = std::fabs(row[i]);
                     largest = a > largest ? a : largest;
                     bad |= !(a <= std::numeric_limits<float>::max());
                   }
                   if (bad) finite = false;
                   s[o] = largest > 0 ? largest / 127.f : 1.f;
                   const float step = s[o];
                   // + 1.5 * 2^23 and back rounds half to even (|w / step| <= 127 here).
                   constexpr float kRound = 12582912.f;
                   for (int64_t i = 0; i < in; ++i) {
                     const float r = std::min(127.f, std::max(-127.f, row[i] / step));
                     qs[o * in + i] = static_cast<int8_t>((r + kRound) - kRound);
                   }
                 }
               });
  ALTO_CHECK(finite, "quantize_int8: weight has NaN or infinite values");
  return torch::_make_per_channel_quantized_tensor(q, scale.to(torch::kFloat64),
                                                   torch::zeros({out}, torch::kInt64), 0);
}

bool is_int8(const torch::Tensor& weight) {
  return weight.defined() && weight.is_quantized() && weight.scalar_type() == torch::kQInt8 &&
         weight.dim() == 2 &&
         (weight.qscheme() == torch::kPerChannelAffine ||
          weight.qscheme() == torch::kPerChannelSymmetric) &&
         weight.q_per_channel_axis() == 0;
}

namespace {

// Floats of a weight block widened in cache (2 MB).
constexpr int64_t kWidenedBlockFloats = int64_t{1} << 19;

// x [rows, in] float32 contiguous @ W^T -> float32 [rows, out], W [out, in] written into a float32
// buffer block by block by widen(first_row, count, buffer): blocks of about 2 MB stay in cache
// and each block's GEMM is written into its columns of y, so the float32 weight never exists
// whole (a 151936-word head would be 545 MB per call, faulted in afresh).
template <typename Widen>
torch::Tensor gemm_on_widened_blocks(const torch::Tensor& x, int64_t out, const Widen& widen) {
  const int64_t rows = x.size(0), in = x.size(1);
  const int64_t block =
      std::min(out, std::max<int64_t>(16, kWidenedBlockFloats / std::max<int64_t>(in, 1)));
  torch::Tensor buffer = torch::empty({block, in}, torch::kFloat32);
  torch::Tensor y = torch::empty({rows, out}, torch::kFloat32);
  for (int64_t o = 0; o < out; o += block) {
    const int64_t n = std::min(block, out - o);
    widen(o, n, buffer);
    torch::Tensor columns = y.narrow(1, o, n);
    torch::mm_out(columns, x, buffer.narrow(0, 0, n).t());
  }
  return y;
}

}  // namespace

torch::Tensor linear_int8(const torch::Tensor& x, const torch::Tensor& weight,
                          const torch::Tensor& bias) {
  ALTO_CHECK(is_int8(weight) && weight.is_cpu(),
             "linear_int8: expected a quantize_int8 weight, got ", weight.sizes(), " ",
             weight.scalar_type());
  ALTO_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat32 && x.is_cpu() &&
                 x.size(1) == weight.size(1),
             "linear_int8: x must be float32 [rows, ", weight.size(1), "] on CPU, got ", x.sizes(),
             " ", x.scalar_type());
  ALTO_CHECK(!bias.defined() || (bias.scalar_type() == torch::kFloat32 && bias.is_cpu() &&
                                 bias.numel() == weight.size(0)),
             "linear_int8: bias ", bias.sizes(), " does not fit weight ", weight.sizes());
  if (few_rows(x)) return linear_few_rows(x, weight, bias);
  const int64_t in = weight.size(1);
  const torch::Tensor wc = weight.contiguous();
  const torch::Tensor scales = weight.q_per_channel_scales().to(torch::kFloat32);
  const int8_t* q = static_cast<const int8_t*>(wc.data_ptr());
  const float* scale = scales.data_ptr<float>();
  torch::Tensor y = gemm_on_widened_blocks(x.contiguous(), weight.size(0),
                                           [&](int64_t o, int64_t n, torch::Tensor& buffer) {
                                             float* dequantized = buffer.data_ptr<float>();
                                             for (int64_t r = 0; r < n; ++r) {
                                               const float step = scale[o + r];
                                               const int8_t* __restrict row = q + (o + r) * in;
                                               float* __restrict to = dequantized + r * in;
                                               for (int64_t i = 0; i < in; ++i)
                                                 to[i] = step * static_cast<float>(row[i]);
                                             }
                                           });
  if (bias.defined()) y.add_(bias);
  return y;
}

bool widen_bfloat16_products() { return available_isa() < Isa::kAvx512Bf16; }

torch::Tensor widened_if(bool widen, const torch::Tensor& t) {
  return widen && t.defined() ? t.to(torch::kFloat32) : t;
}

torch::Tensor linear_bfloat16_in_float32(const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias) {
  ALTO_CHECK(weight.dim() == 2 && weight.scalar_type() == torch::kBFloat16 && weight.is_cpu() &&
                 x.dim() == 2 && x.scalar_type() == torch::kBFloat16 && x.is_cpu() &&
                 x.size(1) == weight.size(1),
             "linear_bfloat16_in_float32: x must be bfloat16 [rows, in] on CPU and weight "
             "bfloat16 [out, in], got ",
             x.sizes(), " ", x.scalar_type(), " and ", weight.sizes(), " ", weight.scalar_type());
  ALTO_CHECK(!bias.defined() || (bias.scalar_type() == torch::kBFloat16 && bias.is_cpu() &&
                                 bias.numel() == weight.size(0)),
             "linear_bfloat16_in_float32: bias ", bias.sizes(), " does not fit weight ",
             weight.sizes());
  torch::Tensor y = gemm_on_widened_blocks(x.to(torch::kFloat32).contiguous(), weight.size(0),
                                           [&](int64_t o, int64_t n, torch::Tensor& buffer) {
                                             buffer.narrow(0, 0, n).copy_(weight.narrow(0, o, n));
                                           });
  if (bias.defined()) y.add_(bias.to(torch::kFloat32));
  return y;
}

torch::Tensor matmul_bfloat16_in_float32(const torch::Tensor& x, const torch::Tensor& weight) {
  ALTO_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat32 && x.is_cpu() &&
                 weight.dim() == 2 && weight.scalar_type() == torch::kBFloat16 && weight.is_cpu() &&
                 x.size(1) == weight.size(0),
             "matmul_bfloat16_in_float32: x must be float32 [rows, in] and weight bfloat16 [in, ",
             "out] on CPU, got ", x.sizes(), " ", x.scalar_type(), " and ", weight.sizes(), " ",
             weight.scalar_type());
  // Blocks of the weight's rows (contiguous, so widened at copy speed) of about 2 MB in float32,
  // each added into y while in cache.
  const int64_t in = weight.size(0), out = weight.size(1);
  const int64_t block =
      std::min(in, std::max<int64_t>(8, kWidenedBlockFloats / std::max<int64_t>(out, 1)));
  const torch::Tensor w = weight.contiguous();
  torch::Tensor buffer = torch::empty({block, out}, torch::kFloat32);
  torch::Tensor y = torch::zeros({x.size(0), out}, torch::kFloat32);
  for (int64_t i = 0; i < in; i += block) {
    const int64_t n = std::min(block, in - i);
    torch::Tensor widened = buffer.narrow(0, 0, n);
    widened.copy_(w.narrow(0, i, n));
    y.addmm_(x.narrow(1, i, n), widened);
  }
  return y;
}

torch::Tensor matmul_few_rows(const torch::Tensor& x, const torch::Tensor& weight) {
  ALTO_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat32 && x.is_cpu() && x.size(0) >= 1,
             "matmul_few_rows: x must be float32 [rows >= 1, in] on CPU, got ", x.sizes(), " ",
             x.scalar_type());
  ALTO_CHECK(
      weight.dim() == 2 && weight.is_cpu() && !weight.is_quantized() &&
          (weight.scalar_type() == torch::kFloat32 || weight.scalar_type() == torch::kBFloat16) &&
          weight.size(0) == x.size(1),
      "matmul_few_rows: weight must be float32 or bfloat16 [", x.size(1), ", out] on CPU, got ",
      weight.sizes(), " ", weight.scalar_type());
  const torch::Tensor xc = x.contiguous(), wc = weight.contiguous();
  const int64_t rows = x.size(0), in = x.size(1), out = weight.size(1);
  torch::Tensor y = torch::empty({rows, out}, x.options());
  // Beyond kMaxFewRows rows, groups of them take the weight's columns a slab of about 256 KiB
  // at a time, each slab read from memory once and from cache by the later groups.
  const int64_t slab =
      rows <= kMaxFewRows
          ? out
          : std::max<int64_t>(
                64, (int64_t{256} << 10) / (std::max<int64_t>(in, 1) * wc.element_size()));
  const auto columns = [&](auto* w, int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; c += slab)
      for (int64_t r = 0; r < rows; r += kMaxFewRows)
        dispatch_rows<Matmul>(std::min(kMaxFewRows, rows - r), xc.data_ptr<float>() + r * in, w,
                              y.data_ptr<float>() + r * out, in, out, c, std::min(end, c + slab));
  };
  // Columns split over alto's threads, each reading its part of every weight row: chunks of at
  // least 128K weights, as linear_parallel's.
  const int64_t grain = std::max<int64_t>(64, (int64_t{1} << 17) / std::max<int64_t>(in, 1));
  parallel_for(0, out, grain, [&](int64_t begin, int64_t end) {
    if (wc.scalar_type() == torch::kBFloat16)
      columns(wc.data_ptr<BFloat16>(), begin, end);
    else
      columns(wc.data_ptr<float>(), begin, end);
  });
  return y;
}

}  // namespace alto::models::kernels
