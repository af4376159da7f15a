#include "alto/core/internal/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "alto/core/error.h"

namespace alto::internal {

OutputFile::OutputFile(const std::string& target) : target_(target) {
  if (target == "-") {
    fd_ = STDOUT_FILENO;
    return;
  }
  // O_EXCL on a per-process name rather than mkstemp, which would create the file 0600 instead
  // of honouring the umask.
  static std::atomic<uint64_t> counter{0};
  do {
    tmp_ = detail::concat(target, ".", ::getpid(), ".", counter++, ".tmp");
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  } while (fd_ < 0 && errno == EEXIST);
  ALTO_CHECK_AS(IoError, fd_ >= 0, target, ": cannot create ", tmp_, ": ", std::strerror(errno));
}

OutputFile::~OutputFile() {
  if (tmp_.empty()) return;  // standard output stays open
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void OutputFile::write(const void* data, uint64_t size, const std::string& what) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, std::min<uint64_t>(size, 1 << 30));
    if (n < 0 && errno == EINTR) continue;
    ALTO_CHECK_AS(IoError, n > 0, target_ == "-" ? "standard output" : target_, ": cannot write ",
                  what, ": ", n < 0 ? std::strerror(errno) : "no progress");
    p += n;
    size -= static_cast<uint64_t>(n);
  }
}

void OutputFile::commit() {
  if (tmp_.empty()) {
    committed_ = true;
    return;
  }
  // Data on disk before the rename, or a crash could leave an empty file at the target.
  ALTO_CHECK_AS(IoError, ::fsync(fd_) == 0, target_, ": cannot flush ", tmp_, ": ",
                std::strerror(errno));
  const int fd = fd_;
  fd_ = -1;
  ALTO_CHECK_AS(IoError, ::close(fd) == 0, target_, ": cannot close ", tmp_, ": ",
                std::strerror(errno));
  ALTO_CHECK_AS(IoError, ::rename(tmp_.c_str(), target_.c_str()) == 0, target_, ": cannot rename ",
                tmp_, " into place: ", std::strerror(errno));
  committed_ = true;
}

}  // namespace alto::internal
