#pragma once
// Checked integer arithmetic for counts, sizes, batch products and byte counts that come
// from user input. A product or sum that does not fit its type throws OverflowError naming
// what was computed, instead of wrapping (a wrapped product of 0 then divides by zero; a
// wrapped byte count writes a file no reader accepts):
//
//   const int per_step = checked_mul(m.micro_batch, m.dp, "micro-batch x dp");
//   // OverflowError "micro-batch x dp: 536870912 x 8 is above the largest 2147483647"
//
// The caller prefixes the source (file, argument) as for any ValidationError. `what` is a
// string_view so that the checks cost no allocation where nothing overflows (hot loops).

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "src/util/error.h"

namespace placer {

/// An integer computed from input that does not fit its type.
class OverflowError : public ValidationError {
 public:
  using ValidationError::ValidationError;
};

namespace detail {
/// Throws OverflowError "<what>: <expression> is above the largest <max>" (or "below the
/// smallest <min>" when `negative`).
[[noreturn]] void throw_overflow(std::string_view what, const std::string& expression,
                                 bool negative, const std::string& bound);

template <typename T>
[[noreturn]] void overflow(std::string_view what, const std::string& expression, bool negative) {
  throw_overflow(
      what, expression, negative,
      std::to_string(negative ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max()));
}
}  // namespace detail

/// a x b, or OverflowError "<what>: a x b is above the largest <max of T>".
template <typename T>
T checked_mul(T a, T b, std::string_view what) {
  static_assert(std::is_integral<T>::value, "checked_mul is for integers");
  T r;
  if (__builtin_mul_overflow(a, b, &r)) {
    detail::overflow<T>(what, std::to_string(a) + " x " + std::to_string(b), (a < 0) != (b < 0));
  }
  return r;
}

/// a + b, or OverflowError "<what>: a + b is above the largest <max of T>".
template <typename T>
T checked_add(T a, T b, std::string_view what) {
  static_assert(std::is_integral<T>::value, "checked_add is for integers");
  T r;
  if (__builtin_add_overflow(a, b, &r)) {
    detail::overflow<T>(what, std::to_string(a) + " + " + std::to_string(b), a < 0);
  }
  return r;
}

/// `v` as a To, or OverflowError "<what>: <v> is above the largest <max of To>".
template <typename To, typename From>
To checked_cast(From v, std::string_view what) {
  static_assert(std::is_integral<To>::value && std::is_integral<From>::value,
                "checked_cast is for integers");
  To r;
  if (__builtin_add_overflow(v, From(0), &r)) detail::overflow<To>(what, std::to_string(v), v < 0);
  return r;
}

}  // namespace placer
