#pragma once
// A harness's scratch folder for the files it writes: one per process (libFuzzer runs inputs one
// after another), made under $TMPDIR, which run.sh points into a folder it removes afterwards.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

inline const std::string& scratch_folder(const char* prefix) {
  static const std::string folder = [prefix] {
    std::string pattern =
        (std::filesystem::temp_directory_path() / (std::string(prefix) + "_XXXXXX")).string();
    if (!mkdtemp(pattern.data())) {
      std::perror(pattern.c_str());
      std::abort();
    }
    return pattern;
  }();
  return folder;
}
