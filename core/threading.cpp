#include "alto/core/threading.h"

#include <ATen/Parallel.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "alto/core/error.h"
#include "alto/core/internal/blas.h"

namespace alto {
namespace {
std::atomic<int> g_threads{0};  // 0: not set yet, use default_num_threads()
thread_local bool t_in_parallel_region = false;
}  // namespace

void set_num_threads(int threads) {
  ALTO_CHECK(threads >= 1 && threads <= max_num_threads(), "threads must be in [1, ",
             max_num_threads(), "] (4 per core of this machine's ", default_num_threads(),
             ", at least 64), got ", threads);
  g_threads = threads;
  at::set_num_threads(threads);
  set_blas_num_threads(threads);
}

int num_threads() {
  int n = g_threads.load();
  return n > 0 ? n : default_num_threads();
}

int default_num_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

int max_num_threads() { return std::max(64, 4 * default_num_threads()); }

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
  if (begin >= end) return;
  const int64_t range = end - begin;
  const int64_t chunks =
      std::min<int64_t>(num_threads(), (range + grain - 1) / std::max<int64_t>(grain, 1));
  if (chunks <= 1 || t_in_parallel_region) {
    fn(begin, end);
    return;
  }
  const int64_t chunk = (range + chunks - 1) / chunks;
  std::exception_ptr error;
  std::mutex error_mutex;
  auto run = [&](int64_t b, int64_t e) {
    t_in_parallel_region = true;
    try {
      fn(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
    t_in_parallel_region = false;
  };
  std::vector<std::thread> workers;
  for (int64_t c = 1; c < chunks; ++c) {
    const int64_t b = begin + c * chunk;
    if (b < end) workers.emplace_back(run, b, std::min(end, b + chunk));
  }
  run(begin, std::min(end, begin + chunk));
  for (auto& w : workers) w.join();
  if (error) std::rethrow_exception(error);
}

SingleThreadedTorch::SingleThreadedTorch() : previous_(at::get_num_threads()) {
  // at::get_num_threads() above ran libtorch's per-thread OpenMP set-up, which would otherwise
  // restore the global count at this thread's first parallel operator.
#ifdef _OPENMP
  omp_set_num_threads(1);
#endif
}

SingleThreadedTorch::~SingleThreadedTorch() {
#ifdef _OPENMP
  omp_set_num_threads(previous_);
#endif
}

}  // namespace alto
