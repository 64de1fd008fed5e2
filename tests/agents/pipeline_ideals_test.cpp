// pipeline-ideals: the DP over ideals equals brute force over every forward-only split of
// small random DAGs (with and without extra work placed by node sets), beats every split
// along one topological order on two parallel chains (hand-computed), keeps a 300-node
// branching graph balanced when its ideals exceed the cap, charges forward graphs one
// transfer per cut, adds or overlaps transfers as the cluster says, places backward ops without a
// forward op where the simulator runs them, and its plan is a valid pipeline the simulator runs.

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "agents/classical/pipeline_ideals.h"
#include "one_host_cluster.h"
#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"

namespace placer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// The best bottleneck over every assignment of nodes to stages 0..k-1 (k <= max_stages,
/// no empty stage) where every edge goes to the same or a later stage.
double brute_force(const IdealSplitProblem& p, int max_stages) {
  const int n = p.size();
  double best = kInf;
  std::vector<int> st(static_cast<size_t>(n), 0);
  std::function<void(int)> rec = [&](int u) {
    if (u == n) {
      const int k = *std::max_element(st.begin(), st.end()) + 1;
      if (k > max_stages) return;
      std::vector<char> used(static_cast<size_t>(k), 0);
      for (int s : st) used[static_cast<size_t>(s)] = 1;
      if (std::find(used.begin(), used.end(), 0) != used.end()) return;
      for (int a = 0; a < n; ++a) {
        for (int b : p.succs[static_cast<size_t>(a)]) {
          if (st[static_cast<size_t>(b)] < st[static_cast<size_t>(a)]) return;
        }
      }
      double worst = 0;
      for (int s = 0; s < k; ++s) worst = std::max(worst, ideal_stage_load(p, st, s));
      best = std::min(best, worst);
      return;
    }
    for (int s = 0; s < max_stages; ++s) {
      st[static_cast<size_t>(u)] = s;
      rec(u + 1);
    }
  };
  rec(0);
  return best;
}

IdealSplitProblem random_dag(std::mt19937_64& rng, int n) {
  IdealSplitProblem p;
  std::uniform_real_distribution<double> w(1, 10), c(0, 3);
  std::bernoulli_distribution edge(0.35);
  p.work.resize(static_cast<size_t>(n));
  p.send.resize(static_cast<size_t>(n));
  p.succs.resize(static_cast<size_t>(n));
  for (int u = 0; u < n; ++u) {
    p.work[static_cast<size_t>(u)] = w(rng);
    p.send[static_cast<size_t>(u)] = c(rng);
    for (int v = u + 1; v < n; ++v) {
      if (edge(rng)) p.succs[static_cast<size_t>(u)].push_back(v);
    }
  }
  return p;
}

TEST(PipelineIdeals, EqualsBruteForceOnRandomDags) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    IdealSplitProblem p = random_dag(rng, 4 + trial % 4);
    p.overlap = trial % 2 == 1;  // transfers overlapping the work: load = the larger
    for (int k : {1, 2, 3}) {
      const IdealSplit s = solve_ideal_split(p, k);
      EXPECT_TRUE(s.exact);
      EXPECT_NEAR(s.bottleneck, brute_force(p, k), 1e-9) << "trial " << trial << " k " << k;
      // The reported bottleneck is the one of the split it returns.
      double worst = 0;
      for (int st = 0; st < s.stages; ++st) worst = std::max(worst, ideal_stage_load(p, s.stage_of, st));
      EXPECT_NEAR(worst, s.bottleneck, 1e-9);
    }
  }
}

