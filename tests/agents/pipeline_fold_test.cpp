// Folded pipeline stages (pipeline-dp `fold`): the DP equals brute force over every
// outside-in folding on random tables, a hand-computed chain whose best split is folded,
// and on a real training step whose exhaustive stage-load optimum is folded, the folded
// plan reaches that optimum and streams faster in the simulator than the contiguous one.

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "agents/classical/pipeline_dp.h"
#include "agents/classical/pipeline_fold.h"
#include "agents/classical/pipeline_ideals_load.h"
#include "problem_fixture.h"
#include "simulator/steady_state.h"
#include "src/graph/training_step.h"

namespace placer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Every folding of units [i, j) on slots [d, N): the next stage takes [i, a) and [c, j) on
/// r slots (written [i, a) + [a, a) when c == j), or the whole middle.
void brute(const FoldedCostTable& t, const std::vector<int>& counts, int i, int j, int d,
           double worst, double* best) {
  for (int r : counts) {
    if (d + r > t.num_devices) break;
    *best = std::min(*best, std::max(worst, t.stage_time(i, j, j, j, d, r)));
    for (int a = i; a < j; ++a) {
      for (int c = a + 1; c <= j; ++c) {
        if (a == i && c == j) continue;
        const double w = c == j ? t.stage_time(i, a, a, a, d, r) : t.stage_time(i, a, c, j, d, r);
        brute(t, counts, a, c, d + r, std::max(worst, w), best);
      }
    }
  }
}

/// Integer stage times from a random table (10% not fitting), so comparisons are exact.
FoldedCostTable random_table(int L, int N, uint32_t seed) {
  std::mt19937 rng(seed);
  const size_t n = static_cast<size_t>(L + 1) * (L + 1) * (L + 1) * (L + 1) * (N + 1) * (N + 1);
  auto cost = std::make_shared<std::vector<double>>(n);
  std::uniform_int_distribution<int> noise(0, 100), coin(0, 9);
  for (double& x : *cost) x = coin(rng) == 0 ? kInf : noise(rng);
  FoldedCostTable t;
  t.num_layers = L;
  t.num_devices = N;
  t.stage_time = [cost, L, N](int a, int b, int c, int d, int f, int r) {
    const size_t k =
        ((((static_cast<size_t>(a) * (L + 1) + b) * (L + 1) + c) * (L + 1) + d) * (N + 1) + f) *
            (N + 1) +
        r;
    return (*cost)[k] + 40.0 * (b - a + d - c) / r;
  };
  return t;
}

TEST(PipelineFold, EqualsBruteForceOnRandomTables) {
  int checked = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const int L = 1 + static_cast<int>(seed % 5), N = 1 + static_cast<int>(seed % 3);
    const FoldedCostTable t = random_table(L, N, seed);
    const std::vector<int> counts = seed % 2 ? std::vector<int>{1} : std::vector<int>{1, 2};
    double best = kInf;
    brute(t, counts, 0, L, 0, 0, &best);
    const FoldedSolution sol = solve_folded_pipeline(t, counts);
    if (best == kInf) {
      EXPECT_FALSE(sol.feasible()) << "seed " << seed;
      continue;
    }
    ASSERT_TRUE(sol.feasible()) << "seed " << seed;
    EXPECT_EQ(sol.bottleneck, best) << "seed " << seed;
    EXPECT_EQ(folded_bottleneck(t, sol.stages), best) << "seed " << seed;
    // The stages cover every unit once, on disjoint slots.
    std::vector<int> unit(static_cast<size_t>(L), 0), slot(static_cast<size_t>(N), 0);
    for (const FoldedStageChoice& s : sol.stages) {
      for (int u = s.begin; u < s.end; ++u) ++unit[static_cast<size_t>(u)];
      for (int u = s.tail_begin; u < s.tail_end; ++u) ++unit[static_cast<size_t>(u)];
      for (int k = s.first; k < s.first + s.replicas; ++k) ++slot[static_cast<size_t>(k)];
    }
    EXPECT_EQ(std::count(unit.begin(), unit.end(), 1), L) << "seed " << seed;
    EXPECT_LE(*std::max_element(slot.begin(), slot.end()), 1) << "seed " << seed;
    ++checked;
  }
  EXPECT_GT(checked, 30);
}

