#include "alto/core/internal/blas.h"

#include <dlfcn.h>
#include <link.h>
#include <strings.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <sstream>
#include <utility>

#include "alto/core/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace alto {
namespace {

bool iequals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && strncasecmp(a.c_str(), b.c_str(), a.size()) == 0;
}

// OpenBLAS 0.3.21's x86-64 cores (driver/others/dynamic.c) by the vector level their SGEMM uses.
struct CoreLevel {
  const char* core;
  const char* level;
};
constexpr CoreLevel kCoreLevels[] = {{"Katmai", "sse"},        {"Coppermine", "sse"},
                                     {"Northwood", "sse"},     {"Prescott", "sse"},
                                     {"Banias", "sse"},        {"Atom", "sse"},
                                     {"Core2", "sse"},         {"Penryn", "sse"},
                                     {"Dunnington", "sse"},    {"Nehalem", "sse"},
                                     {"Athlon", "sse"},        {"Opteron", "sse"},
                                     {"Opteron_SSE3", "sse"},  {"Barcelona", "sse"},
                                     {"Nano", "sse"},          {"Bobcat", "sse"},
                                     {"Sandybridge", "avx"},   {"Bulldozer", "avx"},
                                     {"Piledriver", "avx"},    {"Steamroller", "avx"},
                                     {"Excavator", "avx"},     {"Haswell", "avx2"},
                                     {"Zen", "avx2"},          {"SkylakeX", "avx512"},
                                     {"Cooperlake", "avx512"}, {"SapphireRapids", "avx512"}};

int level_rank(const std::string& level) {
  if (level == "avx512") return 3;
  if (level == "avx2") return 2;
  if (level == "avx") return 1;
  return 0;
}

// OpenBLAS's entry points, looked up in whatever object of the process carries them: libtorch
// links it as libblas.so.3 -> libopenblas.so.0 on Debian, and a module dlopen'ed with RTLD_LOCAL
// (Python) keeps it out of the global scope, so every loaded object's dependency tree is searched.
struct OpenBlas {
  char* (*get_corename)() = nullptr;
  char* (*get_config)() = nullptr;
  int (*get_num_threads)() = nullptr;
  void (*set_num_threads)(int) = nullptr;
  void (*dynamic_init)() = nullptr;
  void (*dynamic_quit)() = nullptr;
  // The thread server of a pthreads build.
  void (*read_env)() = nullptr;
  int (*thread_shutdown)() = nullptr;
  int (*thread_init)() = nullptr;
};

void* find_symbol(const char* name) {
  if (void* s = dlsym(RTLD_DEFAULT, name)) return s;
  std::pair<const char*, void*> search{name, nullptr};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<std::pair<const char*, void*>*>(data);
        if (!info->dlpi_name || !*info->dlpi_name) return 0;
        // RTLD_NOLOAD only takes a reference on an object already mapped; it stays mapped.
        void* handle = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
        if (!handle) return 0;
        s->second = dlsym(handle, s->first);
        dlclose(handle);
        return s->second ? 1 : 0;
      },
      &search);
  return search.second;
}

const OpenBlas& openblas() {
  static const OpenBlas api = [] {
    OpenBlas a;
    a.get_corename = reinterpret_cast<char* (*)()>(find_symbol("openblas_get_corename"));
    if (!a.get_corename) return a;
    a.get_config = reinterpret_cast<char* (*)()>(find_symbol("openblas_get_config"));
    a.get_num_threads = reinterpret_cast<int (*)()>(find_symbol("openblas_get_num_threads"));
    a.set_num_threads = reinterpret_cast<void (*)(int)>(find_symbol("openblas_set_num_threads"));
    a.dynamic_init = reinterpret_cast<void (*)()>(find_symbol("gotoblas_dynamic_init"));
    a.dynamic_quit = reinterpret_cast<void (*)()>(find_symbol("gotoblas_dynamic_quit"));
    a.read_env = reinterpret_cast<void (*)()>(find_symbol("openblas_read_env"));
    a.thread_shutdown = reinterpret_cast<int (*)()>(find_symbol("blas_thread_shutdown_"));
    a.thread_init = reinterpret_cast<int (*)()>(find_symbol("blas_thread_init"));
    return a;
  }();
  return api;
}

// What configure_blas() found when libalto loaded and what it did.
struct Decision {
  std::mutex mutex;
  std::optional<std::string> loaded_core;
  std::string action = "kept";
  std::string reason = "alto has not configured the BLAS";
  std::string thread_timeout = "OpenBLAS's own: alto has not configured the BLAS";
};