TEST(PipelineIdeals, ExtraWorkEqualsBruteForceOnRandomDags) {
  // Extra work on the latest (or earliest) stage among random node sets: the DP over
  // ideals still equals brute force, whose loads place it by ideal_stage_load.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> w(1, 10);
  std::bernoulli_distribution pick(0.4), latest(0.7);
  for (int trial = 0; trial < 30; ++trial) {
    IdealSplitProblem p = random_dag(rng, 4 + trial % 4);
    for (int e = 0; e < 3; ++e) {
      IdealSplitExtra x;
      for (int u = 0; u < p.size(); ++u) {
        if (pick(rng)) x.nodes.push_back(u);
      }
      x.latest = x.nodes.empty() || latest(rng);
      x.work = w(rng);
      p.extra.push_back(x);
    }
    for (int k : {2, 3}) {
      const IdealSplit s = solve_ideal_split(p, k);
      EXPECT_NEAR(s.bottleneck, brute_force(p, k), 1e-9) << "trial " << trial << " k " << k;
    }
  }
}

TEST(PipelineIdeals, ExtraWorkJoinsTheLatestStageOfItsNodes) {
  // Chain 0 -> 1 -> 2 in stages 0, 1, 2; extra work of 10 on {0, 1} runs on stage 1, on
  // {0, 1} earliest on stage 0, with no nodes on stage 0.
  IdealSplitProblem p;
  p.work = {1, 2, 3};
  p.send = {0, 0, 0};
  p.succs = {{1}, {2}, {}};
  p.extra = {{{0, 1}, true, 10}, {{0, 1}, false, 20}, {{}, true, 40}};
  const std::vector<int> stage_of{0, 1, 2};
  EXPECT_DOUBLE_EQ(ideal_stage_load(p, stage_of, 0), 1 + 20 + 40);
  EXPECT_DOUBLE_EQ(ideal_stage_load(p, stage_of, 1), 2 + 10);
  EXPECT_DOUBLE_EQ(ideal_stage_load(p, stage_of, 2), 3);
}

TEST(PipelineIdeals, BeatsEveryPrefixSplitOnTwoParallelChains) {
  // a0 (1) -> a1 (5) and b0 (5) -> b1 (1), no transfer cost, 3 stages. Along the order
  // a0 a1 b0 b1 the best is {a0, a1} {b0} {b1} or {a0} {a1} {b0, b1}: 6. Over ideals
  // {b0} {a0, b1} {a1} (or {a0, b0} ...) reaches the single-node bound 5.
  IdealSplitProblem p;
  p.work = {1, 5, 5, 1};
  p.send = {0, 0, 0, 0};
  p.succs = {{1}, {}, {3}, {}};
  EXPECT_DOUBLE_EQ(solve_prefix_split(p, 3).bottleneck, 6);
  const IdealSplit s = solve_ideal_split(p, 3);
  EXPECT_DOUBLE_EQ(s.bottleneck, 5);
  EXPECT_EQ(s.stages, 3);
}

TEST(PipelineIdeals, TransfersAcrossACutAddToBothStages) {
  // Chain a (4) -> b (4), sending a's output costs 3: one stage holds 8, two stages hold
  // 4 + 3 each = 7, so two stages win; with a cost of 5 (9 each) one stage wins.
  IdealSplitProblem p;
  p.work = {4, 4};
  p.send = {3, 0};
  p.succs = {{1}, {}};
  IdealSplit s = solve_ideal_split(p, 2);
  EXPECT_DOUBLE_EQ(s.bottleneck, 7);
  EXPECT_EQ(s.stages, 2);
  p.send = {5, 0};
  s = solve_ideal_split(p, 2);
  EXPECT_DOUBLE_EQ(s.bottleneck, 8);
  EXPECT_EQ(s.stages, 1);
  // Overlapped with the work, the cost of 5 is the larger of 4 and 5 on each side.
  p.overlap = true;
  s = solve_ideal_split(p, 2);
  EXPECT_DOUBLE_EQ(s.bottleneck, 5);
  EXPECT_EQ(s.stages, 2);
}

