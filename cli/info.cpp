// alto info FILE... [--json]

#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "alto/audio/load.h"
#include "commands.h"

namespace alto::cli {

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Print container, codec, rate, channels and duration");
  auto files = std::make_shared<std::vector<std::string>>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("files", *files, "Audio or video files ('-' is standard input)")->required();
  cmd->add_flag("--json", *json, "One JSON array with an object per file");
  cmd->callback([files, json] {
    std::vector<AudioInfo> infos;
    for (const auto& path : *files) infos.push_back(probe_audio(path));
    if (*json) {
      auto out = nlohmann::json::array();
      for (const auto& i : infos)
        out.push_back({{"path", i.path},
                       {"container", i.container},
                       {"codec", i.codec},
                       {"sample_rate", i.sample_rate},
                       {"channels", i.channels},
                       {"frames", i.frames},
                       {"duration_seconds", i.duration_seconds()}});
      std::cout << out.dump(2) << "\n";
      return;
    }
    for (const auto& i : infos) {
      std::cout << i.path << ": " << i.container << ", " << i.codec << ", " << i.sample_rate
                << " Hz, " << i.channels << " channel" << (i.channels == 1 ? "" : "s") << ", "
                << std::fixed << std::setprecision(3) << i.duration_seconds() << " s ("
                << i.frames << " frames)\n";
    }
  });
}

}  // namespace alto::cli
