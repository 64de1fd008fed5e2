#include "src/util/checked_math.h"

namespace placer::detail {

void throw_overflow(std::string_view what, const std::string& expression, bool negative,
                    const std::string& bound) {
  throw OverflowError(format_context(
      "", std::string(what),
      expression + " is " + (negative ? "below the smallest " : "above the largest ") + bound));
}

}  // namespace placer::detail
