#include "alto/core/threading.h"

#include <ATen/Parallel.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
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
  // Read once: hardware_concurrency() opens and parses a sysfs file on every call (glibc's
  // get_nprocs), ~5 us that every parallel_for paid while no thread count had been set.
  static const int cores = [] {
    const unsigned n = std::thread::hardware_concurrency();
    return n > 0 ? static_cast<int>(n) : 1;
  }();
  return cores;
}

int max_num_threads() { return std::max(64, 4 * default_num_threads()); }

namespace {

// Workers that live for the process and wait for work: starting a std::thread per call cost
// ~100 us, paid by every few-row product of a decode step (hundreds a token). Between calls a
// worker, and the caller for its workers, polls for a short while (yielding the core) before
// sleeping: a step's calls come microseconds apart, and a futex wake-up costs ~10 us. One caller
// at a time; a call made while another thread holds the pool runs serially.
class WorkerPool {
 public:
  /// Runs task(i) for i in [0, tasks): 0 on the calling thread, the others on workers. Returns
  /// when all have finished; false (nothing run) when another caller holds the pool.
  bool run(int64_t tasks, const std::function<void(int64_t)>& task) {
    std::unique_lock<std::mutex> caller(busy_, std::try_to_lock);
    if (!caller.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (static_cast<int64_t>(workers_.size()) < tasks - 1) {
        const int64_t index = static_cast<int64_t>(workers_.size()) + 1;
        workers_.emplace_back([this, index] { work(index); });
        workers_.back().detach();  // the pool is never destroyed: workers end with the process
      }
      task_ = &task;
      tasks_ = tasks;
      pending_ = tasks - 1;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    task(0);
    if (!poll([this] { return pending_.load(std::memory_order_acquire) == 0; })) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
    }
    return true;
  }

 private:
  // Polls `ready` for about kPoll, yielding the core between looks; whether it became true.
  template <typename Ready>
  static bool poll(const Ready& ready) {
    constexpr auto kPoll = std::chrono::microseconds(50);
    const auto until = std::chrono::steady_clock::now() + kPoll;
    while (!ready()) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::yield();
    }
    return true;
  }

  void work(int64_t index) {
    t_in_parallel_region = true;  // calls from inside a task run serially
    uint64_t seen = 0;
    for (;;) {
      const auto posted = [&] { return generation_.load(std::memory_order_acquire) != seen; };
      const bool soon = poll(posted);
      int64_t tasks = 0;
      const std::function<void(int64_t)>* task = nullptr;
      {
        // The generation and its work read together: a worker with no part in one call may look
        // while the caller is posting the next.
        std::unique_lock<std::mutex> lock(mutex_);
        if (!soon) wake_.wait(lock, posted);
        seen = generation_.load(std::memory_order_relaxed);
        tasks = tasks_;
        task = task_;
      }
      if (index >= tasks) continue;
      (*task)(index);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        // Through the mutex, so a caller between its check and its wait is not missed.
        { std::lock_guard<std::mutex> lock(mutex_); }
        done_.notify_one();
      }
    }
  }

  std::mutex busy_;   // held by the caller for a whole run
  std::mutex mutex_;  // orders sleeping against posting and finishing
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t)>* task_ = nullptr;
  int64_t tasks_ = 0;
  std::atomic<int64_t> pending_{0};
  std::atomic<uint64_t> generation_{0};
};

std::atomic<WorkerPool*> g_pool{nullptr};

WorkerPool& worker_pool() {
  static std::once_flag once;
  std::call_once(once, [] {
    // A forked child has none of the parent's threads: it starts a pool of its own (the
    // parent's, possibly mid-call, is left as it is).
    pthread_atfork(nullptr, nullptr, [] { g_pool = new WorkerPool; });
    g_pool = new WorkerPool;
  });
  return *g_pool.load();
}

}  // namespace

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
  const std::function<void(int64_t)> task = [&](int64_t c) {
    const int64_t b = begin + c * chunk;
    if (b >= end) return;
    const bool nested = t_in_parallel_region;
    t_in_parallel_region = true;
    try {
      fn(b, std::min(end, b + chunk));
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
    t_in_parallel_region = nested;
  };
  if (!worker_pool().run(chunks, task)) {
    fn(begin, end);  // another thread holds the pool
    return;
  }
  if (error) std::rethrow_exception(error);
}

TorchThreads::TorchThreads(int threads) : previous_(at::get_num_threads()) {
  // at::get_num_threads() above ran libtorch's per-thread OpenMP set-up, which would otherwise
  // restore the global count at this thread's first parallel operator.
  ALTO_CHECK(threads >= 1 && threads <= max_num_threads(), "TorchThreads: threads must be in [1, ",
             max_num_threads(), "], got ", threads);
#ifdef _OPENMP
  omp_set_num_threads(threads);
#endif
}

TorchThreads::~TorchThreads() {
#ifdef _OPENMP
  omp_set_num_threads(previous_);
#endif
}

}  // namespace alto
