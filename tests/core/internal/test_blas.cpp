// core/blas: the CPU and BLAS alto reports, its core rule, the in-process switch, and the CLI
// honouring the user's environment (checked in child processes: this process's environment is
// never changed).

#include <time.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "alto/core/error.h"
#include "alto/core/internal/blas.h"
#include "alto/core/threading.h"

using namespace alto;

namespace {

std::set<std::string> proc_cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

// Double-precision triple loop: the reference a float32 GEMM is held to.
torch::Tensor naive_mm(const torch::Tensor& a, const torch::Tensor& b) {
  const auto A = a.to(torch::kFloat64).contiguous(), B = b.to(torch::kFloat64).contiguous();
  const int64_t m = A.size(0), k = A.size(1), n = B.size(1);
  auto C = torch::zeros({m, n}, torch::kFloat64);
  const double *pa = A.data_ptr<double>(), *pb = B.data_ptr<double>();
  double* pc = C.data_ptr<double>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) pc[i * n + j] += pa[i * k + p] * pb[p * n + j];
  return C;
}

void check_gemm_correct(const std::string& core) {
  torch::manual_seed(7);
  // Odd sizes reach the kernels' edge paths; the large one runs full blocks.
  for (const auto& [m, k, n] :
       {std::tuple<int64_t, int64_t, int64_t>{67, 129, 95}, {300, 384, 257}}) {
    const auto a = torch::randn({m, k}), b = torch::randn({k, n});
    const double err =
        (torch::mm(a, b).to(torch::kFloat64) - naive_mm(a, b)).abs().max().item<double>();
    INFO("core " << core << ", " << m << "x" << k << "x" << n << ": max abs error " << err);
    CHECK(err < 1e-4 * std::sqrt(static_cast<double>(k)) * 4);
  }
}

CpuInfo synthetic_cpu(const std::string& vendor, const std::string& level) {
  CpuInfo c;
  c.vendor = vendor;
  c.sse3 = c.ssse3 = c.sse4_2 = true;
  if (level == "sse") return c;
  c.avx = c.os_avx = true;
  if (level == "avx") return c;
  c.avx2 = c.fma = true;
  if (level == "avx2") return c;
  c.avx512f = c.avx512dq = c.avx512cd = c.avx512bw = c.avx512vl = c.os_avx512 = true;
  return c;
}

bool in_user_env(const char* name) { return std::getenv(name) != nullptr; }

}  // namespace

TEST_CASE("cpu_info agrees with the kernel's /proc/cpuinfo", "[blas]") {
  const auto flags = proc_cpuinfo_flags();
  if (flags.empty()) {
    WARN("no /proc/cpuinfo flags line: nothing to compare");
    return;
  }
  const CpuInfo c = cpu_info();
  // Linux lists a feature only when the OS enabled its register state too.
  CHECK(c.sse3 == (flags.count("pni") == 1));
  CHECK(c.ssse3 == (flags.count("ssse3") == 1));
  CHECK(c.sse4_2 == (flags.count("sse4_2") == 1));
  CHECK((c.avx && c.os_avx) == (flags.count("avx") == 1));
  CHECK((c.avx2 && c.os_avx) == (flags.count("avx2") == 1));
  CHECK((c.fma && c.os_avx) == (flags.count("fma") == 1));
  CHECK((c.avx512f && c.os_avx512) == (flags.count("avx512f") == 1));
  CHECK((c.avx512dq && c.os_avx512) == (flags.count("avx512dq") == 1));
  CHECK((c.avx512cd && c.os_avx512) == (flags.count("avx512cd") == 1));
  CHECK((c.avx512bw && c.os_avx512) == (flags.count("avx512bw") == 1));
  CHECK((c.avx512vl && c.os_avx512) == (flags.count("avx512vl") == 1));
  CHECK((c.avx512_bf16 && c.os_avx512) == (flags.count("avx512_bf16") == 1));
  const std::string best = c.best_openblas_core();
  if (!best.empty()) CHECK(openblas_core_level(best) == c.level());
}

TEST_CASE("blas_info reports libtorch's OpenBLAS after alto's choice", "[blas]") {
  const BlasInfo info = blas_info();
  INFO(info.to_string());
  if (info.library != "OpenBLAS") {
    WARN("libtorch's BLAS is " << info.library << ", not OpenBLAS: no core to check");
    return;
  }
  CHECK(info.config.find("OpenBLAS") != std::string::npos);
  CHECK(info.threads >= 1);
  CHECK_FALSE(openblas_core_level(info.core).empty());
  CHECK_FALSE(openblas_core_level(info.loaded_core).empty());
  CHECK(info.to_string().find("core=" + info.core) != std::string::npos);
  const CpuInfo& cpu = info.cpu;
  if (in_user_env("OPENBLAS_CORETYPE") || in_user_env("ALTO_BLAS_CORETYPE")) {
    CHECK(info.action == "kept");
    CHECK(info.core == info.loaded_core);
  } else if (!cpu.best_openblas_core().empty() && info.dynamic) {
    // Whatever OpenBLAS picked at load, the core now is of the CPU's level.
    CHECK(openblas_core_level(info.core) == cpu.level());
    CHECK(info.action == (info.core == info.loaded_core ? "kept" : "switched"));
  }
}

