// partition-dp: the Viterbi DP's optimum equals brute force over every assignment of splits
// (random integer tables and the real table of an MLP), and its plan validates and simulates.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "agents/classical/partition_dp.h"
#include "agents/api/placer.h"
#include "datasets/synthetic.h"
#include "problem_fixture.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"

namespace placer {
namespace {

Cluster make_cluster(int k) {
  DeviceSpec s;
  s.model = "gpu10t";
  s.peak_flops[static_cast<int>(DType::kF32)] = 10e12;
  s.memory_bandwidth = 1e12;
  s.memory_bytes = 16ull << 30;
  Cluster c;
  c.name = "test";
  c.add_host("host0", s, k);
  c.set_link(LinkLevel::kIntraHost, LinkSpec{"nvlink", 5e-6, 100e9, LinkSharing::kPerPair});
  return c;
}

using Fixture = testing::ProblemFixture;

/// min over every assignment (odometer), evaluated with partition_cost.
double brute_force(const PartitionCostTable& t, std::vector<int>* arg = nullptr) {
  const size_t n = t.unary.size();
  std::vector<int> c(n, 0);
  double best = std::numeric_limits<double>::infinity();
  for (;;) {
    const double v = partition_cost(t, c);
    if (v < best) {
      best = v;
      if (arg) *arg = c;
    }
    size_t i = 0;
    while (i < n && ++c[i] >= static_cast<int>(t.unary[i].size())) c[i++] = 0;
    if (i == n) break;
  }
  return best;
}

TEST(PartitionDp, HandComputedBeatsGreedy) {
  // Greedy per op picks (0, 1) = 1 + 1 + 5; the DP keeps the splits consistent: 1 + 2.
  PartitionCostTable t;
  t.unary = {{1, 2}, {2, 1}};
  t.edge = {{}, {{0, 5}, {5, 0}}};
  const PartitionDpSolution s = solve_partition_dp(t);
  EXPECT_EQ(s.cost, 3.0);
  EXPECT_EQ(s.choice, (std::vector<int>{0, 0}));
}

TEST(PartitionDp, EqualsBruteForceOnRandomTables) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> val(0, 50), ch(2, 3), len(1, 6);
  for (int trial = 0; trial < 200; ++trial) {
    PartitionCostTable t;
    const int n = len(rng);
    std::vector<int> c(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      c[static_cast<size_t>(i)] = ch(rng);
      std::vector<double> u;
      for (int a = 0; a < c[static_cast<size_t>(i)]; ++a) u.push_back(val(rng));
      t.unary.push_back(u);
      std::vector<std::vector<double>> e;
      if (i > 0) {
        e.assign(static_cast<size_t>(c[static_cast<size_t>(i - 1)]),
                 std::vector<double>(static_cast<size_t>(c[static_cast<size_t>(i)])));
        for (auto& row : e) {
          for (double& x : row) x = val(rng);
        }
      }
      t.edge.push_back(e);
    }
    const PartitionDpSolution s = solve_partition_dp(t);
    const double bf = brute_force(t);
    ASSERT_EQ(s.cost, bf) << "trial " << trial;  // integers: sums are exact
    EXPECT_EQ(partition_cost(t, s.choice), bf);
  }
}

TEST(PartitionDp, EqualsBruteForceOnMlpAndSimulates) {
  MlpOptions m;
  m.layers = 3;
  m.input = 1024;
  m.hidden = 4096;
  m.classes = 1000;
  m.batch = 64;
  for (int k : {2, 4}) {
    Fixture f(expand_training_step(make_mlp(m)), make_cluster(k));
    Problem p = f.problem();
    std::vector<int> devices;
    for (int d = 0; d < k; ++d) devices.push_back(d);
    PartitionPlacerOptions split_all;
    split_all.allow_unsplit = false;
    const PartitionChain chain = make_partition_chain(p, devices, split_all);
    // linear, relu, linear, relu, linear, loss.
    ASSERT_EQ(chain.ops.size(), 6u);
    size_t three = 0;
    for (const auto& d : chain.dims) three += d.size() == 3;
    EXPECT_EQ(three, 3u);  // the MatMuls: batch, output features, reduction
    const PartitionDpSolution s = solve_partition_dp(chain.table);
    std::vector<int> arg;
    const double bf = brute_force(chain.table, &arg);
    EXPECT_EQ(partition_cost(chain.table, s.choice), bf);
    EXPECT_DOUBLE_EQ(s.cost, bf);

    PartitionDpSolution sol;
    PartitionPlacerOptions all;
    all.try_smaller_degrees = false;
    all.allow_unsplit = false;
    const Plan plan = partition_dp_plan(p, all, &sol);
    EXPECT_EQ(sol.choice, s.choice);
    ASSERT_NO_THROW(plan.validate(f.g, f.c));
    ASSERT_EQ(plan.partitions.size(), chain.ops.size());
    for (const OpPartition& part : plan.partitions) EXPECT_EQ(part.devices, devices);
    ASSERT_TRUE(plan.predicted.valid);
    EXPECT_FALSE(plan.predicted.oom);
    EXPECT_GT(plan.predicted.step_time, 0);
    // Splitting the big matmuls over k devices beats one device.
    const double single = f.sim.run(Plan::single_device(f.g, 0)).step_time;
    EXPECT_LT(plan.predicted.step_time, single) << "k = " << k;
    // With the halvings tried too, the simulator's pick is never slower.
    const Plan halving = partition_dp_plan(p);
    EXPECT_LE(halving.predicted.step_time, plan.predicted.step_time);
    EXPECT_FALSE(halving.partitions.empty());
  }
}

TEST(PartitionDp, UnsplitChoiceEqualsBruteForce) {
  MlpOptions m;
  m.layers = 3;
  m.input = 64;  // tiny layers: collectives cost more than the compute they save
  m.hidden = 64;
  m.classes = 10;
  m.batch = 8;
  Fixture f(expand_training_step(make_mlp(m)), make_cluster(4));
  Problem p = f.problem();
  PartitionPlacerOptions o;
  o.allow_unsplit = true;
  const PartitionChain chain = make_partition_chain(p, {0, 1, 2, 3}, o);
  ASSERT_EQ(chain.ops.size(), 6u);
  for (const auto& d : chain.dims) EXPECT_EQ(d.back(), kNoSplit);
  const PartitionDpSolution s = solve_partition_dp(chain.table);
  EXPECT_EQ(partition_cost(chain.table, s.choice), brute_force(chain.table));
  // Nothing is worth splitting here: every op stays whole on device 0.
  for (size_t i = 0; i < chain.ops.size(); ++i) {
    EXPECT_EQ(chain.dims[i][static_cast<size_t>(s.choice[i])], kNoSplit) << "node " << i;
  }
  const Plan plan = partition_dp_plan(p, o);
  EXPECT_TRUE(plan.partitions.empty());
  EXPECT_EQ(plan.predicted.step_time, f.sim.run(Plan::single_device(f.g, 0)).step_time);
}

TEST(PartitionDp, RecursiveHalvingEqualsBruteForceAndSimulates) {
  MlpOptions m;
  m.layers = 3;
  m.input = 1024;
  m.hidden = 4096;
  m.classes = 1000;
  m.batch = 64;
  Fixture f(expand_training_step(make_mlp(m)), make_cluster(4));
  Problem p = f.problem();
  PartitionPlacerOptions split_all;
  split_all.allow_unsplit = false;
  const LevelChain chain = make_level_chain(p, {0, 1, 2, 3}, split_all);
  ASSERT_EQ(chain.ops.size(), 6u);
  // L = 2: a MatMul has 3 dims per level (9 vectors), relu / loss 2 (4 vectors).
  size_t nine = 0;
  for (const auto& c : chain.levels) {
    nine += c.size() == 9;
    for (const auto& lv : c) EXPECT_EQ(lv.size(), 2u);
  }
  EXPECT_EQ(nine, 3u);
  EXPECT_EQ(chain.levels[0][0], (std::vector<int>{0, 0}));
  const PartitionDpSolution s = solve_partition_dp(chain.table);
  const double bf = brute_force(chain.table);
  EXPECT_EQ(partition_cost(chain.table, s.choice), bf);
  EXPECT_DOUBLE_EQ(s.cost, bf);
  // The same vector everywhere has no re-layout; a level changing its dim costs something.
  EXPECT_EQ(chain.table.edge[1][0][0], 0);
  EXPECT_GT(chain.table.edge[1][0][1], 0);

  // Pruning keeps the cheapest vectors per op.
  PartitionPlacerOptions pruned = split_all;
  pruned.max_level_choices = 2;
  const LevelChain small = make_level_chain(p, {0, 1, 2, 3}, pruned);
  for (size_t i = 0; i < small.ops.size(); ++i) {
    ASSERT_EQ(small.levels[i].size(), std::min<size_t>(2, chain.levels[i].size()));
    if (small.levels[i].size() < 2) continue;
    const double kept = std::max(small.table.unary[i][0], small.table.unary[i][1]);
    size_t cheaper = 0;
    for (double u : chain.table.unary[i]) cheaper += u < kept;
    EXPECT_LE(cheaper, 1u) << "node " << i;
  }

  // The placer also tries the levels; the simulator's pick is never slower than without.
  PartitionPlacerOptions levels;
  levels.try_levels = true;
  const Plan flat = partition_dp_plan(p);
  const Plan tofu = partition_dp_plan(p, levels);
  ASSERT_NO_THROW(tofu.validate(f.g, f.c));
  EXPECT_LE(tofu.predicted.step_time, flat.predicted.step_time);
  // The registered method turns the levels on.
  EXPECT_EQ(make_placer("partition-dp")->search(p, SearchBudget{}).predicted.step_time,
            tofu.predicted.step_time);
  // Levels only, every op split: a valid plan whose partitions carry 2 levels on 4 devices.
  Plan plan = Plan::single_device(f.g, 0);
  for (size_t i = 0; i < chain.ops.size(); ++i) {
    const std::vector<int>& lv = chain.levels[i][static_cast<size_t>(s.choice[i])];
    plan.partitions.push_back({chain.ops[i], lv[0], {0, 1, 2, 3}, lv});
  }
  ASSERT_NO_THROW(plan.validate(f.g, f.c));
  const SimResult r = f.sim.run(plan);
  EXPECT_FALSE(r.oom);
  EXPECT_LT(r.step_time, f.sim.run(Plan::single_device(f.g, 0)).step_time);
}

TEST(PartitionDp, OneDeviceMeansNoPartitions) {
  Fixture f(expand_training_step(make_mlp(MlpOptions{})), make_cluster(1));
  Problem p = f.problem();
  const Plan plan = partition_dp_plan(p);
  EXPECT_TRUE(plan.partitions.empty());
  EXPECT_TRUE(plan.predicted.valid);
}

}  // namespace
}  // namespace placer
