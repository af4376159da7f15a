#pragma once
// Drives the built `alto` executable (and the samples) as a user would.

#include <string>

namespace alto::test {

enum class Stderr { kDiscard, kMerge };

/// stdout of `PROGRAM ARGS` (with stderr appended when kMerge); REQUIREs exit status `status`.
std::string run_program(const std::string& program, const std::string& args, int status = 0,
                        Stderr err = Stderr::kDiscard);
/// run_program of the built `alto`.
std::string run_cli(const std::string& args, int status = 0, Stderr err = Stderr::kDiscard);

}  // namespace alto::test