TEST_CASE("choose_blas_core switches only a core below the CPU's level", "[blas]") {
  const CpuInfo skx = synthetic_cpu("GenuineIntel", "avx512");
  auto choice = choose_blas_core("Prescott", skx, nullptr, nullptr);
  CHECK(choice.core == "SkylakeX");
  CHECK_THAT(choice.reason, Catch::Contains("Prescott") && Catch::Contains("avx512"));
  CHECK(choose_blas_core("Haswell", skx, nullptr, nullptr).core == "SkylakeX");
  CHECK(choose_blas_core("SkylakeX", skx, nullptr, nullptr).core.empty());
  CHECK(choose_blas_core("cooperlake", skx, nullptr, nullptr).core.empty());
  CHECK(choose_blas_core("Prescott", skx, nullptr, "auto").core == "SkylakeX");

  CHECK(
      choose_blas_core("Prescott", synthetic_cpu("GenuineIntel", "avx2"), nullptr, nullptr).core ==
      "Haswell");
  CHECK(choose_blas_core("Nehalem", synthetic_cpu("AuthenticAMD", "avx2"), nullptr, nullptr).core ==
        "Zen");
  CHECK(choose_blas_core("Core2", synthetic_cpu("GenuineIntel", "avx"), nullptr, nullptr).core ==
        "Sandybridge");
  CHECK(choose_blas_core("Prescott", synthetic_cpu("GenuineIntel", "sse"), nullptr, nullptr)
            .core.empty());
  // AVX-512 flags without the OS saving ZMM state are not AVX-512.
  CpuInfo no_os = skx;
  no_os.os_avx512 = false;
  CHECK(no_os.level() == "avx2");
  CHECK(choose_blas_core("Prescott", no_os, nullptr, nullptr).core == "Haswell");

  SECTION("the user's OPENBLAS_CORETYPE wins") {
    choice = choose_blas_core("Prescott", skx, "Prescott", nullptr);
    CHECK(choice.core.empty());
    CHECK_THAT(choice.reason,
               Catch::Contains("OPENBLAS_CORETYPE=Prescott") && Catch::Contains("SkylakeX"));
  }
  SECTION("ALTO_BLAS_CORETYPE=keep opts out; another value is reported") {
    choice = choose_blas_core("Prescott", skx, nullptr, "keep");
    CHECK(choice.core.empty());
    CHECK_THAT(choice.reason, Catch::Contains("ALTO_BLAS_CORETYPE=keep"));
    choice = choose_blas_core("Prescott", skx, nullptr, "fast");
    CHECK(choice.core.empty());
    CHECK_THAT(choice.reason, Catch::Contains("'fast'"));
  }
  SECTION("no OpenBLAS, or a core alto does not know: nothing to do") {
    CHECK(choose_blas_core("", skx, nullptr, nullptr).core.empty());
    choice = choose_blas_core("Vortex", skx, nullptr, nullptr);
    CHECK(choice.core.empty());
    CHECK_THAT(choice.reason, Catch::Contains("Vortex"));
  }
}

TEST_CASE("switching the core in-process takes effect and GEMMs stay exact", "[blas]") {
  const BlasInfo before = blas_info();
  if (!before.dynamic) {
    WARN("not a DYNAMIC_ARCH OpenBLAS: " << before.to_string());
    CHECK_THROWS_AS(set_blas_core("Prescott"), Unsupported);
    return;
  }
  check_gemm_correct(before.core);

  // Prescott (SSE3) runs on every x86-64 CPU: it stands in for a wrong detection.
  set_blas_core("Prescott");
  CHECK(blas_info().core == "Prescott");
  check_gemm_correct("Prescott");

  const std::string best = before.cpu.best_openblas_core();
  if (!best.empty() && !in_user_env("OPENBLAS_CORETYPE") && !in_user_env("ALTO_BLAS_CORETYPE")) {
    const BlasInfo fixed = configure_blas();
    CHECK(fixed.action == "switched");
    CHECK(fixed.core == best);
    CHECK(blas_info().core == best);
    check_gemm_correct(best);
  }

  CHECK_THROWS_AS(set_blas_core("Vortex"), InvalidArgument);
  if (before.cpu.level() != "avx512")
    CHECK_THROWS_WITH(set_blas_core("SkylakeX"), Catch::Contains("needs avx512"));
  set_blas_core(before.core);
  CHECK(blas_info().core == before.core);
}

TEST_CASE("set_num_threads sizes OpenBLAS's pool too", "[blas]") {
  if (blas_info().library != "OpenBLAS") return;
  const int previous = num_threads();
  set_num_threads(1);
  CHECK(blas_info().threads == 1);
  set_num_threads(2);
  CHECK(blas_info().threads == 2);
  set_num_threads(previous);
  CHECK_THROWS_AS(set_blas_num_threads(0), InvalidArgument);
}

