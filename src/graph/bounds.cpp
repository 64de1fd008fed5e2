#include "src/graph/bounds.h"

#include <sstream>

#include "src/util/checked_math.h"
#include "src/util/error.h"

namespace placer {

uint64_t check_bytes(uint64_t bytes, const std::string& what) {
  if (bytes > kMaxBytes) {
    throw ValidationError(format_context(
        "", what,
        std::to_string(bytes) + " bytes, beyond the physical bound of 1 EiB (2^60 bytes)"));
  }
  return bytes;
}

uint64_t checked_bytes(uint64_t elements, DType dtype, const std::string& what) {
  return check_bytes(checked_mul(elements, static_cast<uint64_t>(dtype_bytes(dtype)), what), what);
}

uint64_t checked_elements(const std::vector<int64_t>& shape, const std::string& what) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      throw ValidationError(format_context("", what, "negative dimension " + std::to_string(d)));
    n = checked_mul(n, static_cast<uint64_t>(d), what);
  }
  return n;
}

void check_op_flops(double flops, const std::string& what) {
  if (!(flops >= 0 && flops <= kMaxOpFlops)) {
    std::ostringstream os;
    os << flops << " FLOPs, beyond the physical bound of 1e24 FLOPs per op";
    throw ValidationError(format_context("", what, os.str()));
  }
}

}  // namespace placer
