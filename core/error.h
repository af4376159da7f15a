#pragma once
// alto's one exception family. Every failure the library can detect is thrown as an
// alto::Error (or a subclass) whose message names the file, field or tensor and what was
// expected; the library never exits or aborts.

#include <exception>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace alto {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// An option or argument has an impossible value.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

/// A file is missing, unreadable, truncated or corrupt.
class IoError : public Error {
 public:
  using Error::Error;
};

/// The input is valid but alto (or the library it delegates to) cannot handle it.
class Unsupported : public Error {
 public:
  using Error::Error;
};

/// Memory for the work asked could not be had (an allocation failed): the message names what
/// was being done and how many bytes were asked for.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

/// For the edges (the CLI, the Python module): an exception from below alto that means memory
/// ran out (std::bad_alloc, libtorch's allocator) told as alto tells it, with the size asked
/// for; nullopt for any other exception, which stays as it is.
std::optional<OutOfMemory> as_out_of_memory(const std::exception& error);

namespace detail {
template <typename... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}
}  // namespace detail

}  // namespace alto

/// Throws ErrorType with the concatenated message parts unless `cond` holds. Never compiled out.
#define ALTO_CHECK_AS(ErrorType, cond, ...)                  \
  do {                                                       \
    if (!(cond)) throw ErrorType(::alto::detail::concat(__VA_ARGS__)); \
  } while (0)

#define ALTO_CHECK(cond, ...) ALTO_CHECK_AS(::alto::InvalidArgument, cond, __VA_ARGS__)
