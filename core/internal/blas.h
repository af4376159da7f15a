#pragma once
// Control of the BLAS that libtorch's matrix products run on, and the OpenBLAS kernel set alto
// makes it use (core/system_info.h reports both). Internal: applications read, alto steers.
//
// Debian's libtorch calls the system BLAS, usually OpenBLAS built with DYNAMIC_ARCH: when it loads
// it picks one kernel set (a "core": Prescott, Haswell, SkylakeX, ...) for the CPU it recognises.
// Where it does not recognise the CPU it can land on an older core; on an AVX-512 machine the
// Prescott (SSE3) core runs SGEMM about 5x slower than SkylakeX. When libalto loads, right after
// OpenBLAS made its choice and before any GEMM, alto compares that core with what cpuid says the
// CPU runs and switches OpenBLAS in-process to the better core when the loaded one is of a lower
// instruction-set level. It never overrides OPENBLAS_CORETYPE set by the user, and
// ALTO_BLAS_CORETYPE=keep turns the switch off.

#include <string>

#include "alto/core/system_info.h"

namespace alto {

/// The vector level an OpenBLAS core name needs ("avx512", "avx2", "avx", "sse"), case-insensitive;
/// "" for a name alto does not know.
std::string openblas_core_level(const std::string& core);

/// alto's decision: `core` is the OpenBLAS core to switch to, empty to leave the current one.
struct BlasChoice {
  std::string core;
  std::string reason;
};

/// The rule applied when libalto loads, as a pure function a C++ application can call with its own
/// inputs. `current_core` is what OpenBLAS runs now (empty when the BLAS is not OpenBLAS);
/// `openblas_coretype` and `alto_blas_coretype` are those environment variables' values, nullptr
/// when unset. Switches only when the current core is of a lower level than the CPU runs, the user
/// set no OPENBLAS_CORETYPE, and ALTO_BLAS_CORETYPE is unset or "auto" ("keep" opts out; any
/// other value is reported and changes nothing).
BlasChoice choose_blas_core(const std::string& current_core, const CpuInfo& cpu,
                            const char* openblas_coretype, const char* alto_blas_coretype);

/// Applies choose_blas_core() to the process as it is now and returns the result; libalto runs it
/// when it loads. Call it again after something else changed the core. Like any core switch it must
/// not run while another thread is inside a BLAS call.
BlasInfo configure_blas();

/// How long OpenBLAS's idle threads poll for work (calling sched_yield) before they sleep, as
/// log2 of TSC cycles: OpenBLAS's own default is 28 (~0.1 s), after every threaded product. On
/// two cores that poller shared a core with alto's and libtorch's threads for the whole of the
/// work between products (Whisper-base's encoder on 2 threads: 0.53-0.58 s against 0.45-0.49 s
/// with 20; its decoder step on 2 threads at times no faster than on 1). 2^20 cycles still
/// spans the few microseconds between one layer's products.
constexpr int kBlasThreadTimeoutLog2 = 20;

/// alto's decision on OpenBLAS's idle-thread timeout: `log2_cycles` to set, 0 to leave it.
struct BlasThreadTimeoutChoice {
  int log2_cycles = 0;
  std::string reason;
};

/// The rule libalto applies when it loads, as a pure function: kBlasThreadTimeoutLog2 unless the
/// user set OPENBLAS_THREAD_TIMEOUT or GOTO_THREAD_TIMEOUT (the values given, nullptr when
/// unset; OPENBLAS_THREAD_TIMEOUT=28 restores OpenBLAS's default).
BlasThreadTimeoutChoice choose_blas_thread_timeout(const char* openblas_thread_timeout,
                                                   const char* goto_thread_timeout);

/// Switches a DYNAMIC_ARCH OpenBLAS to `core` (an OpenBLAS core name) now. Throws
/// alto::Unsupported when the BLAS is not such an OpenBLAS, alto::InvalidArgument for a core alto
/// does not know or this CPU cannot run. Not safe while another thread is inside a BLAS call: the
/// kernel table is swapped under it.
void set_blas_core(const std::string& core);

/// Sets OpenBLAS's own thread pool (>= 1); alto::set_num_threads calls it, since libtorch leaves
/// the BLAS pool at all cores whatever its intra-op count is. A no-op for other BLAS libraries.
void set_blas_num_threads(int threads);

/// OpenBLAS's thread count now; 0 when unknown (another BLAS).
int blas_num_threads();

/// Runs OpenBLAS single-threaded while alive, for GEMMs issued from several threads at once
/// (alto's time tiles): a threaded OpenBLAS (pthreads build) serialises concurrent callers on
/// its one thread server, while single-threaded calls run side by side. Restores the count.
class SingleThreadedBlas {
 public:
  SingleThreadedBlas();
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  int previous_;
};

}  // namespace alto