Decision& decision() {
  static Decision d;
  return d;
}

BlasInfo read_blas(const Decision& d) {
  BlasInfo info;
  info.cpu = cpu_info();
  const OpenBlas& ob = openblas();
  if (ob.get_corename) {
    info.library = "OpenBLAS";
    info.core = ob.get_corename();
    if (ob.get_config) info.config = ob.get_config();
    info.threads = blas_num_threads();
    info.dynamic =
        ob.dynamic_init && ob.dynamic_quit && info.config.find("DYNAMIC_ARCH") != std::string::npos;
  } else if (find_symbol("mkl_get_version_string")) {
    info.library = "MKL";
  } else if (find_symbol("bli_info_get_version_str")) {
    info.library = "BLIS";
  } else {
    info.library = "unknown";
  }
  info.loaded_core = d.loaded_core.value_or(info.core);
  info.action = d.action;
  info.reason = d.reason;
  if (info.library == "OpenBLAS") info.thread_timeout = d.thread_timeout;
  return info;
}

void switch_core(const std::string& core) {
  const OpenBlas& ob = openblas();
  ALTO_CHECK_AS(Unsupported, ob.get_corename && ob.dynamic_init && ob.dynamic_quit,
                "cannot switch the BLAS core: the BLAS in this process is not an OpenBLAS with "
                "gotoblas_dynamic_init (a DYNAMIC_ARCH build)");
  const std::string level = openblas_core_level(core);
  ALTO_CHECK(!level.empty(), "unknown OpenBLAS core '", core, "'");
  const CpuInfo cpu = cpu_info();
  ALTO_CHECK(level_rank(level) <= level_rank(cpu.level()), "OpenBLAS core ", core, " needs ", level,
             " but this CPU runs ", cpu.level());
  // gotoblas_dynamic_init() returns at once while a core is set; once cleared it re-reads
  // OPENBLAS_CORETYPE exactly as at load (force_coretype, then the table's init()). The variable
  // is restored afterwards so child processes see the user's environment.
  const char* previous = std::getenv("OPENBLAS_CORETYPE");
  const std::optional<std::string> saved =
      previous ? std::optional<std::string>(previous) : std::nullopt;
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  ob.dynamic_quit();
  ob.dynamic_init();
  if (saved) {
    setenv("OPENBLAS_CORETYPE", saved->c_str(), 1);
  } else {
    unsetenv("OPENBLAS_CORETYPE");
  }
  const std::string now = ob.get_corename();
  ALTO_CHECK_AS(Unsupported, iequals(now, core), "OpenBLAS runs core ", now, " after switching to ",
                core);
}

// Restarts OpenBLAS's threads so that they poll for 2^log2_cycles before sleeping: its
// blas_thread_init takes the timeout from openblas_read_env's copy of OPENBLAS_THREAD_TIMEOUT,
// which is read again with the variable unset afterwards (only called when the user had not set
// it), so child processes see the user's environment. Not safe while another thread is inside a
// BLAS call.
void set_thread_timeout(int log2_cycles) {
  const OpenBlas& ob = openblas();
  ALTO_CHECK_AS(Unsupported, ob.read_env && ob.thread_shutdown && ob.thread_init,
                "cannot set OpenBLAS's thread timeout: the BLAS in this process is not an "
                "OpenBLAS with a thread server (openblas_read_env, blas_thread_init)");
  setenv("OPENBLAS_THREAD_TIMEOUT", std::to_string(log2_cycles).c_str(), 1);
  ob.read_env();
  ob.thread_shutdown();
  ob.thread_init();
  unsetenv("OPENBLAS_THREAD_TIMEOUT");
  ob.read_env();
}

// Applies choose_blas_thread_timeout() once, when libalto loads (a later configure_blas() is
// about the core and leaves the threads alone).
void configure_thread_timeout() {
  Decision& d = decision();
  std::lock_guard<std::mutex> lock(d.mutex);
  const BlasInfo now = read_blas(d);
  if (now.library != "OpenBLAS") return;
  const BlasThreadTimeoutChoice timeout = choose_blas_thread_timeout(
      std::getenv("OPENBLAS_THREAD_TIMEOUT"), std::getenv("GOTO_THREAD_TIMEOUT"));
  d.thread_timeout = timeout.reason;
  if (now.config.find("USE_OPENMP") != std::string::npos) {
    d.thread_timeout = "OpenMP's: OpenBLAS is an OpenMP build (" + now.config + ")";
  } else if (timeout.log2_cycles > 0) {
    try {
      set_thread_timeout(timeout.log2_cycles);
    } catch (const Error& e) {
      d.thread_timeout = std::string("OpenBLAS's own: ") + e.what();
    }
  }
}

