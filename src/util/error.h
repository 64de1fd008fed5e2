#pragma once
// Errors and checks.
//
// User-facing problems (bad file, unknown op, impossible cluster, plan that does not match
// the graph) throw a placer::Error subclass that carries its context (file, field, line).
// `main` prints one line and exits non-zero; libraries never call exit().
// Internal invariants use PLACER_DCHECK, which vanishes in Release builds.

#include <cassert>
#include <sstream>
#include <stdexcept>
#include <string>

namespace placer {

/// Base of every user-facing error. what() is the full one-line message.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// A file could not be opened, read or written.
class FileError : public Error {
 public:
  using Error::Error;
};

/// A file was read but its content is malformed or has a bad/missing field.
/// The message names the file and the field (e.g. "cluster.yaml: hosts[0].devices: ...").
class FormatError : public Error {
 public:
  using Error::Error;
};

/// Objects that are individually well-formed but inconsistent (a plan naming an unknown op,
/// a device index out of range, a cyclic graph, a zero-bandwidth link).
class ValidationError : public Error {
 public:
  using Error::Error;
};

/// Builds "file: field: message" with the empty parts left out.
std::string format_context(const std::string& file, const std::string& field,
                           const std::string& message);

namespace detail {
[[noreturn]] void throw_check_failure(const char* cond, const std::string& message,
                                      const char* file, int line);
}  // namespace detail

}  // namespace placer

/// Throws placer::Error(msg) when cond is false. msg may use stream syntax:
/// PLACER_CHECK(n > 0, "expected a positive count, got " << n);
#define PLACER_CHECK(cond, msg)                                                       \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::ostringstream placer_check_os_;                                            \
      placer_check_os_ << msg;                                                        \
      ::placer::detail::throw_check_failure(#cond, placer_check_os_.str(), __FILE__, \
                                            __LINE__);                                \
    }                                                                                 \
  } while (0)

/// Internal invariant; compiled out with NDEBUG.
#define PLACER_DCHECK(cond) assert(cond)
