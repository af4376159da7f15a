#pragma once
// Memory for large activations. A fresh CPU allocation costs a page fault per 4 KiB page on its
// first touch; on the virtual machines alto is measured on that ran at ~300 MB/s (0.35 s to
// first write one 113 MB activation, longer than the convolution writing it) and serialised
// threads. alto's long-signal layers (models/layers/conv.h) therefore take their outputs from
// here: mappings of 4 MiB and more in transparent huge pages (2 MiB pages: 512x fewer faults),
// and mappings freed by one layer are kept for the next layer or call instead of being
// returned to the kernel, up to a bound.

#include <torch/types.h>

#include <cstddef>

namespace alto {

/// torch::empty(sizes, options); on CPU from the activation cache when it holds 4 MiB or more.
torch::Tensor empty_activation(torch::IntArrayRef sizes, const torch::TensorOptions& options);

/// torch::empty(sizes, options); on CPU, from 4 MiB, a mapping of its own in transparent huge
/// pages, unmapped with the tensor: for weights converted at load, which a decode step streams
/// whole (with 4 KiB pages each one costs a TLB miss; the hardware prefetcher stops at each).
torch::Tensor empty_on_huge_pages(torch::IntArrayRef sizes, const torch::TensorOptions& options);

/// Bytes of freed activation memory kept for reuse (at most activation_cache_limit()).
size_t cached_activation_bytes();
/// The most freed activation memory kept, in bytes (default 1 GiB; 0 keeps none).
size_t activation_cache_limit();
void set_activation_cache_limit(size_t bytes);
/// Returns every kept mapping to the kernel.
void release_activation_cache();

/// Tunes glibc's malloc for tensor work: blocks up to 32 MiB come from the heap and up to 1 GiB
/// of freed heap is kept, so the next operator's output reuses pages already faulted in instead
/// of a fresh mmap (the whisper-base encoder on 2 threads: 0.82 s -> 0.63 s). A process-wide
/// choice, so the library never makes it on its own: the CLI does, first thing, and so do
/// alto.datasets' workers (Dask starts them with MALLOC_TRIM_THRESHOLD_=65536, which made Mimi
/// 2.4x slower). Returns false where the C library is not glibc.
bool keep_freed_memory();

}  // namespace alto
