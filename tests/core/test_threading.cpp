#include <ATen/Parallel.h>

#include <catch2/catch.hpp>

#include "alto/core/threading.h"

TEST_CASE("set_num_threads drives libtorch's intra-op pool", "[core]") {
  alto::set_num_threads(2);
  CHECK(alto::num_threads() == 2);
  CHECK(at::get_num_threads() == 2);
  alto::set_num_threads(1);
  CHECK(at::get_num_threads() == 1);
  CHECK_THROWS_WITH(alto::set_num_threads(0), Catch::Contains("threads must be >= 1"));
  CHECK(alto::default_num_threads() >= 1);
}