// Decide when libalto loads: OpenBLAS's constructor has just picked its core (dependencies are
// initialised first), no GEMM has run and the application has started no thread yet. An exception
// must not escape a static initialiser, so failures only end up in the recorded reason.
const bool g_configured_at_load = [] {
  try {
    configure_blas();
    configure_thread_timeout();
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(decision().mutex);
    decision().reason = e.what();
  }
  return true;
}();

}  // namespace

std::string CpuInfo::level() const {
  if (avx512f && avx512dq && avx512cd && avx512bw && avx512vl && os_avx512 && avx2 && fma)
    return "avx512";
  if (avx2 && fma && avx && os_avx) return "avx2";
  if (avx && os_avx) return "avx";
  return "sse";
}

std::string CpuInfo::best_openblas_core() const {
  const std::string l = level();
  // SkylakeX rather than Cooperlake on bfloat16-capable CPUs: their SGEMM/DGEMM kernels are the
  // same, Cooperlake only adds bfloat16 GEMM, which libtorch does not call through BLAS.
  if (l == "avx512") return "SkylakeX";
  if (l == "avx2") return vendor == "AuthenticAMD" || vendor == "HygonGenuine" ? "Zen" : "Haswell";
  if (l == "avx") return "Sandybridge";
  return "";
}

std::string CpuInfo::to_string() const {
  std::ostringstream out;
  out << "CpuInfo(vendor=" << (vendor.empty() ? "unknown" : vendor) << ", level=" << level()
      << ", flags=[";
  const std::pair<const char*, bool> flags[] = {
      {"sse3", sse3},         {"ssse3", ssse3},        {"sse4_2", sse4_2},
      {"avx", avx},           {"avx2", avx2},          {"fma", fma},
      {"avx512f", avx512f},   {"avx512dq", avx512dq},  {"avx512cd", avx512cd},
      {"avx512bw", avx512bw}, {"avx512vl", avx512vl},  {"avx512_bf16", avx512_bf16},
      {"os_avx", os_avx},     {"os_avx512", os_avx512}};
  const char* sep = "";
  for (const auto& [name, on] : flags) {
    if (!on) continue;
    out << sep << name;
    sep = " ";
  }
  out << "])";
  return out.str();
}

CpuInfo cpu_info() {
  CpuInfo c;
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return c;
  const unsigned max_leaf = eax;
  char vendor[13];
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  vendor[12] = '\0';
  c.vendor = vendor;
  auto bit = [](unsigned reg, int i) { return ((reg >> i) & 1u) != 0; };
  __get_cpuid(1, &eax, &ebx, &ecx, &edx);
  c.sse3 = bit(ecx, 0);
  c.ssse3 = bit(ecx, 9);
  c.fma = bit(ecx, 12);
  c.sse4_2 = bit(ecx, 20);
  c.avx = bit(ecx, 28);
  if (bit(ecx, 27)) {  // OSXSAVE: XGETBV tells which register files the OS saves
    unsigned xcr0_lo = 0, xcr0_hi = 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    c.os_avx = (xcr0_lo & 0x6) == 0x6;
    c.os_avx512 = c.os_avx && (xcr0_lo & 0xe0) == 0xe0;
  }
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    const unsigned max_subleaf = eax;
    c.avx2 = bit(ebx, 5);
    c.avx512f = bit(ebx, 16);
    c.avx512dq = bit(ebx, 17);
    c.avx512cd = bit(ebx, 28);
    c.avx512bw = bit(ebx, 30);
    c.avx512vl = bit(ebx, 31);
    if (max_subleaf >= 1) {
      __cpuid_count(7, 1, eax, ebx, ecx, edx);
      c.avx512_bf16 = bit(eax, 5);
    }
  }
#endif
  return c;
}

std::string openblas_core_level(const std::string& core) {
  for (const auto& entry : kCoreLevels)
    if (iequals(core, entry.core)) return entry.level;
  return "";
}

