// The stage-load objective and its exhaustive optimum: hand-computed loads of a diamond
// (replicas, transfers added or overlapped), the exhaustive optimum below the contiguous
// split's when a replicated stage wins, the branch-and-bound search equal to brute force on
// random DAGs (with and without extra work), and on a small branching training graph the
// exhaustive optimum <= the load of every fast method's plan (with and without overlap).

#include "agents/classical/pipeline_ideals_load.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include "agents/api/placer.h"
#include "agents/portfolio/method_run.h"
#include "datasets/synthetic.h"
#include "one_host_cluster.h"
#include "simulator/cost_profile.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"

namespace placer {
namespace {

/// a (2) -> {b (6), c (6)} -> d (2), every node sending 1 across a cut, no parameters.
StageLoadModel diamond(bool overlap) {
  StageLoadModel m;
  m.split.work = {2, 6, 6, 2};
  m.split.send = {1, 1, 1, 0};
  m.split.succs = {{1, 2}, {3}, {3}, {}};
  m.split.overlap = overlap;
  m.params = {0, 0, 0, 0};
  m.groups.resize(3);  // two devices; no parameters, so no all-reduce is costed
  return m;
}

TEST(StageLoad, HandComputedLoadsOfADiamond) {
  const StageLoadModel m = diamond(false);
  // {a, b} | {c, d}: a -> c and b -> d cross: each stage 8 + 1 + 1 = 10.
  EXPECT_DOUBLE_EQ(assignment_load(m, {0, 0, 1, 1}, {1, 1}), 10);
  // {a, b, d} | {c}: a -> c and c -> d cross: 10 + 2 = 12 and 6 + 2 = 8.
  EXPECT_DOUBLE_EQ(assignment_load(m, {0, 0, 1, 0}, {1, 1}), 12);
  // One stage on two replicas: 16 / 2, nothing crosses.
  EXPECT_DOUBLE_EQ(assignment_load(m, {0, 0, 0, 0}, {2}), 8);
  // Overlapped, {a, b, d} | {c}: max(10, 2) and max(6, 2).
  EXPECT_DOUBLE_EQ(assignment_load(diamond(true), {0, 0, 1, 0}, {1, 1}), 10);
}

TEST(StageLoad, HandComputedLoadsOfAReplicatedStage) {
  // The diamond on three devices of the test host (10 us, 10 GB/s links), b holding 40 GB
  // of parameters. A two-device ring all-reduce of B bytes: 2 (p - 1) / p x B / bw + 2 (p -
  // 1) x latency = 4 s + 20 us.
  constexpr uint64_t kParams = 40ull * 1000 * 1000 * 1000;
  for (const bool overlap : {false, true}) {
    const Cluster cluster = testing::one_host_cluster(
        3, 16ull << 30, LinkSpec{"pcie", 10e-6, 10e9, LinkSharing::kPerPair}, 0, overlap);
    const CostModel cost(cluster, uniform_profile(1.0));
    StageLoadModel m = diamond(overlap);
    m.params = {0, kParams, 0, 0};
    m.cost = &cost;
    m.groups.resize(4);
    m.groups[2] = cost.make_group({0, 1});
    m.groups[3] = cost.make_group({0, 1, 2});
    const double ar = 4 + 20e-6;
    ASSERT_NEAR(m.allreduce_time(2, kParams), ar, 1e-9);
    // The whole graph on two replicas: compute 16 / 2 = 8, communication the all-reduce.
    // Added without copy engines, overlapped with them (the compute is longer).
    EXPECT_NEAR(assignment_load(m, {0, 0, 0, 0}, {2}), overlap ? 8 : 8 + ar, 1e-9);
    // {a, b, d} on two replicas, {c} on one: a -> c and c -> d cross. Stage 0 computes
    // 10 / 2 = 5 and communicates its half of the two transfers, 1, and ar; stage 1
    // computes 6 and communicates 2. Overlapped, stage 1's 6 is the largest (stage 0:
    // 1 + ar); added, stage 0's 5 + 1 + ar.
    EXPECT_NEAR(assignment_load(m, {0, 0, 1, 0}, {2, 1}), overlap ? 6 : 5 + 1 + ar, 1e-9);
    EXPECT_NEAR(assignment_load(m, {1, 1, 0, 1}, {1, 2}), overlap ? 6 : 5 + 1 + ar, 1e-9);
  }
}

TEST(StageLoad, HandComputedGradientsPerEdge) {
  // The diamond with one activation of 1 per node (a's read by b and c) and the gradients
  // of each edge apart: c sends a 2 back over a -> c (a coarse op's partial gradients),
  // every other edge 0.5.
  StageLoadModel m = diamond(false);
  m.activations = {{{1, {1, 2}}}, {{1, {3}}}, {{1, {3}}}, {}};
  m.back = {{0.5, 2}, {0.5}, {0.5}, {}};  // aligned with succs {b, c}, {d}, {d}, {}
  // {a, b} | {c, d}: a and b's activations cross (1 + 1 each side), and the gradients of
  // a -> c (2) and b -> d (0.5): each stage 8 + 2 + 2.5 = 12.5.
  EXPECT_DOUBLE_EQ(assignment_load(m, {0, 0, 1, 1}, {1, 1}), 12.5);
  // {a, b, d} | {c}: a -> c (1 + 2) and c -> d (1 + 0.5) cross: 10 + 4.5 and 6 + 4.5.
  EXPECT_DOUBLE_EQ(assignment_load(m, {0, 0, 1, 0}, {1, 1}), 14.5);
  // The search charges them as assignment_load does: {a, c} | {b, d} (a -> b 0.5, c -> d
  // 0.5, activations of a and c: 8 + 3 each side) beats the rest, and so does one
  // stage on two replicas (16 / 2 = 8).
  EXPECT_DOUBLE_EQ(assignment_load(m, {0, 1, 0, 1}, {1, 1}), 11);
  EXPECT_DOUBLE_EQ(exhaustive_stage_load(m, 2).load, 8);
  StageLoadModel odd = m;
  odd.batch = 3;
  EXPECT_DOUBLE_EQ(exhaustive_stage_load(odd, 2).load, 11);
  // a's output as two tensors, 1 read by b and 3 read by c: {a, b} | {c, d} moves only the
  // 3 (and b's 1, and the gradients 2 and 0.5): 8 + 3 + 1 + 2.5 = 14.5 each side, where the
  // split problem's rule charges a node's whole output once a border cuts it.
  m.activations[0] = {{1, {1}}, {3, {2}}};
  EXPECT_DOUBLE_EQ(assignment_load(m, {0, 0, 1, 1}, {1, 1}), 14.5);
  // Read on two other labels, an activation goes to each: {a} | {b} | {c, d} on three
  // devices, a's tensors to b and c (4 on a's side, 1 and 3 on theirs).
  m.activations[0] = {{1, {1}}, {3, {2}}};
  EXPECT_DOUBLE_EQ(assignment_load(m, {0, 1, 2, 2}, {1, 1, 1}),
                   std::max({2 + 4 + 0.5 + 2, 6 + 1 + 1 + 0.5 + 0.5, 8 + 3 + 1 + 2 + 0.5}));
}

/// The training step of a chain of 1, 2 and 1 GFLOP ops with 4 MiB activations and
/// `param_bytes` per op, on two devices of the test host.
void chain_step(uint64_t param_bytes, ProblemSetup* s) {
  ChainOptions o;
  o.per_op_flops = {1e9, 2e9, 1e9};
  o.activation_bytes = 4 << 20;
  o.param_bytes = param_bytes;
  s->graph = expand_training_step(make_chain(o));
  s->cluster = testing::one_host_cluster(2);
  s->cost = std::make_unique<CostModel>(s->cluster, uniform_profile(1.0));
  s->simulator = std::make_unique<Simulator>(s->graph, s->cluster, *s->cost);
}

TEST(StageLoad, OneGradientPerActivationChargesAsBefore) {
  // On a chain's training step every activation gets one gradient of its size back: the
  // activations and the edge's gradients cost what split.send (activation and gradient,
  // twice the transfer) charges.
  ProblemSetup s;
  chain_step(0, &s);
  const StageLoadModel m = stage_load_model(s.problem());
  ASSERT_EQ(m.back.size(), static_cast<size_t>(m.split.size()));
  int edges = 0;
  for (int u = 0; u < m.split.size(); ++u) {
    if (m.split.succs[static_cast<size_t>(u)].size() != 1) continue;
    double activations = 0;
    for (const StageLoadModel::Activation& a : m.activations[static_cast<size_t>(u)]) {
      activations += a.time;
    }
    EXPECT_NEAR(activations + m.back[static_cast<size_t>(u)][0],
                m.split.send[static_cast<size_t>(u)], 1e-12)
        << u;
    ++edges;
  }
  EXPECT_EQ(edges, 2);  // op 0 -> op 1 -> op 2
}

TEST(StageLoad, HandComputedLoadOfASplitNode) {
  // The diamond with b split over labels 0 and 1 (3 of work on each, 0.5 of collectives on
  // each), a and d on 0, c on 1. a -> b and b -> d do not cross (b's output is held on both
  // labels); a -> c and c -> d do: 1 + 1 on each side. Label 0: 2 + 3 + 2 = 7 of work, label
  // 1: 3 + 6 = 9; each 2 + 0.5 of communication.
  NodeSplits splits;
  splits.labels = {0, 0b11, 0, 0};
  splits.collectives = {0, 0.5, 0, 0};
  EXPECT_DOUBLE_EQ(assignment_load(diamond(false), {0, 0, 1, 0}, {1, 1}, &splits), 9 + 2.5);
  EXPECT_DOUBLE_EQ(assignment_load(diamond(true), {0, 0, 1, 0}, {1, 1}, &splits), 9);
  // Unsplit, b is whole on label 0: 10 + 2 and 6 + 2 (a -> c, c -> d).
  EXPECT_DOUBLE_EQ(assignment_load(diamond(false), {0, 0, 1, 0}, {1, 1}), 12);
  // Every node split over both labels: half the work each (8) and the collectives, no border.
  splits.labels = {0b11, 0b11, 0b11, 0b11};
  EXPECT_DOUBLE_EQ(assignment_load(diamond(false), {0, 0, 0, 0}, {1}, &splits), 8 + 0.5);
}

TEST(StageLoad, PlanWithOneSplitOp) {
  // A three-op chain's training step on two devices of 10 us, 10 GB/s links, everything on
  // device 0 but op 1, split over both devices on its output dimension. Its collectives: the
  // forward all-gather of its 4 MiB output (ring, 2 devices: B / 2 / bw + latency) and the
  // backward all-reduce of its 4 MiB input gradient (B / bw + 2 latency); its 1 MiB of
  // parameter gradients stays sharded (an output-dimension split).
  ProblemSetup s;
  chain_step(1 << 20, &s);
  const StageLoadModel m = stage_load_model(s.problem());
  Plan plan;
  plan.placement.assign(s.graph.num_ops(), 0);
  plan.partitions.push_back(OpPartition{1, 1, {0, 1}});
  ASSERT_EQ(s.graph.op(1).phase, Phase::kForward);
  const NodeSplits splits = plan_splits(m, s.graph, plan);
  ASSERT_EQ(splits.labels.size(), static_cast<size_t>(m.split.size()));
  EXPECT_EQ(splits.labels[1], 0b11u);
  const double bytes = 4 << 20;
  const double collectives = (bytes / 2 / 10e9 + 10e-6) + (bytes / 10e9 + 20e-6);
  EXPECT_NEAR(splits.collectives[1], collectives, 1e-9);
  // Op 1's output is held on both devices (op 2 on device 0 reads it there); its input, op
  // 0's 4 MiB output, goes from device 0 to device 1 (B / bw + latency), charged to both.
  // Overlapped, device 0 runs ops 0 and 2 and half of op 1, device 1 the other half; each
  // communicates the collectives and that transfer.
  double rest = 0;
  for (int u = 0; u < m.split.size(); ++u)
    rest += u == 1 ? 0 : m.split.work[static_cast<size_t>(u)];
  const double half = m.split.work[1] / 2;
  const double input = bytes / 10e9 + 10e-6;
  EXPECT_NEAR(plan_stage_load(m, s.graph, plan), std::max({rest + half, half, collectives + input}),
              1e-9);
  // Read unsplit, the plan is the whole graph on device 0.
  EXPECT_NEAR(assignment_load(m, std::vector<int>(m.split.size(), 0), {1}), rest + 2 * half, 1e-9);
}

TEST(StageLoad, ExhaustiveOptimumCoversReplicatedStages) {
  // The best contiguous split on two devices is {a, b} | {c, d} (10, or {a, c} | {b, d});
  // one stage replicated on both devices is 8, the exact optimum.
  const StageLoadModel m = diamond(false);
  EXPECT_DOUBLE_EQ(solve_ideal_split(m.split, 2).bottleneck, 10);
  const StageLoadOptimum opt = exhaustive_stage_load(m, 2);
  EXPECT_DOUBLE_EQ(opt.load, 8);
  EXPECT_DOUBLE_EQ(assignment_load(m, opt.stage_of, opt.replicas), 8);
  EXPECT_THROW(exhaustive_stage_load(m, 2, 2), Error);
  // A batch of 3 samples cannot be split over two replicas: the contiguous split is best.
  StageLoadModel odd = diamond(false);
  odd.batch = 3;
  EXPECT_DOUBLE_EQ(exhaustive_stage_load(odd, 2).load, 10);
}

/// The optimum by brute force: every labelling of the nodes and every device count per
/// label (sum <= labels, dividing the batch), scored by assignment_load.
double brute_force(const StageLoadModel& m, int labels) {
  const int n = m.split.size();
  int64_t total = 1;
  for (int i = 0; i < n; ++i) total *= labels;
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> stage_of(static_cast<size_t>(n)), r(static_cast<size_t>(labels));
  int64_t counts = 1;
  for (int i = 0; i < labels; ++i) counts *= labels;
  for (int64_t a = 0; a < total; ++a) {
    for (int u = 0, code = static_cast<int>(a); u < n; ++u, code /= labels) {
      stage_of[static_cast<size_t>(u)] = code % labels;
    }
    for (int64_t c = 0; c < counts; ++c) {
      int sum = 0;
      for (int l = 0, code = static_cast<int>(c); l < labels; ++l, code /= labels) {
        const bool used = std::find(stage_of.begin(), stage_of.end(), l) != stage_of.end();
        r[static_cast<size_t>(l)] = code % labels + 1;
        sum += used ? r[static_cast<size_t>(l)] : 0;
        if (used && !m.allows(r[static_cast<size_t>(l)])) sum = labels + 1;
      }
      if (sum <= labels) best = std::min(best, assignment_load(m, stage_of, r));
    }
  }
  return best;
}

TEST(StageLoad, SearchEqualsBruteForceOnRandomDags) {
  // Random DAGs of 3-6 nodes, random work and transfers, extra work on some (labels then not
  // interchangeable), transfers added or overlapped; no parameters (no cost model needed).
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> w(0.5, 5), x(0, 2);
  for (int trial = 0; trial < 40; ++trial) {
    StageLoadModel m;
    const int n = 3 + trial % 4;
    m.split.overlap = trial % 2 == 1;
    for (int u = 0; u < n; ++u) {
      m.split.work.push_back(w(rng));
      m.split.send.push_back(x(rng));
      m.split.succs.emplace_back();
      for (int v = u + 1; v < n; ++v) {
        if (rng() % 3 == 0) m.split.succs.back().push_back(v);
      }
    }
    if (trial % 3 == 0) m.split.extra = {{{0, n - 1}, trial % 2 == 0, w(rng)}};
    if (trial % 4 == 2) {  // activations per tensor and gradients per edge
      for (size_t u = 0; u < m.split.succs.size(); ++u) {
        const std::vector<int>& succs = m.split.succs[u];
        m.back.emplace_back();
        m.activations.emplace_back();
        for (size_t k = 0; k < succs.size(); ++k) m.back.back().push_back(x(rng));
        if (succs.empty()) continue;
        m.activations.back().push_back({x(rng), succs});           // one read by every successor
        m.activations.back().push_back({x(rng), {succs.back()}});  // one by the last
      }
    }
    m.params.assign(static_cast<size_t>(n), 0);
    m.groups.resize(4);
    m.batch = trial % 5 == 0 ? 3 : 0;  // sometimes two replicas do not divide the batch
    const StageLoadOptimum opt = exhaustive_stage_load(m, 3);
    EXPECT_NEAR(opt.load, brute_force(m, 3), 1e-12) << "trial " << trial;
    EXPECT_NEAR(assignment_load(m, opt.stage_of, opt.replicas), opt.load, 1e-12);
  }
}

TEST(StageLoad, ExhaustiveOptimumIsAtMostEveryFastMethodsPlan) {
  LayeredRandomOptions o;
  o.n_ops = 8;
  o.width = 3;
  o.seed = 7;
  o.batch = 16;
  for (const bool overlap : {true, false}) {
    ProblemSetup s;
    s.graph = expand_training_step(make_layered_random(o));
    s.cluster = testing::one_host_cluster(
        4, 16ull << 30, LinkSpec{"pcie", 10e-6, 10e9, LinkSharing::kPerPair}, 0, overlap);
    s.cost = std::make_unique<CostModel>(s.cluster, uniform_profile(1.0));
    s.simulator = std::make_unique<Simulator>(s.graph, s.cluster, *s.cost);
    const Problem problem = s.problem();
    const StageLoadModel m = stage_load_model(problem);
    ASSERT_EQ(m.split.overlap, overlap);
    ASSERT_LE(m.split.size(), 10);
    const StageLoadOptimum opt = exhaustive_stage_load(m, 4);
    EXPECT_LE(opt.load, solve_ideal_split(m.split, 4).bottleneck * (1 + 1e-12));
    SearchBudget budget;
    budget.seed = 1;
    int scored = 0;
    for (const MethodInfo& info : placer_methods()) {
      if (!info.fast) continue;
      const MethodRun run = run_method(info.name, s, budget);
      if (!run.ok) continue;
      EXPECT_GE(plan_stage_load(m, s.graph, run.plan), opt.load * (1 - 1e-12))
          << info.name << " overlap " << overlap;
      ++scored;
    }
    EXPECT_GE(scored, 5);
  }
}

}  // namespace
}  // namespace placer
