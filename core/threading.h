#pragma once
// One thread count for alto's own parallel work, libtorch's intra-op pool and the BLAS's pool.

#include <cstdint>
#include <functional>

namespace alto {

/// Sets the thread count, 1 ..= max_num_threads(). Debian's libtorch starts with one intra-op
/// thread, so alto's entry points (the CLI's --threads, the Python module) call this explicitly.
void set_num_threads(int threads);
int num_threads();
/// All cores of this machine.
int default_num_threads();
/// The most threads set_num_threads takes: 4 per core, at least 64. More only oversubscribe the
/// cores, and thousands make libtorch's and the BLAS's pools take minutes to start.
int max_num_threads();

/// Runs fn(chunk_begin, chunk_end) over [begin, end) split into at most num_threads() chunks of
/// at least `grain` items, on std::threads (the caller runs one chunk). alto uses this rather than
/// at::parallel_for because Debian's OpenMP build of libtorch does not scale its team on these
/// machines (two OpenMP threads ran an FFT loop slower than one). Calls made from inside a chunk
/// run serially. The first exception a chunk throws is rethrown here.
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

/// While alive, libtorch's intra-op work started from the calling thread runs on `threads`
/// threads (OpenMP's team size is per thread; other threads keep theirs); a no-op where libtorch
/// does not use OpenMP. TorchThreads(1) is for work too small to share: a streaming step's
/// operators take microseconds each, and handing each to a second OpenMP thread cost more than
/// it saved (Mimi, one 80 ms frame: 10x slower on 2 threads than on 1 while the other core was
/// busy), and the team's threads spin on their cores for milliseconds after each operator.
/// TorchThreads(num_threads()) gives the team back inside such a hold, for the products that only
/// it runs (oneDNN's bfloat16 GEMMs on CPUs with AVX-512 BF16: a 1000-token bfloat16 prefill of a
/// 4-layer Qwen2-0.5B took 0.84 s on 1 thread, 0.80 s on 2 held to one, 0.65 s on 2 with this).
class TorchThreads {
 public:
  explicit TorchThreads(int threads);
  ~TorchThreads();
  TorchThreads(const TorchThreads&) = delete;
  TorchThreads& operator=(const TorchThreads&) = delete;

 private:
  int previous_;
};

}  // namespace alto