BlasChoice choose_blas_core(const std::string& current_core, const CpuInfo& cpu,
                            const char* openblas_coretype, const char* alto_blas_coretype) {
  const std::string left = "OpenBLAS's core " + current_core + " left as it is";
  if (alto_blas_coretype && std::strcmp(alto_blas_coretype, "auto") != 0) {
    if (std::strcmp(alto_blas_coretype, "keep") == 0)
      return {"", "ALTO_BLAS_CORETYPE=keep: " + left};
    return {"", std::string("ALTO_BLAS_CORETYPE='") + alto_blas_coretype +
                    "' is neither 'auto' nor 'keep': " + left};
  }
  if (current_core.empty()) return {"", "the BLAS is not OpenBLAS: no core to choose"};
  const std::string best = cpu.best_openblas_core();
  if (openblas_coretype) {
    std::string reason = std::string("OPENBLAS_CORETYPE=") + openblas_coretype +
                         " is set by the user: alto respects it";
    const std::string level = openblas_core_level(current_core);
    if (!best.empty() && !level.empty() && level_rank(level) < level_rank(cpu.level()))
      reason += " (this CPU runs " + best + ", " + cpu.level() + ")";
    return {"", reason};
  }
  const std::string level = openblas_core_level(current_core);
  if (level.empty()) return {"", "alto does not know OpenBLAS core " + current_core + ": " + left};
  if (best.empty() || level_rank(level) >= level_rank(cpu.level()))
    return {"", "OpenBLAS's core " + current_core + " uses " + level + ", all that this CPU (" +
                    cpu.level() + ") offers"};
  return {best, "OpenBLAS picked " + current_core + " (" + level + ") on a CPU that runs " +
                    cpu.level() + ": switched to " + best};
}

BlasThreadTimeoutChoice choose_blas_thread_timeout(const char* openblas_thread_timeout,
                                                   const char* goto_thread_timeout) {
  if (openblas_thread_timeout)
    return {0, std::string("OPENBLAS_THREAD_TIMEOUT=") + openblas_thread_timeout +
                   " is set by the user: alto respects it"};
  if (goto_thread_timeout)
    return {0, std::string("GOTO_THREAD_TIMEOUT=") + goto_thread_timeout +
                   " is set by the user: alto respects it"};
  return {kBlasThreadTimeoutLog2,
          "2^" + std::to_string(kBlasThreadTimeoutLog2) +
              " cycles, set by alto (OpenBLAS's default 2^28 polls ~0.1 s after every product, "
              "on cores alto's threads need; OPENBLAS_THREAD_TIMEOUT overrides)"};
}

BlasInfo blas_info() {
  Decision& d = decision();
  std::lock_guard<std::mutex> lock(d.mutex);
  return read_blas(d);
}

BlasInfo configure_blas() {
  Decision& d = decision();
  std::lock_guard<std::mutex> lock(d.mutex);
  BlasInfo now = read_blas(d);
  if (!d.loaded_core) d.loaded_core = now.core;
  const BlasChoice choice = choose_blas_core(now.core, now.cpu, std::getenv("OPENBLAS_CORETYPE"),
                                             std::getenv("ALTO_BLAS_CORETYPE"));
  d.action = "kept";
  d.reason = choice.reason;
  if (!choice.core.empty()) {
    if (!now.dynamic) {
      d.reason = "OpenBLAS is not a DYNAMIC_ARCH build (" + now.config + "): cannot leave core " +
                 now.core;
    } else {
      try {
        switch_core(choice.core);
        d.action = "switched";
      } catch (const Error& e) {
        d.reason = choice.reason + " failed: " + e.what();
      }
    }
  }
  return read_blas(d);
}

void set_blas_core(const std::string& core) {
  std::lock_guard<std::mutex> lock(decision().mutex);
  switch_core(core);
}

void set_blas_num_threads(int threads) {
  ALTO_CHECK(threads >= 1, "BLAS threads must be >= 1, got ", threads);
  if (openblas().set_num_threads) openblas().set_num_threads(threads);
}

int blas_num_threads() { return openblas().get_num_threads ? openblas().get_num_threads() : 0; }

SingleThreadedBlas::SingleThreadedBlas() : previous_(blas_num_threads()) {
  if (previous_ > 1) set_blas_num_threads(1);
}

SingleThreadedBlas::~SingleThreadedBlas() {
  if (previous_ > 1) set_blas_num_threads(previous_);
}

std::string BlasInfo::to_string() const {
  std::ostringstream out;
  out << "BlasInfo(library=" << library;
  if (!config.empty()) out << ", config=\"" << config << "\"";
  if (!core.empty()) out << ", core=" << core << ", loaded_core=" << loaded_core;
  out << ", threads=" << threads << ", dynamic=" << (dynamic ? "true" : "false")
      << ", cpu=" << cpu.to_string() << ", action=" << action << ", reason=\"" << reason << "\"";
  if (!thread_timeout.empty()) out << ", thread_timeout=\"" << thread_timeout << "\"";
  out << ")";
  return out.str();
}

}  // namespace alto
