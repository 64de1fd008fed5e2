#include "src/util/checked_math.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace placer {
namespace {

std::string message_of_mul(int a, int b) {
  try {
    checked_mul(a, b, "tp x pp");
  } catch (const OverflowError& e) {
    return e.what();
  }
  return "";
}

TEST(CheckedMath, InRangeResultsAreExact) {
  EXPECT_EQ(checked_mul(46340, 46340, "x"), 2147395600);
  EXPECT_EQ(checked_add(int64_t{1} << 62, (int64_t{1} << 62) - 1, "x"), INT64_MAX);
  EXPECT_EQ(checked_mul(uint64_t{1} << 32, uint64_t{1} << 31, "bytes"), uint64_t{1} << 63);
  EXPECT_EQ(checked_cast<int>(int64_t{2147483647}, "layers"), 2147483647);
}

TEST(CheckedMath, OverflowNamesTheProductAndTheBound) {
  EXPECT_EQ(message_of_mul(65536, 65536), "tp x pp: 65536 x 65536 is above the largest 2147483647");
  EXPECT_EQ(message_of_mul(-65536, 65536),
            "tp x pp: -65536 x 65536 is below the smallest -2147483648");
  EXPECT_EQ(message_of_mul(0, 65536), "");
}

TEST(CheckedMath, AdditionAndNarrowingThrow) {
  EXPECT_THROW(checked_add(INT32_MAX, 1, "sum"), OverflowError);
  EXPECT_THROW(checked_add(uint64_t{UINT64_MAX}, uint64_t{1}, "bytes"), OverflowError);
  EXPECT_THROW(checked_mul(uint64_t{1} << 32, uint64_t{1} << 32, "bytes"), OverflowError);
  EXPECT_THROW(checked_cast<int>(int64_t{4294967300}, "parts"), OverflowError);
  EXPECT_THROW(checked_cast<uint64_t>(int64_t{-1}, "bytes"), OverflowError);
  // An OverflowError is a ValidationError: callers that prefix the source catch it as one.
  EXPECT_THROW(checked_cast<int>(int64_t{-4294967300}, "parts"), ValidationError);
}

}  // namespace
}  // namespace placer
