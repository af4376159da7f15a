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

}  // namespace

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
