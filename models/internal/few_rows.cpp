#include "alto/models/internal/few_rows.h"

#include <immintrin.h>
#include <torch/torch.h>

#include "alto/core/error.h"
#include "alto/core/internal/blas.h"

namespace alto::models::kernels {

namespace {

bool has_avx2() {
  static const bool yes = [] {
    const CpuInfo cpu = cpu_info();
    return cpu.avx2 && cpu.fma && cpu.os_avx;
  }();
  return yes;
}

// y[r, o] = bias[o] + sum_i x[r, i] w[o, i]; the plain loop the compiler vectorises for the
// baseline instruction set.
template <int R>
void linear_plain(const float* x, const float* w, const float* bias, float* y, int64_t in,
                  int64_t out) {
  for (int64_t o = 0; o < out; ++o) {
    const float* row = w + o * in;
    float sum[R] = {};
    for (int64_t i = 0; i < in; ++i)
      for (int r = 0; r < R; ++r) sum[r] += x[r * in + i] * row[i];
    for (int r = 0; r < R; ++r) y[r * out + o] = sum[r] + (bias ? bias[o] : 0.f);
  }
}

__attribute__((target("avx2,fma"))) inline float horizontal_sum(__m256 v) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_shuffle_ps(quarter, quarter, 1)));
}

// As linear_plain, OB weight rows at a time (OB streams from memory at once, as BLAS's GEMV
// does), each read once, 8 floats at a time against every row of x.
template <int R, int OB>
__attribute__((target("avx2,fma"))) void linear_rows_avx2(const float* x, const float* w,
                                                          const float* bias, float* y, int64_t in,
                                                          int64_t out, int64_t o) {
  const int64_t vector_end = in / 8 * 8;
  __m256 acc[OB][R];
  for (int b = 0; b < OB; ++b)
    for (int r = 0; r < R; ++r) acc[b][r] = _mm256_setzero_ps();
  for (int64_t i = 0; i < vector_end; i += 8) {
    __m256 xs[R];
    for (int r = 0; r < R; ++r) xs[r] = _mm256_loadu_ps(x + r * in + i);
    for (int b = 0; b < OB; ++b) {
      // The next block's rows: the hardware prefetcher stops at each 4 KiB page, which a
      // 1024-float row fills.
      if (o + OB + b < out)
        _mm_prefetch(reinterpret_cast<const char*>(w + (o + OB + b) * in + i), _MM_HINT_T0);
      const __m256 wv = _mm256_loadu_ps(w + (o + b) * in + i);
      for (int r = 0; r < R; ++r) acc[b][r] = _mm256_fmadd_ps(wv, xs[r], acc[b][r]);
    }
  }
  for (int b = 0; b < OB; ++b)
    for (int r = 0; r < R; ++r) {
      float sum = horizontal_sum(acc[b][r]);
      for (int64_t i = vector_end; i < in; ++i) sum += x[r * in + i] * w[(o + b) * in + i];
      y[r * out + o + b] = sum + (bias ? bias[o + b] : 0.f);
    }
}

template <int R>
__attribute__((target("avx2,fma"))) void linear_avx2(const float* x, const float* w,
                                                     const float* bias, float* y, int64_t in,
                                                     int64_t out) {
  // 4 rows of w per pass while the accumulators fit the 16 vector registers.
  constexpr int kBlock = R <= 2 ? 4 : 2;
  int64_t o = 0;
  for (; o + kBlock <= out; o += kBlock) linear_rows_avx2<R, kBlock>(x, w, bias, y, in, out, o);
  for (; o < out; ++o) linear_rows_avx2<R, 1>(x, w, bias, y, in, out, o);
}

// y[r, o] = sum_i x[r, i] w[i, o]: plain loops over rows of w.
template <int R>
void matmul_plain(const float* x, const float* w, float* y, int64_t in, int64_t out) {
  for (int64_t k = 0; k < R * out; ++k) y[k] = 0;
  for (int64_t i = 0; i < in; ++i) {
    const float* row = w + i * out;
    for (int r = 0; r < R; ++r) {
      const float xi = x[r * in + i];
      float* yr = y + r * out;
      for (int64_t o = 0; o < out; ++o) yr[o] += xi * row[o];
    }
  }
}

