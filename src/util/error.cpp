#include "src/util/error.h"

namespace placer {

std::string format_context(const std::string& file, const std::string& field,
                           const std::string& message) {
  std::string out;
  if (!file.empty()) out += file + ": ";
  if (!field.empty()) out += field + ": ";
  return out + message;
}

namespace detail {
void throw_check_failure(const char* /*cond*/, const std::string& message, const char* /*file*/,
                         int /*line*/) {
  // The message is for the user; the source location is not (it is in the debugger).
  throw Error(message);
}
}  // namespace detail

}  // namespace placer
