#pragma once
// Scaled-dot-product attention in one pass over blocks of keys (flash attention's online
// softmax): the [queries, keys] score matrix is never built, so memory stays a few tiles per
// thread however long the sequence, and blocks that a causal or sliding-window band hides are
// never computed (an offline Mimi pass attends to 250 keys per query, not to all of them).
// Vectorised with AVX-512 or AVX2 + FMA where the CPU has them (few_rows.h's instruction-set
// cap applies), plain loops elsewhere; work split over alto's threads by head and query tile.

#include <torch/types.h>

namespace alto::models::kernels {

/// Which keys a query sees, by position: query i of a call sits at `query_offset + i`, key j at
/// j. Key padding, when given, hides keys on top of the band.
struct AttentionBand {
  bool causal = false;  // keys after the query are hidden
  int64_t window = 0;   // > 0: only keys k with query - k < window are seen
  int64_t query_offset = 0;
};

/// Whether fused_attention computes these operands: CPU q [B, H, T, D], k and v [B, KVH, S, D]
/// (any strides), all float32 or all bfloat16, with H a multiple of KVH and T, S >= 1. bfloat16
/// operands are widened to float32 block by block and the result rounded to bfloat16 once, so
/// it equals the float32 kernel on the widened operands (a bfloat16 KV cache is read at half
/// the bytes).
bool fused_attention_fits(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);

/// softmax(q k^T * scale, over the keys the band and `key_padding` let each query see) v, with
/// grouped-query heads (query head h reads kv head h / (H / KVH), transformers' repeat_kv).
/// `key_padding`: undefined, or [B, S] with nonzero for real keys. A query that sees no key at
/// all attends to every key, as transformers' SDPA mask makes it do. Returns [B, H, T, D], a
/// view of a contiguous [B, T, H, D] tensor, so merging the heads afterwards copies nothing.
torch::Tensor fused_attention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v, double scale, const AttentionBand& band,
                              const torch::Tensor& key_padding = {});

}  // namespace alto::models::kernels
