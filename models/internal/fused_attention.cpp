#include "alto/models/internal/fused_attention.h"

#include <ATen/record_function.h>
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "alto/core/error.h"
#include "alto/core/threading.h"
#include "alto/models/internal/few_rows.h"

namespace alto::models::kernels {

namespace {

// Queries per work item and keys per block: a block's scores (48 KiB) and its keys and values
// stay in L2 while the 96 queries use them: a multiple of the kernel's 4 and 6 rows per pass, and
// a third fewer passes over each head's keys and values than 64 (Whisper-base's encoder
// attention, six-row passes, interleaved A/B: 96 queries 83 ms a layer, 48 queries 86).
constexpr int64_t kQueryTile = 96;
constexpr int64_t kKeyBlock = 128;
// Above this many queries per head the keys are packed transposed once per head, so that score
// vectors are key vectors; a few-query step (Whisper's beams fold into the cross-attention's
// queries) takes dot products with the keys as they lie. Against 1500 keys packing paid from
// about 12 queries on (5 queries: 0.82 ms packed, 0.44 ms as they lie).
constexpr int64_t kPackAbove = 8;
// Packed key rows are padded to a multiple of this (two AVX-512 vectors).
constexpr int64_t kPackWidth = 32;

// Pointers and strides (in elements) of one call; see attend() in the kernel. q, k and v are
// float32 or bfloat16 alike; the packed keys and the output are float32.
struct Problem {
  const void* q;
  int64_t q_batch, q_head, q_time;
  const void* k;
  int64_t k_batch, k_head, k_time;
  const float* kt;  // keys transposed [B, KVH, D, keys padded], or null
  int64_t kt_batch, kt_head, kt_row;
  const void* v;
  int64_t v_batch, v_head, v_time;
  float* out;
  int64_t out_batch, out_head, out_time;
  const uint8_t* key_padding;  // [B, S] or null
  int64_t heads, group, queries, keys, head_dim, tiles;
  float scale;
  AttentionBand band;
};

#define ALTO_KERNEL_FILE "alto/models/internal/fused_attention_kernel.inc"
#include "alto/models/internal/per_isa.inc"
#undef ALTO_KERNEL_FILE

template <typename T>
void attend(Isa isa, const Problem& p, int64_t first, int64_t last, float* scratch) {
  if (isa >= Isa::kAvx512)
    avx512::attend<T>(p, first, last, scratch);
  else if (isa >= Isa::kAvx2)
    avx2::attend<T>(p, first, last, scratch);
  else
    plain::attend<T>(p, first, last, scratch);
}

}  // namespace

bool fused_attention_fits(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  const torch::ScalarType dtype = q.scalar_type();
  return q.dim() == 4 && k.dim() == 4 && k.sizes() == v.sizes() && q.size(0) == k.size(0) &&
         q.size(3) == k.size(3) && k.size(1) > 0 && q.size(1) % k.size(1) == 0 && q.size(2) > 0 &&
         k.size(2) > 0 && q.size(3) > 0 && q.is_cpu() && k.is_cpu() && v.is_cpu() &&
         (dtype == torch::kFloat32 || dtype == torch::kBFloat16) && k.scalar_type() == dtype &&
         v.scalar_type() == dtype && q.layout() == torch::kStrided &&
         k.layout() == torch::kStrided && v.layout() == torch::kStrided;
}

torch::Tensor fused_attention(const torch::Tensor& q_in, const torch::Tensor& k_in,
                              const torch::Tensor& v_in, double scale, const AttentionBand& band,
                              const torch::Tensor& key_padding) {
  ALTO_CHECK(fused_attention_fits(q_in, k_in, v_in),
             "fused_attention: q must be float32 or bfloat16 CPU [batch, heads, T, D] and k, v "
             "[batch, kv_heads, S, D] of its dtype with heads a multiple of kv_heads, got ",
             q_in.sizes(), " ", q_in.scalar_type(), ", ", k_in.sizes(), " ", k_in.scalar_type(),
             ", ", v_in.sizes(), " ", v_in.scalar_type());
  // Seen by libtorch's profiler as an operator of its own (bench/whisper's time breakdown).
  RECORD_FUNCTION("alto::fused_attention", std::vector<c10::IValue>());
  ALTO_CHECK(band.window >= 0, "fused_attention: window must be >= 0, got ", band.window);
  const int64_t batch = q_in.size(0), heads = q_in.size(1), queries = q_in.size(2);
  const int64_t kv_heads = k_in.size(1), keys = k_in.size(2), head_dim = q_in.size(3);
  // The kernel reads rows of D contiguous floats.
  auto rows_contiguous = [](const torch::Tensor& t) {
    return t.stride(3) == 1 ? t : t.contiguous();
  };
  const torch::Tensor q = rows_contiguous(q_in), k = rows_contiguous(k_in);
  const torch::Tensor v = rows_contiguous(v_in);
  torch::Tensor padding;
  if (key_padding.defined()) {
    ALTO_CHECK(
        key_padding.dim() == 2 && key_padding.size(0) == batch && key_padding.size(1) == keys,
        "fused_attention: key_padding must be [", batch, ", ", keys, "], got ",
        key_padding.sizes());
    padding = key_padding.to(torch::kCPU).ne(0).to(torch::kUInt8).contiguous();
  }
  torch::Tensor kt;
  if (queries > kPackAbove) {
    const int64_t padded = (keys + kPackWidth - 1) / kPackWidth * kPackWidth;
    kt = torch::zeros({batch, kv_heads, head_dim, padded}, k.options().dtype(torch::kFloat32));
    kt.narrow(3, 0, keys).copy_(k.transpose(2, 3));
  }
  torch::Tensor out =
      torch::empty({batch, queries, heads, head_dim}, q.options().dtype(torch::kFloat32));

  Problem p{};
  p.q = q.data_ptr();
  p.q_batch = q.stride(0), p.q_head = q.stride(1), p.q_time = q.stride(2);
  p.k = k.data_ptr();
  p.k_batch = k.stride(0), p.k_head = k.stride(1), p.k_time = k.stride(2);
  if (kt.defined()) {
    p.kt = kt.data_ptr<float>();
    p.kt_batch = kt.stride(0), p.kt_head = kt.stride(1), p.kt_row = kt.stride(2);
  }
  p.v = v.data_ptr();
  p.v_batch = v.stride(0), p.v_head = v.stride(1), p.v_time = v.stride(2);
  p.out = out.data_ptr<float>();
  p.out_batch = out.stride(0), p.out_head = out.stride(2), p.out_time = out.stride(1);
  p.key_padding = padding.defined() ? padding.data_ptr<uint8_t>() : nullptr;
  p.heads = heads, p.group = heads / kv_heads, p.queries = queries, p.keys = keys;
  p.head_dim = head_dim, p.tiles = (queries + kQueryTile - 1) / kQueryTile;
  p.scale = static_cast<float>(scale);
  p.band = band;

  const Isa isa = available_isa();
  const int64_t items = batch * heads * p.tiles;
  const size_t scratch_floats =
      2 * kQueryTile * head_dim + kQueryTile * kKeyBlock + 2 * kQueryTile + kKeyBlock * head_dim;
  const bool bfloat16 = q.scalar_type() == torch::kBFloat16;
  parallel_for(0, items, 1, [&](int64_t first, int64_t last) {
    // Every part of the scratch is written before it is read: not zeroed (a decoding step's
    // attention is short enough for a 99 KiB memset to show).
    const std::unique_ptr<float[]> scratch(new float[scratch_floats]);
    if (bfloat16)
      attend<uint16_t>(isa, p, first, last, scratch.get());
    else
      attend<float>(isa, p, first, last, scratch.get());
  });
  // bfloat16 operands get a bfloat16 result, rounded once from the float32 sums.
  return (bfloat16 ? out.to(torch::kBFloat16) : out).permute({0, 2, 1, 3});
}

}  // namespace alto::models::kernels
