#pragma once
// What alto runs on: the CPU's vector level and the BLAS libtorch's matrix products use, with
// what alto did about the BLAS when libalto loaded (core/internal/blas.h: the rule and the switch),
// and the process's memory.

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
  // How long OpenBLAS's idle threads poll before sleeping, and who chose it (alto when it
  // loaded, the user's environment, or OpenBLAS's default where alto could not set it).
  std::string thread_timeout;

  std::string to_string() const;
};

/// A fresh reading of the BLAS (core and threads now) with the load-time decision.
BlasInfo blas_info();

/// This process's memory, kB, as Linux's /proc/self/status gives it (0 elsewhere).
struct MemoryInfo {
  long resident_kb = 0;       // VmRSS: resident now
  long peak_resident_kb = 0;  // VmHWM: the most resident so far. Not getrusage's ru_maxrss,
                              // which Linux carries over an exec from the parent process.
};
MemoryInfo memory_info();

/// alto's version ("0.1.0").
std::string version();
/// The libtorch alto runs on: "1.13.0 (CPU)", or "2.11.0 (CUDA, 1 device)".
std::string torch_version();

}  // namespace alto
