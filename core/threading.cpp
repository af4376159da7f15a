#include "alto/core/threading.h"

#include <ATen/Parallel.h>

#include <atomic>
#include <thread>

#include "alto/core/error.h"

namespace alto {
namespace {
std::atomic<int> g_threads{0};  // 0: not set yet, use default_num_threads()
}

void set_num_threads(int threads) {
  ALTO_CHECK(threads >= 1, "threads must be >= 1, got ", threads);
  g_threads = threads;
  at::set_num_threads(threads);
}

int num_threads() {
  int n = g_threads.load();
  return n > 0 ? n : default_num_threads();
}

int default_num_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace alto
