#pragma once
// The BLAS that libtorch's matrix products run on, and the OpenBLAS kernel set alto makes it use.
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

namespace alto {

/// What cpuid (and XGETBV, for the OS's register support) say this CPU can run.
struct CpuInfo {
  std::string vendor;  // "GenuineIntel", "AuthenticAMD", ...; empty off x86-64
  bool sse3 = false, ssse3 = false, sse4_2 = false;
  bool avx = false, avx2 = false, fma = false;
  bool avx512f = false, avx512dq = false, avx512cd = false, avx512bw = false, avx512vl = false;
  bool avx512_bf16 = false;
  bool os_avx = false;     // the OS saves YMM state
  bool os_avx512 = false;  // the OS saves ZMM and opmask state

  /// "avx512", "avx2", "avx" or "sse": the widest vector level usable for GEMM, OS support
  /// included.
  std::string level() const;
  /// The OpenBLAS x86-64 core alto wants for this CPU: "SkylakeX", "Haswell" or "Zen",
  /// "Sandybridge", or "" at the SSE level (no SSE core is worth a switch).
  std::string best_openblas_core() const;
  /// "vendor level: flag flag ..." for logs.
  std::string to_string() const;
};

/// This process's CPU (x86-64; elsewhere every flag is false).
CpuInfo cpu_info();

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

/// The BLAS in this process and what alto did about it.
struct BlasInfo {
  std::string library;      // "OpenBLAS", "MKL", "BLIS", or "unknown"
  std::string config;       // openblas_get_config(): version, DYNAMIC_ARCH, threading
  std::string loaded_core;  // the core OpenBLAS picked when it loaded
  std::string core;         // the core it runs now
  int threads = 0;          // OpenBLAS's thread count; 0 when unknown
  bool dynamic = false;     // OpenBLAS can switch cores (a DYNAMIC_ARCH build)
  CpuInfo cpu;
  std::string action;  // "switched" or "kept"
  std::string reason;  // why, in one sentence

  std::string to_string() const;
};

/// A fresh reading of the BLAS (core and threads now) with the load-time decision.
BlasInfo blas_info();

/// Applies choose_blas_core() to the process as it is now and returns the result; libalto runs it
/// when it loads. Call it again after something else changed the core. Like any core switch it must
/// not run while another thread is inside a BLAS call.
BlasInfo configure_blas();

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
