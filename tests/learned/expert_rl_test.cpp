// The learned expert placer's policy (agents/experts/expert_rl.h): the shipped policy places
// valid maps, a save / load round trip keeps its maps, a short pretraining run is seeded,
// and a policy file of another method is refused by name.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "agents/experts/expert_episode.h"
#include "agents/experts/expert_rl.h"
#include "src/util/error.h"

namespace placer {
namespace {

struct Layers {
  std::vector<std::vector<double>> shares{{0.4, 0.2, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05},
                                          {0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125}};
  ExpertTopology topo{4, 2};
  EplbOptions eplb{4, 0};  // 8 experts + 4 copies: 3 slots per rank
  std::vector<std::vector<int>> copies;
  Layers() {
    for (const auto& s : shares) copies.push_back(eplb_copies(s, topo, eplb));
  }
};

TEST(ExpertRl, ShippedPolicyPlacesValidMapsAndRoundTrips) {
  const Layers l;
  const auto policy = ExpertPolicy::load(default_expert_policy_path());
  const std::vector<ExpertLayerMap> maps = policy->place(l.shares, l.copies, l.topo, 3);
  ASSERT_EQ(maps.size(), 2u);
  for (size_t i = 0; i < maps.size(); ++i) {
    validate_expert_layer(maps[i], 8, 4);
    for (int e = 0; e < 8; ++e)
      EXPECT_EQ(int(maps[i].replicas[size_t(e)].size()), l.copies[i][size_t(e)]);
  }
  const std::string path = testing::TempDir() + "expert_rl_round_trip.pt";
  policy->save(path, "test");
  const auto again = ExpertPolicy::load(path);
  const std::vector<ExpertLayerMap> same = again->place(l.shares, l.copies, l.topo, 3);
  for (size_t i = 0; i < maps.size(); ++i) EXPECT_EQ(same[i].replicas, maps[i].replicas);
}

TEST(ExpertRl, SeededPretrainingAndAnotherMethodsFileRefused) {
  const Layers l;
  ExpertRlTrainOptions o;
  o.updates = 3;
  o.layers_per_update = 2;
  o.samples = 4;
  o.topo = l.topo;
  o.eplb = l.eplb;
  std::vector<double> first, second;
  ExpertPolicy a(8), b(8);
  a.pretrain(l.shares, {0.0, 1.0}, o, [&](int64_t, double r) { first.push_back(r); });
  b.pretrain(l.shares, {0.0, 1.0}, o, [&](int64_t, double r) { second.push_back(r); });
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first, second);
  const std::string path = testing::TempDir() + "expert_rl_other.pt";
  a.save(path, "test");
  {
    std::ofstream meta(path + ".meta.json");
    meta << R"({"format_version": 1, "method": "gdp", "hidden": 8})";
  }
  try {
    ExpertPolicy::load(path);
    FAIL() << "expected a FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("method: expected \"expert-rl\", found \"gdp\""),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace placer
