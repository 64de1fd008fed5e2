#include "src/util/progress.h"

#include <gtest/gtest.h>

namespace placer {
namespace {

TEST(Progress, RendersBarRateAndEta) {
  // 500 of 2000 in 10 s: 50/s, 1500 left -> 30 s.
  EXPECT_EQ(Progress::render("anneal", 500, 2000, 10.0, "best 12.3 ms", true),
            "anneal: [######..................] 25% 500/2000, 50.0/s, ETA 30.0 s, 10.0 s, "
            "best 12.3 ms");
  // Plain lines (not a terminal) have no bar.
  EXPECT_EQ(Progress::render("anneal", 500, 2000, 10.0, "", false),
            "anneal: 25% 500/2000, 50.0/s, ETA 30.0 s, 10.0 s");
}

TEST(Progress, UnknownTotalAndDone) {
  EXPECT_EQ(Progress::render("search", 300, 0, 2.0, "", false), "search: 300 done, 150/s, 2.00 s");
  // Finished work shows no ETA.
  EXPECT_EQ(Progress::render("x", 10, 10, 1.0, "", false), "x: 100% 10/10, 1.00 s");
}

}  // namespace
}  // namespace placer
