#include <ATen/Parallel.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "alto/core/error.h"
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

TEST_CASE("TorchThreads sets the calling thread's libtorch team while alive, nested", "[core]") {
  if (at::get_parallel_info().find("parallel backend: OpenMP") == std::string::npos) {
    WARN("skipped: TorchThreads is a no-op where libtorch does not use OpenMP");
    return;
  }
  alto::set_num_threads(2);
  {
    const alto::TorchThreads held(1);
    CHECK(at::get_num_threads() == 1);
    {
      const alto::TorchThreads team(alto::num_threads());
      CHECK(at::get_num_threads() == 2);
    }
    CHECK(at::get_num_threads() == 1);
    // Another thread keeps the process's count.
    int other = 0;
    std::thread([&] { other = at::get_num_threads(); }).join();
    CHECK(other == 2);
  }
  CHECK(at::get_num_threads() == 2);
  CHECK_THROWS_WITH(alto::TorchThreads(0),
                    Catch::Contains("TorchThreads: threads must be in [1, "));
  CHECK(at::get_num_threads() == 2);
  alto::set_num_threads(1);
}

namespace {

// Each index of [0, n) counted by parallel_for's chunks.
std::vector<int> coverage(int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  alto::parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
  });
  std::vector<int> out;
  for (const auto& h : hits) out.push_back(h.load());
  return out;
}

}  // namespace

TEST_CASE("parallel_for: every index once, errors rethrown, nested and concurrent calls",
          "[core]") {
  const int saved = alto::num_threads();
  for (int threads : {1, 2, 3, 7}) {
    alto::set_num_threads(threads);
    for (const auto& [n, grain] :
         {std::pair<int64_t, int64_t>{1, 1}, {10, 1}, {1000, 7}, {5, 100}, {64, 16}}) {
      INFO("threads " << threads << " n " << n << " grain " << grain);
      CHECK(coverage(n, grain) == std::vector<int>(static_cast<size_t>(n), 1));
    }
  }
  alto::set_num_threads(4);
  // The first exception a chunk throws reaches the caller; the pool serves the next call.
  CHECK_THROWS_WITH(alto::parallel_for(0, 8, 1,
                                       [](int64_t b, int64_t) {
                                         if (b >= 4) throw alto::InvalidArgument("chunk failed");
                                       }),
                    Catch::Contains("chunk failed"));
  CHECK(coverage(100, 1) == std::vector<int>(100, 1));
  // A call from inside a chunk runs serially on that chunk's thread.
  std::atomic<int64_t> inner{0};
  alto::parallel_for(0, 4, 1, [&](int64_t, int64_t) {
    const auto self = std::this_thread::get_id();
    alto::parallel_for(0, 10, 1, [&](int64_t b, int64_t e) {
      if (std::this_thread::get_id() == self) inner += e - b;
    });
  });
  CHECK(inner == 40);
  // Two threads calling at once: one gets the workers, the other runs serially; both complete.
  std::vector<int> first, second;
  std::thread other([&] { first = coverage(5000, 1); });
  second = coverage(5000, 1);
  other.join();
  CHECK(first == std::vector<int>(5000, 1));
  CHECK(second == std::vector<int>(5000, 1));
  // A forked child (Python multiprocessing, Dask) starts workers of its own.
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(coverage(1000, 1) == std::vector<int>(1000, 1) ? 0 : 1);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  alto::set_num_threads(saved);
}
