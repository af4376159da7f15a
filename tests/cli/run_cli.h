#pragma once
// Drives the built `alto` executable as a user would.

#include <string>

namespace alto::test {

enum class Stderr { kDiscard, kMerge };

/// stdout of `alto ARGS` (with stderr appended when kMerge); REQUIREs exit status `status`.
std::string run_cli(const std::string& args, int status = 0, Stderr err = Stderr::kDiscard);

}  // namespace alto::test
