#pragma once
// A file written whole or not at all: the bytes go to a temporary name beside the target and are
// renamed into place by commit(), so a failure never leaves a partial file. The path "-" is
// standard output, written as the bytes come (a pipe has no partial-file problem to avoid).

#include <cstdint>
#include <string>

namespace alto::internal {

class OutputFile {
 public:
  /// Throws alto::IoError naming `target` when it cannot be created.
  explicit OutputFile(const std::string& target);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();  // removes the temporary file unless committed

  /// Writes all of `data`; `what` names it in an error ("the header", "tensor 'codes'").
  void write(const void* data, uint64_t size, const std::string& what);
  /// Flushes the data to disk and renames it into place.
  void commit();

 private:
  std::string target_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace alto::internal
