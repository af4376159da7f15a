#include "alto/core/activation_memory.h"

#include <sys/mman.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

namespace alto {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

struct Mapping {
  void* base = nullptr;  // as mmap returned it
  size_t bytes = 0;      // mapped, a whole number of huge pages plus one for the alignment
  void* data() const {
    return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(base) + kHugePage - 1) &
                                   ~(kHugePage - 1));
  }
  size_t capacity() const { return bytes - kHugePage; }
};

// A new mapping of `capacity` bytes from a huge page boundary, its first `advised` bytes advised
// into transparent huge pages; none when mmap fails.
Mapping map_from_huge_page(size_t capacity, size_t advised) {
  Mapping m{mmap(nullptr, capacity + kHugePage, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            capacity + kHugePage};
  if (m.base == MAP_FAILED) return {};
  madvise(m.data(), advised, MADV_HUGEPAGE);  // advice: without THP, ordinary pages
  return m;
}

class ActivationCache {
 public:
  // The smallest kept mapping that holds `bytes` without wasting more than half of itself,
  // else a new one; no mapping when mmap fails.
  Mapping take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it)
        if (it->capacity() >= bytes && it->capacity() <= 2 * bytes &&
            (best == free_.end() || it->capacity() < best->capacity()))
          best = it;
      if (best != free_.end()) {
        const Mapping found = *best;
        cached_ -= found.bytes;
        free_.erase(best);
        return found;
      }
    }
    const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    return map_from_huge_page(rounded, rounded);
  }

  void give_back(const Mapping& m) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      free_.push_back(m);
      cached_ += m.bytes;
    }
    trim();
  }

  size_t cached() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }
  size_t limit() {
    std::lock_guard<std::mutex> lock(mutex_);
    return limit_;
  }
  void set_limit(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      limit_ = bytes;
    }
    trim();
  }
  // Over the limit, the oldest kept mappings go first.
  void trim() {
    std::vector<Mapping> unmap;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (cached_ > limit_ && !free_.empty()) {
        unmap.push_back(free_.front());
        cached_ -= free_.front().bytes;
        free_.erase(free_.begin());
      }
    }
    for (const Mapping& old : unmap) munmap(old.base, old.bytes);
  }
  void release() {
    std::vector<Mapping> unmap;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      unmap.swap(free_);
      cached_ = 0;
    }
    for (const Mapping& old : unmap) munmap(old.base, old.bytes);
  }

 private:
  std::mutex mutex_;
  std::vector<Mapping> free_;  // oldest first
  size_t cached_ = 0;
  size_t limit_ = size_t{1} << 30;
};

// Never destroyed: tensors freed during static destruction still give their mapping back.
ActivationCache& cache() {
  static ActivationCache* instance = new ActivationCache();
  return *instance;
}

// The bytes of a tensor of `sizes` and `options` on CPU; 0 on other devices.
size_t cpu_bytes(torch::IntArrayRef sizes, const torch::TensorOptions& options) {
  if (!options.device().is_cpu()) return 0;
  int64_t elements = 1;
  for (int64_t size : sizes) elements *= size;
  return static_cast<size_t>(elements) * options.dtype().itemsize();
}

}  // namespace

torch::Tensor empty_activation(torch::IntArrayRef sizes, const torch::TensorOptions& options) {
  const size_t bytes = cpu_bytes(sizes, options);
  if (bytes < 2 * kHugePage) return torch::empty(sizes, options);
  const Mapping m = cache().take(bytes);
  if (!m.base) return torch::empty(sizes, options);
  return torch::from_blob(
      m.data(), sizes, [m](void*) { cache().give_back(m); }, options);
}

torch::Tensor empty_on_huge_pages(torch::IntArrayRef sizes, const torch::TensorOptions& options) {
  const size_t bytes = cpu_bytes(sizes, options);
  if (bytes < 2 * kHugePage) return torch::empty(sizes, options);
  // The last partial huge page stays in small pages: a weight's tail wastes no memory.
  const Mapping m = map_from_huge_page(bytes, bytes / kHugePage * kHugePage);
  if (!m.base) return torch::empty(sizes, options);
  return torch::from_blob(
      m.data(), sizes, [m](void*) { munmap(m.base, m.bytes); }, options);
}

size_t cached_activation_bytes() { return cache().cached(); }
size_t activation_cache_limit() { return cache().limit(); }
void set_activation_cache_limit(size_t bytes) { cache().set_limit(bytes); }
void release_activation_cache() { cache().release(); }

bool keep_freed_memory() {
#if defined(__GLIBC__)
  return mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
#else
  return false;
#endif
}

}  // namespace alto