TEST(PipelineIdeals, OverlapDecidesTheSplitOfAThreeNodeChain) {
  // Chain a -> b -> c of work 4 each, a and b sending 5 across a cut. Added to the work:
  // three stages hold 4 + 5, 4 + 5 + 5, 4 + 5 (14), two stages 8 + 5 and 4 + 5 (13), one
  // stage 12, the best. Overlapped: three stages max(4, 5), max(4, 10), max(4, 5) (10), two
  // stages max(8, 5) and max(4, 5) (8), the best, one stage 12.
  IdealSplitProblem p;
  p.work = {4, 4, 4};
  p.send = {5, 5, 0};
  p.succs = {{1}, {2}, {}};
  IdealSplit s = solve_ideal_split(p, 3);
  EXPECT_DOUBLE_EQ(s.bottleneck, 12);
  EXPECT_EQ(s.stages, 1);
  p.overlap = true;
  s = solve_ideal_split(p, 3);
  EXPECT_DOUBLE_EQ(s.bottleneck, 8);
  EXPECT_EQ(s.stages, 2);
  EXPECT_DOUBLE_EQ(ideal_stage_load(p, {0, 1, 1}, 1), 8);
  EXPECT_DOUBLE_EQ(ideal_stage_load(p, {0, 1, 2}, 1), 10);
}

TEST(PipelineIdeals, PlanHonoursTheClusterOverlapKey) {
  // The same chain as a forward graph: 4e10 FLOPs (4 ms at 10 TFLOP/s) per op, outputs of
  // 50 MB (5 ms over 10 GB/s). On devices that overlap their transfers the split has two
  // stages of 8 ms; with `overlap: false` one stage of 12 ms.
  ChainOptions o;
  o.per_op_flops = {4e10, 4e10, 4e10};
  o.activation_bytes = 50'000'000;
  const Graph g = make_chain(o);
  for (const bool overlap : {true, false}) {
    const Cluster c = testing::one_host_cluster(
        3, 16ull << 30, LinkSpec{"pcie", 10e-6, 10e9, LinkSharing::kPerPair}, 0, overlap);
    EXPECT_EQ(transfers_overlap(c, {0, 1, 2}), overlap);
    const CostModel cost(c, uniform_profile(1.0));
    Simulator sim(g, c, cost);
    const Problem problem{g, c, cost, sim, {}};
    const IdealSplitProblem p = ideal_split_problem(problem, 0, 1);
    ASSERT_EQ(p.size(), 3);
    ASSERT_NEAR(p.work[0], 4e-3, 1e-4);
    ASSERT_NEAR(p.send[0], 5e-3, 1e-4);
    IdealSplit split;
    const Plan plan = pipeline_ideals_plan(problem, &split);
    EXPECT_EQ(split.stages, overlap ? 2 : 1) << "overlap " << overlap;
    EXPECT_DOUBLE_EQ(split.bottleneck, overlap ? p.work[0] + p.work[1] : p.work[0] * 3);
    EXPECT_NO_THROW(plan.validate(g, c));
  }
}

TEST(PipelineIdeals, FallsBackWhenTheIdealsExceedTheCap) {
  // 12 independent nodes have 4096 ideals; a cap of 100 forces the prefix split.
  IdealSplitProblem p;
  p.work.assign(12, 1);
  p.send.assign(12, 0);
  p.succs.assign(12, {});
  const IdealSplit s = solve_ideal_split(p, 4, 100);
  EXPECT_FALSE(s.exact);
  EXPECT_DOUBLE_EQ(s.bottleneck, 3);  // 12 equal nodes in 4 stages of 3 along the order
}

