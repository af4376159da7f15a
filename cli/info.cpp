// alto info [FILE...] [--json]: the files' streams, or with no file what alto computes on.

#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "alto/audio/load.h"
#include "alto/core/system_info.h"
#include "alto/core/threading.h"
#include "commands.h"
#include "inputs.h"

namespace alto::cli {
namespace {

void print_runtime(bool json) {
  const BlasInfo b = blas_info();
  const CpuInfo& c = b.cpu;
  if (json) {
    const nlohmann::json cpu = {{"vendor", c.vendor},
                                {"level", c.level()},
                                {"best_openblas_core", c.best_openblas_core()},
                                {"avx512f", c.avx512f},
                                {"avx512dq", c.avx512dq},
                                {"avx512cd", c.avx512cd},
                                {"avx512bw", c.avx512bw},
                                {"avx512vl", c.avx512vl},
                                {"avx512_bf16", c.avx512_bf16},
                                {"avx2", c.avx2},
                                {"fma", c.fma},
                                {"avx", c.avx},
                                {"os_avx", c.os_avx},
                                {"os_avx512", c.os_avx512}};
    const nlohmann::json out = {{"threads", num_threads()},
                                {"blas",
                                 {{"library", b.library},
                                  {"config", b.config},
                                  {"loaded_core", b.loaded_core},
                                  {"core", b.core},
                                  {"threads", b.threads},
                                  {"dynamic", b.dynamic},
                                  {"action", b.action},
                                  {"reason", b.reason},
                                  {"thread_timeout", b.thread_timeout}}},
                                {"cpu", cpu}};
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << "threads: " << num_threads() << "\n"
            << "cpu: " << (c.vendor.empty() ? "unknown" : c.vendor) << ", " << c.level() << "\n"
            << "blas: " << b.library;
  if (!b.config.empty()) std::cout << " (" << b.config << ")";
  std::cout << "\n";
  if (!b.core.empty())
    std::cout << "blas core: " << b.core << " (OpenBLAS loaded " << b.loaded_core << "), "
              << b.threads << " thread" << (b.threads == 1 ? "" : "s") << "\n";
  std::cout << "blas choice: " << b.action << ": " << b.reason << "\n";
  if (!b.thread_timeout.empty()) std::cout << "blas idle threads: " << b.thread_timeout << "\n";
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "info",
      "Print container, codec, rate, channels and duration; with no file, the CPU and BLAS");
  auto inputs = std::make_shared<Inputs>();
  auto raw = std::make_shared<RawAudioInput>();
  auto json = std::make_shared<bool>(false);
  inputs->add_to(cmd, "Audio or video files ('-' is standard input)");
  raw->add_to(cmd);
  cmd->add_flag("--json", *json,
                "One JSON array with an object per file (one object with no file)");
  cmd->callback([inputs, raw, json] {
    const std::vector<std::string> files = inputs->all();
    if (files.empty()) {
      print_runtime(*json);
      return;
    }
    audio::DecodeOptions options;
    raw->apply(options);
    auto out = nlohmann::json::array();
    const BatchOutcome outcome = for_each_input(files, [&](const std::string& path) {
      const audio::AudioInfo i = audio::probe_audio(path, options.raw);
      if (*json) {
        out.push_back({{"path", i.path},
                       {"container", i.container},
                       {"codec", i.codec},
                       {"sample_rate", i.sample_rate},
                       {"channels", i.channels},
                       {"frames", i.frames},
                       {"duration_seconds", i.duration_seconds()}});
        return;
      }
      std::cout << i.path << ": " << i.container << ", " << i.codec << ", " << i.sample_rate
                << " Hz, " << i.channels << " channel" << (i.channels == 1 ? "" : "s") << ", "
                << std::fixed << std::setprecision(3) << i.duration_seconds() << " s (" << i.frames
                << " frames)" << std::endl;
    });
    if (*json) std::cout << out.dump(2) << "\n";
    outcome.throw_if_failed();
  });
}

}  // namespace alto::cli
