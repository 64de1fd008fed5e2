#include "src/util/option_text.h"

#include <gtest/gtest.h>

namespace placer {
namespace {

TEST(OptionText, BoolSpellings) {
  for (const char* t : {"true", "True", "YES", "on", "1"}) {
    bool b = false;
    EXPECT_TRUE(parse_bool_text(t, &b)) << t;
    EXPECT_TRUE(b) << t;
  }
  for (const char* f : {"false", "No", "OFF", "0"}) {
    bool b = true;
    EXPECT_TRUE(parse_bool_text(f, &b)) << f;
    EXPECT_FALSE(b) << f;
  }
  for (const char* bad : {"", "2", "maybe", "yess", " true"}) {
    bool b = true;
    EXPECT_FALSE(parse_bool_text(bad, &b)) << bad;
    EXPECT_TRUE(b) << bad;  // left alone
  }
}

TEST(OptionText, EditDistanceAndClosestName) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("lr", "lr"), 0u);
  EXPECT_GT(edit_distance("a", "abcdef", 2), 2u);  // capped: known to exceed 2
  EXPECT_EQ(closest_name("hiden", {"heads", "hidden", "lr"}), "hidden");
  EXPECT_EQ(closest_name("zzzzzz", {"heads", "hidden", "lr"}), "");
  EXPECT_EQ(closest_name("lrr", {"lr", "lrs"}), "lr");  // a tie keeps the first
}

}  // namespace
}  // namespace placer