TEST(PipelineIdeals, StaysBalancedOnA300NodeBranchingGraphPastTheCap) {
  // A stem chain of 60 nodes, 16 modules (a fork, four branches of three nodes, a join)
  // and a tail chain of 16: 300 nodes of work 1, over 4^4 ideals per module. Contracting
  // whole chains made the stem one node of 60 (1.2x the bound of 300 / 6 = 50); pieces of
  // bounded work keep the six stages within 4% of it.
  IdealSplitProblem p;
  auto node = [&p] {
    p.work.push_back(1);
    p.send.push_back(0.01);
    p.succs.emplace_back();
    return p.size() - 1;
  };
  auto edge = [&p](int u, int v) { p.succs[static_cast<size_t>(u)].push_back(v); };
  int last = node();
  for (int i = 1; i < 60; ++i) {
    const int u = node();
    edge(last, u);
    last = u;
  }
  for (int m = 0; m < 16; ++m) {
    const int fork = node();
    edge(last, fork);
    std::vector<int> tails;
    for (int b = 0; b < 4; ++b) {
      int prev = fork;
      for (int i = 0; i < 3; ++i) {
        const int u = node();
        edge(prev, u);
        prev = u;
      }
      tails.push_back(prev);
    }
    last = node();
    for (int t : tails) edge(t, last);
  }
  while (p.size() < 300) {
    const int u = node();
    edge(last, u);
    last = u;
  }
  ASSERT_EQ(p.size(), 300);
  const IdealSplit s = solve_ideal_split(p, 6);
  EXPECT_FALSE(s.exact);
  EXPECT_EQ(s.stages, 6);
  EXPECT_LE(s.bottleneck, 1.04 * 50);
  double worst = 0;
  for (int k = 0; k < s.stages; ++k) worst = std::max(worst, ideal_stage_load(p, s.stage_of, k));
  EXPECT_DOUBLE_EQ(worst, s.bottleneck);
}

TEST(PipelineIdeals, ForwardGraphsChargeOneTransferPerCut) {
  // The same chain forward only and as a training step: a cut sends the activation once,
  // or the activation and its gradient.
  const Cluster c = testing::one_host_cluster(2);
  const CostModel cost(c, uniform_profile(1.0));
  ChainOptions o;
  o.n = 4;
  o.param_bytes = 1 << 20;  // weights, so the training step has a backward pass
  const Graph fwd = make_chain(o);
  const Graph train = expand_training_step(fwd);
  const double one = cost.transfer_time(0, 1, o.activation_bytes);
  for (const Graph* g : {&fwd, &train}) {
    Simulator sim(*g, c, cost);
    const Problem problem{*g, c, cost, sim, {}};
    const IdealSplitProblem p = ideal_split_problem(problem, 0, 1);
    ASSERT_EQ(p.size(), 4);  // the four ops (the input "x" is a graph input)
    EXPECT_DOUBLE_EQ(p.send[0], (g == &fwd ? 1 : 2) * one);
  }
}

/// x -> f0 -> {f1, f2} -> f3 and its backward by hand: b3, b1, b2 derived from their forward
/// ops, "acc" (backward, no forward op) summing b1's and b2's outputs, b0 after it.
Graph orphan_backward_graph() {
  GraphBuilder b("orphan");
  b.set_batch_size(8);
  auto tensor = [&b](const std::string& name) {
    Tensor t;
    t.name = name;
    t.bytes = 1 << 16;
    t.batch_scaled = true;
    return b.add_tensor(std::move(t));
  };
  auto op = [&b](const std::string& name, double flops, std::vector<TensorId> in,
                 std::vector<TensorId> out, Phase phase, OpId fwd) {
    Op o;
    o.name = name;
    o.type = "MatMul";
    o.category = OpCategory::kMatMul;
    o.phase = phase;
    o.flops = flops;
    o.bytes_accessed = 1;
    o.batch_scaled = true;
    o.forward_op = fwd;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    return b.add_op(std::move(o));
  };
  const auto F = Phase::kForward, B = Phase::kBackward;
  const TensorId a0 = tensor("a0"), a1 = tensor("a1"), a2 = tensor("a2"), a3 = tensor("a3");
  const TensorId g3 = tensor("g3"), g1 = tensor("g1"), g2 = tensor("g2"), gs = tensor("gs");
  const TensorId g0 = tensor("g0");
  const OpId f0 = op("f0", 4e10, {}, {a0}, F, kNoOp);
  const OpId f1 = op("f1", 4e10, {a0}, {a1}, F, kNoOp);
  const OpId f2 = op("f2", 4e10, {a0}, {a2}, F, kNoOp);
  const OpId f3 = op("f3", 4e10, {a1, a2}, {a3}, F, kNoOp);
  op("b3", 4e10, {a3}, {g3}, B, f3);
  op("b1", 4e10, {g3, a1}, {g1}, B, f1);
  op("b2", 4e10, {g3, a2}, {g2}, B, f2);
  op("acc", 8e10, {g1, g2}, {gs}, B, kNoOp);
  op("b0", 4e10, {gs}, {g0}, B, f0);
  b.set_training_step(true);
  return b.build();
}