TEST(PipelineFold, HandComputedChainFoldsAroundItsWideCut) {
  // Units of work 2 each; the edges 0-1, 1-2, 2-3 cost 1, 10, 1 where they cross a stage's
  // border (charged to both sides). On two devices the contiguous splits hold 7 ({0} |
  // {1, 2, 3}: 6 + 1), 14 and 7; the fold {0, 3} | {1, 2} holds 4 + 2 = 6 on either side.
  const double edge[3] = {1, 10, 1};
  FoldedCostTable t;
  t.num_layers = 4;
  t.num_devices = 2;
  t.stage_time = [edge](int a, int b, int c, int d, int, int) {
    auto in = [&](int u) { return (u >= a && u < b) || (u >= c && u < d); };
    double load = 2.0 * (b - a + d - c);
    for (int k = 0; k < 3; ++k) {
      if (in(k) != in(k + 1)) load += edge[k];
    }
    return load;
  };
  const FoldedSolution sol = solve_folded_pipeline(t, {1});
  ASSERT_EQ(sol.stages.size(), 2u);
  EXPECT_EQ(sol.bottleneck, 6);
  const FoldedStageChoice& outer = sol.stages[0];
  EXPECT_EQ(outer.begin, 0);
  EXPECT_EQ(outer.end, 1);
  EXPECT_EQ(outer.tail_begin, 3);
  EXPECT_EQ(outer.tail_end, 4);
  EXPECT_EQ(sol.stages[1].begin, 1);
  EXPECT_EQ(sol.stages[1].end, 3);
  EXPECT_EQ(sol.stages[1].tail_begin, sol.stages[1].tail_end);
}

/// Four MatMul ops of `flops` with 200 MB of parameters each (replicating a stage costs a
/// long all-reduce); op 1's output is 400 MB, the others' 1 MB: a pipeline should not cut
/// between ops 1 and 2.
Graph wide_middle_step() {
  const double flops[4] = {2e9, 3e9, 3e9, 2e9};
  const uint64_t out[4] = {1 << 20, 400ull << 20, 1 << 20, 1 << 20};
  GraphBuilder gb("wide_middle");
  gb.set_batch_size(8);
  TensorId prev = gb.add_tensor("x", 1 << 20);
  for (int i = 0; i < 4; ++i) {
    Op op;
    op.name = "op" + std::to_string(i);
    op.type = "MatMul";
    op.category = category_of_op_type(op.type);
    op.layer = i;
    op.flops = flops[i];
    op.param_bytes = 200ull << 20;
    const TensorId t = gb.add_tensor(op.name + ".out", out[i]);
    op.inputs = {prev};
    op.outputs = {t};
    gb.add_op(std::move(op));
    prev = t;
  }
  return expand_training_step(gb.build());
}

TEST(PipelineFold, FoldedPlanReachesTheExhaustiveOptimumAndStreamsFaster) {
  DeviceSpec s;
  s.model = "gpu10t";
  s.peak_flops[static_cast<int>(DType::kF32)] = 10e12;
  s.memory_bandwidth = 1e12;
  s.memory_bytes = 16ull << 30;
  testing::ProblemFixture f(
      wide_middle_step(),
      testing::hosts_cluster(1, 2, s, LinkSpec{"pcie", 10e-6, 10e9, LinkSharing::kPerPair},
                             LinkSpec{"eth", 20e-6, 1e9, LinkSharing::kPerPair}));
  Problem p = f.problem();
  PipelinePlacerOptions o;
  o.objective = Objective::kThroughput;
  const Plan contiguous = pipeline_dp_plan(p, o);
  o.fold = true;
  const Plan folded = pipeline_dp_plan(p, o);
  ASSERT_EQ(folded.pipeline.stages.size(), 2u);
  const auto op = [&](const char* name) { return static_cast<OpId>(f.g.find_op(name)); };
  auto has = [&](const PipelineStage& st, OpId o2) {
    return std::find(st.ops.begin(), st.ops.end(), o2) != st.ops.end();
  };
  const PipelineStage& outer = folded.pipeline.stages[0];
  EXPECT_TRUE(has(outer, op("op0")) && has(outer, op("op3")));
  EXPECT_TRUE(has(folded.pipeline.stages[1], op("op1")) &&
              has(folded.pipeline.stages[1], op("op2")));
  // The stage-load objective: the folded plan is the exhaustive optimum, the contiguous one
  // above it.
  const StageLoadModel m = stage_load_model(p);
  const double optimum = exhaustive_stage_load(m, 2).load;
  EXPECT_NEAR(plan_stage_load(m, f.g, folded), optimum, 1e-9 * optimum);
  EXPECT_GT(plan_stage_load(m, f.g, contiguous), 1.2 * optimum);
  // The simulator's steady state agrees with the load within 2%, and ranks the fold first.
  const double steady = steady_state_time(f.sim.run(folded), f.c);
  EXPECT_NEAR(steady, optimum, 0.02 * optimum);
  EXPECT_LT(steady, steady_state_time(f.sim.run(contiguous), f.c));
}

}  // namespace
}  // namespace placer
