#include "cli/run_cli.h"

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>

namespace alto::test {

std::string run_program(const std::string& program, const std::string& args, int status,
                        Stderr err) {
  const std::string command = program + " " + args +
                              (err == Stderr::kMerge ? " 2>&1" : " 2>/dev/null");
  INFO(command);
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::string out;
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) out.append(buffer.data(), n);
  const int rc = pclose(pipe);
  INFO(out);
  REQUIRE(WEXITSTATUS(rc) == status);
  return out;
}

std::string run_cli(const std::string& args, int status, Stderr err) {
  return run_program(ALTO_CLI_PATH, args, status, err);
}

}  // namespace alto::test
