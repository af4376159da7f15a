// core/activation_memory: large CPU activations come from kept mappings and are reused; the
// limit bounds what is kept; small ones are plain torch::empty. Weights converted at load get
// mappings of their own from a huge page boundary.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/core/activation_memory.h"

TEST_CASE("activation memory: reuse, limit and release", "[activation_memory]") {
  const size_t limit = alto::activation_cache_limit();
  alto::release_activation_cache();
  REQUIRE(alto::cached_activation_bytes() == 0);

  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  void* first = nullptr;
  {
    torch::Tensor a = alto::empty_activation({8, 1 << 18}, f32);  // 8 MiB
    REQUIRE(a.sizes() == torch::IntArrayRef({8, 1 << 18}));
    REQUIRE(a.is_contiguous());
    a.fill_(2);  // the memory is writable to its end
    REQUIRE(a.sum().item<double>() == 2.0 * 8 * (1 << 18));
    first = a.data_ptr();
  }
  REQUIRE(alto::cached_activation_bytes() >= size_t{8} << 20);
  {
    // A smaller request within half the kept mapping's size reuses it.
    torch::Tensor b = alto::empty_activation({6, 1 << 18}, f32);
    REQUIRE(b.data_ptr() == first);
    REQUIRE(alto::cached_activation_bytes() == 0);
    // A much smaller one does not take the large mapping.
    torch::Tensor c = alto::empty_activation({1 << 10}, f32);
    REQUIRE(c.data_ptr() != first);
  }
  alto::set_activation_cache_limit(0);
  REQUIRE(alto::cached_activation_bytes() == 0);
  { torch::Tensor d = alto::empty_activation({8, 1 << 18}, f32); }
  REQUIRE(alto::cached_activation_bytes() == 0);
  alto::set_activation_cache_limit(limit);
  { torch::Tensor e = alto::empty_activation({8, 1 << 18}, f32); }
  REQUIRE(alto::cached_activation_bytes() > 0);
  alto::release_activation_cache();
  REQUIRE(alto::cached_activation_bytes() == 0);
}

TEST_CASE("weights converted at load: from 4 MiB on a huge page boundary, unmapped when freed",
          "[activation_memory]") {
  alto::release_activation_cache();
  const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16);
  {
    // 5 MiB and a bit: two whole huge pages and a tail in small pages, all of it writable.
    torch::Tensor w = alto::empty_on_huge_pages({(5 << 20) + 6}, bf16);
    REQUIRE(w.sizes() == torch::IntArrayRef({(5 << 20) + 6}));
    REQUIRE(w.scalar_type() == torch::kBFloat16);
    REQUIRE(reinterpret_cast<uintptr_t>(w.data_ptr()) % (size_t{2} << 20) == 0);
    w.fill_(1);
    REQUIRE(w.sum(torch::kFloat64).item<double>() == double((5 << 20) + 6));
  }
  // Its own mapping, not the activation cache's.
  REQUIRE(alto::cached_activation_bytes() == 0);
  // Small tensors are plain torch::empty.
  torch::Tensor small = alto::empty_on_huge_pages({3, 5}, bf16);
  REQUIRE(small.sizes() == torch::IntArrayRef({3, 5}));
  small.fill_(2);
  REQUIRE(small.sum(torch::kFloat64).item<double>() == 30.0);
}