TEST_CASE("choose_blas_thread_timeout shortens OpenBLAS's polling unless the user set it",
          "[blas]") {
  const BlasThreadTimeoutChoice by_default = choose_blas_thread_timeout(nullptr, nullptr);
  CHECK(by_default.log2_cycles == kBlasThreadTimeoutLog2);
  CHECK(kBlasThreadTimeoutLog2 < 28);  // OpenBLAS's own
  CHECK_THAT(by_default.reason, Catch::Contains("set by alto"));
  const BlasThreadTimeoutChoice user = choose_blas_thread_timeout("28", nullptr);
  CHECK(user.log2_cycles == 0);
  CHECK_THAT(user.reason, Catch::Contains("OPENBLAS_THREAD_TIMEOUT=28"));
  const BlasThreadTimeoutChoice old_name = choose_blas_thread_timeout(nullptr, "12");
  CHECK(old_name.log2_cycles == 0);
  CHECK_THAT(old_name.reason, Catch::Contains("GOTO_THREAD_TIMEOUT=12"));
}

namespace {

// CPU time of this whole process (every thread), seconds.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

TEST_CASE("OpenBLAS's idle threads sleep soon after a threaded product", "[blas]") {
  const BlasInfo info = blas_info();
  INFO(info.to_string());
  if (info.library != "OpenBLAS" || info.config.find("USE_OPENMP") != std::string::npos ||
      in_user_env("OPENBLAS_THREAD_TIMEOUT") || in_user_env("GOTO_THREAD_TIMEOUT") ||
      default_num_threads() < 2) {
    WARN("not a pthreads OpenBLAS on 2+ cores with alto's timeout: nothing to measure");
    return;
  }
  CHECK_THAT(info.thread_timeout, Catch::Contains("set by alto"));
  const int previous = num_threads();
  set_num_threads(2);
  const torch::Tensor a = torch::randn({512, 512});
  const torch::Tensor product = torch::mm(a, a);  // large enough for OpenBLAS's threads
  CHECK(product.size(0) == 512);
  // With OpenBLAS's default (2^28 TSC cycles, ~0.1 s) its worker polls through most of this
  // sleep on a core of its own; with alto's 2^20 it sleeps within a millisecond.
  const double before = process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double busy = process_cpu_seconds() - before;
  set_num_threads(previous);
  INFO("CPU time while the process slept 200 ms: " << busy * 1e3 << " ms");
  CHECK(busy < 0.04);
}

#ifdef ALTO_CLI_PATH
namespace {

// `alto [global] info --json` run under `env ENV_ARGS`, parsed.
nlohmann::json cli_info(const std::string& env_args, const std::string& global = "") {
  const std::string command =
      "env " + env_args + " " + ALTO_CLI_PATH + " " + global + " info --json";
  INFO(command);
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  REQUIRE(pclose(pipe) == 0);
  return nlohmann::json::parse(out);
}

}  // namespace

TEST_CASE("alto info --json: the choice by default, and the user's environment respected",
          "[blas][cli]") {
  const BlasInfo here = blas_info();
  if (here.library != "OpenBLAS" || !here.dynamic) return;
  // The children inherit this environment and only add to it: where OPENBLAS_CORETYPE is set for
  // a reason it stays set, and Prescott, the one core forced here, runs on every x86-64 CPU.
  const auto by_default = cli_info("");
  INFO(by_default.dump());
  CHECK(by_default["cpu"]["level"] == here.cpu.level());
  CHECK(by_default["blas"]["library"] == "OpenBLAS");
  if (in_user_env("OPENBLAS_CORETYPE") || in_user_env("ALTO_BLAS_CORETYPE")) {
    CHECK(by_default["blas"]["core"] == by_default["blas"]["loaded_core"]);
  } else if (!here.cpu.best_openblas_core().empty()) {
    CHECK(openblas_core_level(by_default["blas"]["core"]) == here.cpu.level());
  }

  const auto user = cli_info("OPENBLAS_CORETYPE=Prescott");
  INFO(user.dump());
  CHECK(user["blas"]["loaded_core"] == "Prescott");
  CHECK(user["blas"]["core"] == "Prescott");
  CHECK(user["blas"]["action"] == "kept");
  CHECK_THAT(user["blas"]["reason"].get<std::string>(),
             Catch::Contains("OPENBLAS_CORETYPE=Prescott"));

  const auto keep = cli_info("ALTO_BLAS_CORETYPE=keep");
  INFO(keep.dump());
  CHECK(keep["blas"]["core"] == keep["blas"]["loaded_core"]);
  CHECK(keep["blas"]["action"] == "kept");
  CHECK_THAT(keep["blas"]["reason"].get<std::string>(), Catch::Contains("ALTO_BLAS_CORETYPE=keep"));

  const auto timeout = cli_info("OPENBLAS_THREAD_TIMEOUT=28");
  CHECK_THAT(timeout["blas"]["thread_timeout"].get<std::string>(),
             Catch::Contains("OPENBLAS_THREAD_TIMEOUT=28 is set by the user"));

  CHECK(cli_info("", "--threads 1")["blas"]["threads"] == 1);
  CHECK(cli_info("", "--threads 2")["blas"]["threads"] == 2);
}
#endif
