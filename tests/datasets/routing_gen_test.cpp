#include "datasets/routing_gen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "src/util/error.h"

namespace placer {
namespace {

int64_t row_sum(const std::vector<int64_t>& r) {
  return std::accumulate(r.begin(), r.end(), int64_t(0));
}

TEST(RoutingGen, EveryFamilyRoutesExactlyTokensTimesTopKPerStep) {
  for (const std::string& f : routing_families()) {
    RoutingGenOptions o;
    o.family = f;
    o.layers = 3;
    o.experts = 16;
    o.top_k = 2;
    o.tokens = 1000;
    o.steps = 5;
    o.micro_batches = 4;
    const RoutingTrace t = generate_routing(o);
    ASSERT_EQ(t.layers(), 3) << f;
    ASSERT_EQ(t.steps.size(), 5u) << f;
    for (const LayerTokens& step : t.steps) {
      for (const std::vector<int64_t>& row : step) EXPECT_EQ(row_sum(row), 2000) << f;
    }
    for (const std::vector<int64_t>& row : t.tokens) EXPECT_EQ(row_sum(row), 10000) << f;
    int64_t mb = 0;
    for (const LayerTokens& m : t.micro_batches) mb += row_sum(m[1]);
    EXPECT_EQ(mb, 10000) << f;  // micro-batches split the window exactly
    // Same options, same trace; another seed, another trace.
    EXPECT_EQ(generate_routing(o).tokens, t.tokens) << f;
    o.seed = 2;
    EXPECT_NE(generate_routing(o).tokens, t.tokens) << f;
  }
}

TEST(RoutingGen, ZipfSharesFollowTheSkew) {
  RoutingGenOptions o;
  o.layers = 1;
  o.experts = 4;
  o.top_k = 1;
  o.tokens = 25000;  // weights 1, 1/2, 1/3, 1/4 sum to 25/12: 12000, 6000, 4000, 3000
  std::vector<int64_t> row = generate_routing(o).tokens[0];
  std::sort(row.rbegin(), row.rend());
  EXPECT_EQ(row, (std::vector<int64_t>{12000, 6000, 4000, 3000}));
}

TEST(RoutingGen, CorrelatedLayersAgreeOnTheHottestExpert) {
  RoutingGenOptions o;
  o.family = "correlated";
  o.layers = 6;
  o.experts = 32;
  o.correlation = 1.0;  // every layer keeps the shared order
  const RoutingTrace t = generate_routing(o);
  std::set<long> hottest;
  for (const auto& row : t.tokens)
    hottest.insert(std::max_element(row.begin(), row.end()) - row.begin());
  EXPECT_EQ(hottest.size(), 1u);
}

TEST(RoutingGen, HotExpertsMoveEveryPeriod) {
  RoutingGenOptions o;
  o.family = "hot-moving";
  o.layers = 1;
  o.experts = 64;
  o.hot = 2;
  o.hot_share = 0.6;
  o.steps = 3;
  o.hot_period = 2;
  const RoutingTrace t = generate_routing(o);
  auto hot_of = [](const std::vector<int64_t>& row) {
    std::vector<int> idx(row.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](int a, int b) { return row[a] > row[b]; });
    return std::set<int>{idx[0], idx[1]};
  };
  EXPECT_EQ(hot_of(t.steps[0][0]), hot_of(t.steps[1][0]));  // step 1: no move yet
  EXPECT_NE(hot_of(t.steps[1][0]), hot_of(t.steps[2][0]));  // step 2: moved
}

TEST(RoutingGen, CorpusSplitsUseDisjointSeedsAndFamilies) {
  RoutingGenOptions shape;
  shape.layers = 2;
  shape.experts = 16;
  std::set<std::string> names;
  for (RoutingSplit s : {RoutingSplit::kTrain, RoutingSplit::kValidation, RoutingSplit::kTest}) {
    for (const RoutingTrace& t : routing_corpus(s, 6, shape)) {
      EXPECT_TRUE(names.insert(t.name).second) << t.name;
      EXPECT_NE(t.family, "hot-moving");
      EXPECT_NE(t.family, "lognormal");
    }
  }
  for (const RoutingTrace& t : routing_corpus(RoutingSplit::kUnseen, 4, shape)) {
    EXPECT_TRUE(t.family == "hot-moving" || t.family == "lognormal") << t.family;
  }
  RoutingSplit s;
  EXPECT_TRUE(parse_routing_split("unseen", &s));
  EXPECT_EQ(s, RoutingSplit::kUnseen);
  EXPECT_FALSE(parse_routing_split("dev", &s));
}

TEST(RoutingGen, BadOptionsAreNamed) {
  RoutingGenOptions o;
  o.family = "pareto";
  EXPECT_THROW(generate_routing(o), ValidationError);
  o = RoutingGenOptions{};
  o.top_k = 100;
  try {
    generate_routing(o);
    FAIL();
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("--top-k"), std::string::npos);
  }
}

}  // namespace
}  // namespace placer
