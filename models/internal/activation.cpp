#include "alto/models/internal/activation.h"

#include <ATen/record_function.h>
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "alto/core/error.h"
#include "alto/core/threading.h"
#include "alto/models/internal/few_rows.h"

namespace alto::models::kernels {

namespace {

#define ALTO_KERNEL_FILE "alto/models/internal/activation_kernel.inc"
#include "alto/models/internal/per_isa.inc"
#undef ALTO_KERNEL_FILE

// Values per thread's share at least: spawning a thread costs tens of microseconds.
constexpr int64_t kValuesPerChunk = 1 << 16;

void run(const torch::Tensor& x, const torch::Tensor& bias, Activation activation,
         const torch::Tensor& y) {
  ALTO_CHECK(activation_fits(x), "kernels::activate: x must be float32, CPU and contiguous, got ",
             x.scalar_type(), " ", x.device(), " ", x.sizes());
  const int64_t columns = x.dim() == 0 ? 1 : x.size(-1);
  const int64_t rows = columns == 0 ? 0 : x.numel() / columns;
  torch::Tensor b;
  if (bias.defined()) {
    ALTO_CHECK(bias.dim() == 1 && bias.size(0) == columns && bias.scalar_type() == torch::kFloat32,
               "kernels::activate: bias must be float32 [", columns, "], got ", bias.scalar_type(),
               " ", bias.sizes());
    b = bias.to(torch::kCPU).contiguous();
  }
  // Seen by libtorch's profiler as an operator of its own (bench/whisper's time breakdown).
  RECORD_FUNCTION("alto::activation", std::vector<c10::IValue>());
  const float* in = x.data_ptr<float>();
  float* out = y.data_ptr<float>();
  const float* bias_data = b.defined() ? b.data_ptr<float>() : nullptr;
  const Isa isa = available_isa();
  const int64_t grain = std::max<int64_t>(1, kValuesPerChunk / std::max<int64_t>(columns, 1));
  parallel_for(0, rows, grain, [&](int64_t first, int64_t last) {
    if (isa >= Isa::kAvx512)
      avx512::activate_rows(in, out, first, last, columns, bias_data, activation);
    else if (isa >= Isa::kAvx2)
      avx2::activate_rows(in, out, first, last, columns, bias_data, activation);
    else
      plain::activate_rows(in, out, first, last, columns, bias_data, activation);
  });
}

// The distance between x's rows of x.size(-1) adjacent values, or -1 where x is not evenly
// spaced such rows. Dimensions of size 1 have no stride to speak of.
int64_t row_stride(const torch::Tensor& x) {
  if (!x.defined() || x.layout() != torch::kStrided || x.dim() == 0) return -1;
  const int64_t columns = x.size(-1);
  if (columns > 1 && x.stride(-1) != 1) return -1;
  int64_t ld = -1, inner_extent = 0;  // the stride and stride * size of the last dimension seen
  for (int64_t d = x.dim() - 2; d >= 0; --d) {
    if (x.size(d) == 1) continue;
    if (ld < 0)
      ld = x.stride(d);
    else if (x.stride(d) != inner_extent)
      return -1;
    inner_extent = x.stride(d) * x.size(d);
  }
  if (ld < 0) return columns;  // one row
  return ld >= columns ? ld : -1;
}

}  // namespace

bool gated_activation_fits(const torch::Tensor& gate, const torch::Tensor& up) {
  return row_stride(gate) >= 0 && row_stride(up) >= 0 && gate.is_cpu() && up.is_cpu() &&
         gate.sizes() == up.sizes() && gate.scalar_type() == up.scalar_type() &&
         (gate.scalar_type() == torch::kFloat32 || gate.scalar_type() == torch::kBFloat16);
}

void activate_gated_(const torch::Tensor& gate, const torch::Tensor& up, Activation activation) {
  ALTO_CHECK(gated_activation_fits(gate, up),
             "kernels::activate_gated_: gate and up must be float32 or bfloat16 CPU rows of one "
             "shape, got ",
             gate.scalar_type(), " ", gate.sizes(), " and ", up.scalar_type(), " ", up.sizes());
  const int64_t columns = gate.size(-1);
  const int64_t rows = columns == 0 ? 0 : gate.numel() / columns;
  const int64_t ld_gate = row_stride(gate), ld_up = row_stride(up);
  RECORD_FUNCTION("alto::activate_gated", std::vector<c10::IValue>());
  const Isa isa = available_isa();
  const int64_t grain = std::max<int64_t>(1, kValuesPerChunk / std::max<int64_t>(columns, 1));
  auto run_as = [&](auto* g, auto* u) {
    parallel_for(0, rows, grain, [&](int64_t first, int64_t last) {
      if (isa >= Isa::kAvx512)
        avx512::activate_gated_rows(g, ld_gate, u, ld_up, first, last, columns, activation);
      else if (isa >= Isa::kAvx2)
        avx2::activate_gated_rows(g, ld_gate, u, ld_up, first, last, columns, activation);
      else
        plain::activate_gated_rows(g, ld_gate, u, ld_up, first, last, columns, activation);
    });
  };
  if (gate.scalar_type() == torch::kFloat32)
    run_as(gate.data_ptr<float>(), up.data_ptr<float>());
  else
    run_as(reinterpret_cast<uint16_t*>(gate.data_ptr<c10::BFloat16>()),
           reinterpret_cast<const uint16_t*>(up.data_ptr<c10::BFloat16>()));
}

bool activation_fits(const torch::Tensor& x) {
  return x.defined() && x.layout() == torch::kStrided && x.is_cpu() &&
         x.scalar_type() == torch::kFloat32 && x.is_contiguous();
}

torch::Tensor activate(const torch::Tensor& x, const torch::Tensor& bias, Activation activation) {
  torch::Tensor y = torch::empty_like(x, torch::MemoryFormat::Contiguous);
  run(x, bias, activation, y);
  return y;
}

void activate_(const torch::Tensor& x, const torch::Tensor& bias, Activation activation) {
  run(x, bias, activation, x);
}

}  // namespace alto::models::kernels