TEST(PipelineIdeals, BackwardOpsWithoutForwardOpRunWhereTheSplitCountsThem) {
  const Graph g = orphan_backward_graph();
  const Cluster c = testing::one_host_cluster(3);
  const CostModel cost(c, uniform_profile(1.0));
  Simulator sim(g, c, cost);
  const Problem problem{g, c, cost, sim, {}};
  IdealSplit split;
  const Plan plan = pipeline_ideals_plan(problem, &split);
  ASSERT_GT(split.stages, 1);
  const OpId acc = g.find_op("acc");
  // "acc" runs on the later of f1's and f2's stages, in the plan and in the simulator.
  const int latest = std::max(plan.placement[g.find_op("f1")], plan.placement[g.find_op("f2")]);
  EXPECT_EQ(plan.placement[acc], latest);
  SimOptions so;
  so.record_events = true;
  const SimResult r = sim.run(plan, so);
  int seen = 0;
  for (const SimEvent& e : r.events) {
    if (e.kind != SimEvent::kCompute) continue;
    EXPECT_EQ(e.device, plan.placement[e.op]) << g.op(e.op).name;
    seen += e.op == acc;
  }
  EXPECT_GT(seen, 0);
  // The split's stage work is the work of the ops the plan runs there.
  IdealSplitProblem p = ideal_split_problem(problem, 0, 1);
  std::fill(p.send.begin(), p.send.end(), 0.0);
  for (int k = 0; k < split.stages; ++k) {
    double placed = 0;
    for (OpId o = 0; o < g.num_ops(); ++o) {
      if (plan.placement[o] == k) placed += cost.op_time(g.op(o), g.op_bytes(o), 0);
    }
    EXPECT_NEAR(ideal_stage_load(p, split.stage_of, k), placed, 1e-12) << "stage " << k;
  }
}

TEST(PipelineIdeals, PlanIsAValidPipelineTheSimulatorRuns) {
  const Cluster c = testing::one_host_cluster(4);
  ChainOptions o;
  o.per_op_flops = {4e10, 4e10, 4e10, 4e10, 4e10, 4e10, 4e10, 4e10};
  o.batch = 32;
  const Graph g = expand_training_step(make_chain(o));
  const CostModel cost(c, uniform_profile(1.0));
  Simulator sim(g, c, cost);
  const Problem problem{g, c, cost, sim, {}};
  IdealSplit split;
  const Plan plan = pipeline_ideals_plan(problem, &split);
  EXPECT_EQ(plan.method, "pipeline-ideals");
  EXPECT_EQ(static_cast<int>(plan.pipeline.stages.size()), split.stages);
  EXPECT_GT(split.stages, 1);
  EXPECT_NO_THROW(plan.validate(g, c));
  const SimResult r = sim.run(plan);
  EXPECT_FALSE(r.oom);
  EXPECT_DOUBLE_EQ(r.step_time, plan.predicted.step_time);
  // Faster than the whole step on one device.
  EXPECT_LT(r.step_time, sim.run(Plan::single_device(g, 0)).step_time);
}

}  // namespace
}  // namespace placer