// As matmul_plain, streaming w eight rows at a time into y, which stays in cache: each y vector
// is loaded and stored once per eight rows of w (four ran 20% slower, two 50%).
template <int R>
__attribute__((target("avx2,fma"))) void matmul_avx2(const float* x, const float* w, float* y,
                                                     int64_t in, int64_t out) {
  constexpr int kRows = 8;
  for (int64_t k = 0; k < R * out; ++k) y[k] = 0;
  const int64_t vector_end = out / 8 * 8;
  int64_t i = 0;
  for (; i + kRows <= in; i += kRows) {
    const float* wi = w + i * out;
    for (int64_t o = 0; o < vector_end; o += 8) {
      __m256 wv[kRows];
      for (int j = 0; j < kRows; ++j) wv[j] = _mm256_loadu_ps(wi + j * out + o);
      for (int r = 0; r < R; ++r) {
        float* yr = y + r * out + o;
        __m256 acc = _mm256_loadu_ps(yr);
        for (int j = 0; j < kRows; ++j)
          acc = _mm256_fmadd_ps(wv[j], _mm256_broadcast_ss(x + r * in + i + j), acc);
        _mm256_storeu_ps(yr, acc);
      }
    }
    for (int64_t o = vector_end; o < out; ++o)
      for (int r = 0; r < R; ++r)
        for (int j = 0; j < kRows; ++j) y[r * out + o] += x[r * in + i + j] * wi[j * out + o];
  }
  for (; i < in; ++i)
    for (int64_t o = 0; o < out; ++o)
      for (int r = 0; r < R; ++r) y[r * out + o] += x[r * in + i] * w[i * out + o];
}

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
                  int64_t out) {
    has_avx2() ? linear_avx2<R>(x, w, bias, y, in, out) : linear_plain<R>(x, w, bias, y, in, out);
  }
};

template <int R>
struct Matmul {
  static void run(const float* x, const float* w, float* y, int64_t in, int64_t out) {
    has_avx2() ? matmul_avx2<R>(x, w, y, in, out) : matmul_plain<R>(x, w, y, in, out);
  }
};

void check_operands(const torch::Tensor& x, const torch::Tensor& weight, int64_t in_dim,
                    const char* what) {
  ALTO_CHECK(few_rows(x), what, ": x must be float32 [1..", kMaxFewRows, ", in] on CPU, got ",
             x.sizes(), " ", x.scalar_type());
  ALTO_CHECK(weight.dim() == 2 && weight.scalar_type() == torch::kFloat32 && weight.is_cpu() &&
                 weight.size(in_dim) == x.size(1),
             what, ": weight ", weight.sizes(), " does not fit x ", x.sizes());
}

}  // namespace

bool few_rows(const torch::Tensor& x) {
  return x.dim() == 2 && x.size(0) >= 1 && x.size(0) <= kMaxFewRows && x.is_cpu() &&
         x.scalar_type() == torch::kFloat32;
}

torch::Tensor linear_few_rows(const torch::Tensor& x, const torch::Tensor& weight,
                              const torch::Tensor& bias) {
  check_operands(x, weight, 1, "linear_few_rows");
  const torch::Tensor xc = x.contiguous(), wc = weight.contiguous();
  const torch::Tensor bc = bias.defined() ? bias.contiguous() : bias;
  torch::Tensor y = torch::empty({x.size(0), weight.size(0)}, x.options());
  linear_few_rows(xc.data_ptr<float>(), x.size(0), x.size(1), wc.data_ptr<float>(), weight.size(0),
                  bc.defined() ? bc.data_ptr<float>() : nullptr, y.data_ptr<float>());
  return y;
}

void linear_few_rows(const float* x, int64_t rows, int64_t in, const float* weight, int64_t out,
                     const float* bias, float* y) {
  ALTO_CHECK(rows >= 1 && rows <= kMaxFewRows, "linear_few_rows: rows must lie in [1, ",
             kMaxFewRows, "], got ", rows);
  dispatch_rows<Linear>(rows, x, weight, bias, y, in, out);
}

torch::Tensor matmul_few_rows(const torch::Tensor& x, const torch::Tensor& weight) {
  check_operands(x, weight, 0, "matmul_few_rows");
  const torch::Tensor xc = x.contiguous(), wc = weight.contiguous();
  torch::Tensor y = torch::empty({x.size(0), weight.size(1)}, x.options());
  dispatch_rows<Matmul>(x.size(0), xc.data_ptr<float>(), wc.data_ptr<float>(), y.data_ptr<float>(),
                        x.size(1), weight.size(1));
  return y;
}

}  // namespace alto::models::kernels
