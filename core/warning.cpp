#include "alto/core/warning.h"

#include <cstdio>
#include <mutex>

namespace alto {

namespace {
std::mutex warning_mutex;
std::function<void(const std::string&)> warning_handler;
}  // namespace

void warn(const std::string& message) {
  std::lock_guard<std::mutex> lock(warning_mutex);
  if (warning_handler)
    warning_handler(message);
  else
    std::fprintf(stderr, "alto: warning: %s\n", message.c_str());
}

void set_warning_handler(std::function<void(const std::string&)> handler) {
  std::lock_guard<std::mutex> lock(warning_mutex);
  warning_handler = std::move(handler);
}

}  // namespace alto
