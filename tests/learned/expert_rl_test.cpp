// The learned expert placer's policy (agents/experts/expert_rl.h): the shipped policy places
// valid maps, a save / load round trip keeps its maps, a short pretraining run is seeded,
// a policy that chooses the replicas fills the slots with its own counts and keeps its best
// validation parameters, and a policy file of another method is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
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

/// The layers as one pretraining shape.
ExpertRlLayers as_set(const Layers& l) {
  ExpertRlLayers set;
  set.topo = l.topo;
  set.eplb = l.eplb;
  set.cost = ExpertRlTrainOptions::layer_cost(4, 2);
  set.shares = l.shares;
  set.positions = {0.0, 1.0};
  return set;
}

int copies_in(const ExpertLayerMap& m) {
  int n = 0;
  for (const std::vector<int>& r : m.replicas) n += int(r.size());
  return n;
}

TEST(ExpertRl, ShippedPolicyPlacesValidMapsAndRoundTrips) {
  const Layers l;
  const auto policy = ExpertPolicy::load(default_expert_policy_path());
  const std::vector<ExpertLayerMap> maps = policy->place(l.shares, l.copies, l.topo, 3);
  ASSERT_EQ(maps.size(), 2u);
  for (size_t i = 0; i < maps.size(); ++i) {
    validate_expert_layer(maps[i], 8, 4);
    EXPECT_EQ(copies_in(maps[i]), 12);
    if (policy->chooses_replicas()) continue;
    for (int e = 0; e < 8; ++e)
      EXPECT_EQ(int(maps[i].replicas[size_t(e)].size()), l.copies[i][size_t(e)]);
  }
  const std::string path = testing::TempDir() + "expert_rl_round_trip.pt";
  policy->save(path, "test");
  const auto again = ExpertPolicy::load(path);
  const std::vector<ExpertLayerMap> same = again->place(l.shares, l.copies, l.topo, 3);
  for (size_t i = 0; i < maps.size(); ++i) EXPECT_EQ(same[i].replicas, maps[i].replicas);
}

/// A short pretraining run: `updates` updates of 2 layers x 4 samples.
ExpertRlTrainOptions short_run(int64_t updates) {
  ExpertRlTrainOptions o;
  o.updates = updates;
  o.layers_per_update = 2;
  o.samples = 4;
  return o;
}

TEST(ExpertRl, SeededPretrainingAndAnotherMethodsFileRefused) {
  const Layers l;
  const ExpertRlTrainOptions o = short_run(3);
  std::vector<double> first, second;
  ExpertPolicy a(8), b(8);
  a.pretrain({as_set(l)}, {}, o, [&](int64_t, double r, double) { first.push_back(r); });
  b.pretrain({as_set(l)}, {}, o, [&](int64_t, double r, double) { second.push_back(r); });
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

TEST(ExpertRl, ReplicaChoosingPolicyFillsTheSlotsAndKeepsItsBestValidation) {
  const Layers l;
  ExpertRlTrainOptions o = short_run(4);
  o.choose_replicas = true;
  o.validate_every = 2;
  ExpertPolicy p(8, true);
  std::vector<double> checked;
  const double start = p.validate({as_set(l)});
  const double kept = p.pretrain({as_set(l)}, {as_set(l)}, o, [&](int64_t, double, double v) {
    if (v > 0) checked.push_back(v);
  });
  ASSERT_EQ(checked.size(), 2u);  // after updates 2 and 4
  double best = start;
  for (double v : checked) best = std::min(best, v);
  EXPECT_DOUBLE_EQ(kept, best);
  EXPECT_DOUBLE_EQ(p.validate({as_set(l)}), kept);  // the kept parameters are the policy's
  // Its own counts: every expert at least one copy, 12 in all, on distinct ranks.
  const std::vector<ExpertLayerMap> maps = p.place(l.shares, l.copies, l.topo, 3);
  for (const ExpertLayerMap& m : maps) {
    validate_expert_layer(m, 8, 4);
    EXPECT_EQ(copies_in(m), 12);
  }
  const std::string path = testing::TempDir() + "expert_rl_replicas.pt";
  p.save(path, "test");
  const auto again = ExpertPolicy::load(path);
  EXPECT_TRUE(again->chooses_replicas());
  EXPECT_EQ(again->place(l.shares, l.copies, l.topo, 3)[0].replicas, maps[0].replicas);
}

}  // namespace
}  // namespace placer
