#include <ATen/Parallel.h>

#include <catch2/catch.hpp>

#include "alto/core/threading.h"

TEST_CASE("set_num_threads drives libtorch's intra-op pool", "[core]") {
  alto::set_num_threads(2);
  CHECK(alto::num_threads() == 2);
  CHECK(at::get_num_threads() == 2);
  alto::set_num_threads(1);
  CHECK(at::get_num_threads() == 1);
  CHECK_THROWS_WITH(alto::set_num_threads(0), Catch::Contains("threads must be in [1, "));
  // Thousands of threads took libtorch and the BLAS minutes to start: refused, nothing changed.
  alto::set_num_threads(1);
  CHECK_THROWS_WITH(alto::set_num_threads(5000), Catch::Contains("got 5000"));
  CHECK(alto::num_threads() == 1);
  CHECK(alto::max_num_threads() >= 64);
  CHECK(alto::default_num_threads() >= 1);
}
