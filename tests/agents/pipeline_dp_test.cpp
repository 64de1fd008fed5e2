// pipeline-dp: the DP's optimum equals brute force (every cut, every replication and
// host-alignment choice) on the same cost table, and its plan beats the even split in the
// simulator on a skewed chain.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "agents/classical/pipeline_dp.h"
#include "agents/staged_methods.h"
#include "datasets/synthetic.h"
#include "problem_fixture.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "simulator/steady_state.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"

namespace placer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// hosts x per_host GPUs of 10 TFLOP/s, 1 TB/s; intra-host 10 us + 10 GB/s, inter-host
/// 20 us + 1 GB/s.
Cluster make_cluster(int hosts, int per_host, uint64_t memory = 16ull << 30) {
  DeviceSpec s;
  s.model = "gpu10t";
  s.peak_flops[static_cast<int>(DType::kF32)] = 10e12;
  s.memory_bandwidth = 1e12;
  s.memory_bytes = memory;
  return testing::hosts_cluster(hosts, per_host, s,
                                LinkSpec{"pcie", 10e-6, 10e9, LinkSharing::kPerPair},
                                LinkSpec{"eth", 20e-6, 1e9, LinkSharing::kPerPair});
}

using Fixture = testing::ProblemFixture;

Graph chain_step(const std::vector<double>& flops, uint64_t act = 4 << 20,
                 uint64_t params = 8 << 20, int64_t batch = 64) {
  ChainOptions o;
  o.per_op_flops = flops;
  o.activation_bytes = act;
  o.param_bytes = params;
  o.batch = batch;
  return expand_training_step(make_chain(o));
}

/// Exhaustive search over the DP's space (no memoisation): from layer i with slots [0, d)
/// consumed, the next stage takes layers [i, j) on r slots starting at d, or at the next host
/// boundary after d when no host starts inside the skipped slots.
void brute(const PipelineCostTable& t, const PipelineDpOptions& o, int i, int d, int prev_last,
           double worst, std::vector<PipelineStageChoice>* cur, double* best) {
  if (i == t.num_layers) {
    *best = std::min(*best, worst);
    return;
  }
  std::vector<int> starts = {d};
  if (o.align_to_hosts && i > 0 && d < t.num_devices && !t.host_start[static_cast<size_t>(d)]) {
    for (int f = d + 1; f < t.num_devices; ++f) {
      if (t.host_start[static_cast<size_t>(f)]) {
        starts.push_back(f);
        break;
      }
    }
  }
  const int R = o.allow_replication ? t.num_devices : 1;
  for (int first : starts) {
    for (int r = 1; r <= R && first + r <= t.num_devices; ++r) {
      for (int j = i + 1; j <= t.num_layers; ++j) {
        if (t.fits && !t.fits(i, j, first, r)) continue;
        double w = std::max(worst, pipeline_stage_cost(t, i, j, first, r, prev_last));
        if (i > 0) w = std::max(w, t.boundary_time(i, prev_last, first, r));
        cur->push_back({i, j, first, r});
        brute(t, o, j, first + r, first + r - 1, w, cur, best);
        cur->pop_back();
      }
    }
  }
}

double brute_force(const PipelineCostTable& t, const PipelineDpOptions& o) {
  std::vector<PipelineStageChoice> cur;
  double best = kInf;
  brute(t, o, 0, 0, -1, 0, &cur, &best);
  return best;
}

/// A random table on hosts of `per_host` slots: stage time = 60 x layers / r plus noise
/// (so that pipelines of several stages win), random boundary times, 10% of stage
/// configurations not fitting. Integers, so every comparison is exact.
PipelineCostTable random_table(int layers, int devices, int per_host, uint32_t seed) {
  std::mt19937 rng(seed);
  const size_t n = static_cast<size_t>(layers + 1) * (layers + 1) * (devices + 1) * (devices + 1);
  auto stage = std::make_shared<std::vector<double>>(n);
  auto bound = std::make_shared<std::vector<double>>(n);
  auto fit = std::make_shared<std::vector<char>>(n);
  std::uniform_int_distribution<int> noise(0, 150), coin(0, 9);
  for (size_t k = 0; k < n; ++k) {
    (*stage)[k] = noise(rng);
    (*bound)[k] = noise(rng);
    (*fit)[k] = coin(rng) != 0;
  }
  const int L = layers, N = devices;
  auto idx = [L, N](int a, int b, int c, int d) {
    return ((static_cast<size_t>(a) * (L + 1) + b) * (N + 1) + c) * (N + 1) + d;
  };
  PipelineCostTable t;
  t.num_layers = L;
  t.num_devices = N;
  for (int d = 0; d < N; ++d) t.host_start.push_back(d % per_host == 0);
  t.stage_time = [=](int i, int j, int f, int r) {
    return (*stage)[idx(i, j, f, r)] + (60 * (j - i)) / r;
  };
  t.boundary_time = [=](int j, int p, int f, int r) { return (*bound)[idx(j, p + 1, f, r)]; };
  t.fits = [=](int i, int j, int f, int r) { return (*fit)[idx(i, j, f, r)] != 0; };
  return t;
}

/// Per-layer times 1, 1, 1, 3 on 2 slots of one host, every boundary `boundary`.
PipelineCostTable hand_chain(double boundary) {
  const std::vector<double> w = {1, 1, 1, 3};
  PipelineCostTable t;
  t.num_layers = 4;
  t.num_devices = 2;
  t.host_start = {1, 0};
  t.stage_time = [w](int i, int j, int, int) {
    double s = 0;
    for (int k = i; k < j; ++k) s += w[static_cast<size_t>(k)];
    return s;
  };
  t.boundary_time = [boundary](int, int, int, int) { return boundary; };
  return t;
}

TEST(PipelineDp, HandComputedChain) {
  // Per-layer times 1, 1, 1, 3 on 2 devices without replication: cut before the last layer.
  const PipelineCostTable t = hand_chain(0.5);
  PipelineDpOptions o;
  o.allow_replication = false;
  const PipelineDpSolution s = solve_pipeline_dp(t, o);
  ASSERT_EQ(s.stages.size(), 2u);
  EXPECT_EQ(s.bottleneck, 3.0);
  EXPECT_EQ(s.stages[0].begin, 0);
  EXPECT_EQ(s.stages[0].end, 3);
  EXPECT_EQ(s.stages[1].first, 1);
  EXPECT_EQ(pipeline_bottleneck(t, s.stages), 3.0);
}

TEST(PipelineDp, SkipsToHostBoundaryWhenItPays) {
  // Hosts {0, 1} and {2, 3}; a stage on slot 1 costs 100, elsewhere 10 per layer. Aligned:
  // stages on slots 0, 2, 3 (bottleneck 10); without alignment the best is one stage (30).
  PipelineCostTable t;
  t.num_layers = 3;
  t.num_devices = 4;
  t.host_start = {1, 0, 1, 0};
  t.stage_time = [](int i, int j, int f, int r) { return (f == 1 ? 100.0 : 10.0 * (j - i)) / r; };
  t.boundary_time = [](int, int, int, int) { return 0.0; };
  PipelineDpOptions o;
  o.allow_replication = false;
  const PipelineDpSolution a = solve_pipeline_dp(t, o);
  EXPECT_EQ(a.bottleneck, 10.0);
  ASSERT_EQ(a.stages.size(), 3u);
  EXPECT_EQ(a.stages[1].first, 2);
  EXPECT_EQ(a.stages[2].first, 3);
  EXPECT_EQ(brute_force(t, o), 10.0);
  o.align_to_hosts = false;
  EXPECT_EQ(solve_pipeline_dp(t, o).bottleneck, 30.0);
  EXPECT_EQ(brute_force(t, o), 30.0);
}

TEST(PipelineDp, TransfersAddToStagesOnDevicesWithoutCopyEngines) {
  // The chain above (1, 1, 1, 3) with boundaries of 3.5: overlapped, the cut before the
  // last layer costs max(3, 3.5, 3) = 3.5 < 6. Without copy engines each stage adds its
  // boundary (3 + 3.5 = 6.5), so one stage (6) wins.
  PipelineCostTable t = hand_chain(3.5);
  PipelineDpOptions o;
  o.allow_replication = false;
  PipelineDpSolution s = solve_pipeline_dp(t, o);
  EXPECT_EQ(s.bottleneck, 3.5);
  EXPECT_EQ(s.stages.size(), 2u);
  t.blocking = {1, 1};
  s = solve_pipeline_dp(t, o);
  EXPECT_EQ(s.bottleneck, 6.0);
  EXPECT_EQ(s.stages.size(), 1u);
  // Boundaries of 2: the cut before the last layer, 3 + 2 on both sides.
  t = hand_chain(2.0);
  t.blocking = {1, 1};
  s = solve_pipeline_dp(t, o);
  EXPECT_EQ(s.bottleneck, 5.0);
  ASSERT_EQ(s.stages.size(), 2u);
  EXPECT_EQ(s.stages[0].end, 3);
  EXPECT_EQ(pipeline_bottleneck(t, s.stages), 5.0);
}

TEST(PipelineDp, EqualsBruteForceOnRandomTables) {
  for (uint32_t seed = 1; seed <= 120; ++seed) {
    const int layers = 1 + static_cast<int>(seed % 7);
    const int devices = 1 + static_cast<int>(seed % 5);
    const int per_host = 1 + static_cast<int>((seed / 5) % 3);
    const PipelineCostTable t = random_table(layers, devices, per_host, seed);
    for (int variant = 0; variant < 4; ++variant) {
      PipelineDpOptions o;
      o.allow_replication = variant != 0;
      o.align_to_hosts = variant >= 2;
      PipelineCostTable tv = t;
      if (variant == 3) {  // every other slot without copy engines
        for (int d = 0; d < devices; ++d) tv.blocking.push_back(static_cast<char>(d % 2 == 0));
      }
      const PipelineDpSolution s = solve_pipeline_dp(tv, o);
      const double bf = brute_force(tv, o);
      SCOPED_TRACE("seed " + std::to_string(seed) + " variant " + std::to_string(variant));
      EXPECT_EQ(s.bottleneck, bf);
      if (s.feasible()) {
        EXPECT_EQ(pipeline_bottleneck(tv, s.stages), bf);
      }
    }
  }
}

TEST(PipelineDp, EqualsEveryCutOnRealChain) {
  // 8 skewed layers, 4 devices in one host: enumerate every cut into s <= 4 stages on
  // devices 0..s-1 with the cost table of the real problem.
  Fixture f(chain_step({1e9, 2e9, 1e9, 6e9, 1e9, 1e9, 3e9, 1e9}), make_cluster(1, 4));
  Problem p = f.problem();
  PipelinePlacerOptions po;
  const LayerChain chain = build_layer_chain(f.g, po.max_units);
  ASSERT_EQ(chain.units.size(), 8u);
  const PipelineCostTable t = make_pipeline_cost_table(p, chain, {0, 1, 2, 3}, po);
  PipelineDpOptions o;
  o.allow_replication = false;
  const PipelineDpSolution s = solve_pipeline_dp(t, o);
  double best = kInf;
  for (uint32_t mask = 0; mask < (1u << 7); ++mask) {  // bit k: cut after layer k
    std::vector<PipelineStageChoice> st;
    int begin = 0;
    for (int k = 0; k < 8; ++k) {
      if (k == 7 || (mask >> k & 1u)) {
        st.push_back({begin, k + 1, static_cast<int>(st.size()), 1});
        begin = k + 1;
      }
    }
    if (st.size() > 4) continue;
    best = std::min(best, pipeline_bottleneck(t, st));
  }
  EXPECT_EQ(s.bottleneck, best);
  EXPECT_GT(s.stages.size(), 1u);

  // With replication (5 layers, every replica vector with sum <= 4 devices).
  Fixture f2(chain_step({1e9, 4e9, 1e9, 1e9, 2e9}), make_cluster(1, 4));
  Problem p2 = f2.problem();
  const LayerChain c2 = build_layer_chain(f2.g, po.max_units);
  const PipelineCostTable t2 = make_pipeline_cost_table(p2, c2, {0, 1, 2, 3}, po);
  const PipelineDpSolution s2 = solve_pipeline_dp(t2, PipelineDpOptions{});
  double best2 = kInf;
  for (uint32_t mask = 0; mask < (1u << 4); ++mask) {
    std::vector<std::pair<int, int>> cuts;
    int begin = 0;
    for (int k = 0; k < 5; ++k) {
      if (k == 4 || (mask >> k & 1u)) {
        cuts.push_back({begin, k + 1});
        begin = k + 1;
      }
    }
    const size_t ns = cuts.size();
    std::vector<int> r(ns, 1);
    for (;;) {  // odometer over replica counts 1..4
      int sum = 0;
      for (int x : r) sum += x;
      if (sum <= 4) {
        std::vector<PipelineStageChoice> st;
        int first = 0;
        for (size_t k = 0; k < ns; ++k) {
          st.push_back({cuts[k].first, cuts[k].second, first, r[k]});
          first += r[k];
        }
        best2 = std::min(best2, pipeline_bottleneck(t2, st));
      }
      size_t k = 0;
      while (k < ns && ++r[k] > 4) r[k++] = 1;
      if (k == ns) break;
    }
  }
  EXPECT_EQ(s2.bottleneck, best2);
}

TEST(PipelineDp, BeatsEvenSplitInSimulator) {
  // Skewed chain: the heavy layers 3 and 6 make the even 2-layer split unbalanced.
  Fixture f(chain_step({1e9, 1e9, 1e9, 8e9, 1e9, 1e9, 6e9, 1e9}), make_cluster(1, 4));
  Problem p = f.problem();
  PipelineDpSolution sol;
  const Plan plan = pipeline_dp_plan(p, {}, &sol);
  ASSERT_NO_THROW(plan.validate(f.g, f.c));
  ASSERT_TRUE(plan.predicted.valid);
  EXPECT_FALSE(plan.predicted.oom);
  EXPECT_EQ(plan.method, "pipeline-dp");

  Plan even = plan;
  even.pipeline.stages.clear();
  for (int s = 0; s < 4; ++s) {
    PipelineStage st;
    st.ops = {static_cast<OpId>(f.g.find_op("chain." + std::to_string(2 * s))),
              static_cast<OpId>(f.g.find_op("chain." + std::to_string(2 * s + 1)))};
    st.devices = {s};
    even.pipeline.stages.push_back(st);
  }
  // Input nodes ("x") are forward ops too: they join stage 0.
  for (OpId o = 0; o < f.g.num_ops(); ++o) {
    const Op& op = f.g.op(o);
    if (op.phase == Phase::kForward && op.name.rfind("chain.", 0) != 0) {
      even.pipeline.stages[0].ops.push_back(o);
    }
  }
  even.pipeline.micro_batches = 16;
  ASSERT_NO_THROW(even.validate(f.g, f.c));
  const double t_even = f.sim.run(even).step_time;
  const double t_dp = f.sim.run(plan).step_time;
  EXPECT_EQ(t_dp, plan.predicted.step_time);
  EXPECT_LT(t_dp, t_even);
}

TEST(PipelineDp, PrimeBatchTriesMicroBatchesAboveItsOnlyDivisors) {
  // Batch 19 on two equal stages: 4, 2 and 8 x 2 all round down to 1 micro-batch, which runs
  // the stages in turn; 19 (the smallest divisor >= 8) overlaps them and is chosen.
  Fixture f(chain_step({4e9, 4e9}, 4 << 20, 8 << 20, 19), make_cluster(1, 2));
  Problem p = f.problem();
  Plan plan;
  plan.placement.assign(static_cast<size_t>(f.g.num_ops()), 0);
  plan.pipeline.stages.resize(2);
  plan.pipeline.stages[0].devices = {0};
  plan.pipeline.stages[1].devices = {1};
  for (OpId o = 0; o < f.g.num_ops(); ++o) {
    const Op& op = f.g.op(o);
    if (op.phase != Phase::kForward) continue;
    plan.pipeline.stages[op.name == "chain.1" ? 1 : 0].ops.push_back(o);
  }
  Plan one = plan;
  one.pipeline.micro_batches = 1;
  const double t_one = f.sim.run(one).step_time;
  const SimResult chosen = choose_micro_batches(p, &plan, 19, 0);
  EXPECT_EQ(plan.pipeline.micro_batches, 19);
  EXPECT_LT(chosen.step_time, t_one);
  // A batch of 20 keeps the rounded counts (8 -> 5, 4, 16 -> 10): 19 is no candidate there.
  Fixture g(chain_step({4e9, 4e9}, 4 << 20, 8 << 20, 20), make_cluster(1, 2));
  Problem q = g.problem();
  choose_micro_batches(q, &one, 20, 0);
  EXPECT_NE(one.pipeline.micro_batches, 19);
}

TEST(PipelineDp, StagesOnHostBoundaries) {
  // 2 hosts x 2 devices, slow network: a 2-way replicated stage stays inside one host.
  Fixture f(chain_step({2e9, 2e9, 2e9, 2e9}, 1 << 20, 64 << 20), make_cluster(2, 2));
  Problem p = f.problem();
  PipelineDpSolution sol;
  const Plan plan = pipeline_dp_plan(p, {}, &sol);
  for (const PipelineStage& st : plan.pipeline.stages) {
    for (int d : st.devices) EXPECT_EQ(f.c.device(d).host, f.c.device(st.devices[0]).host);
  }
}

TEST(PipelineDp, MemoryForcesOneLayerPerStage) {
  // 2 GiB of parameters per layer: with gradients and Adam state 8 GiB resident, so two
  // layers (16 GiB + activations) exceed a 16 GiB device; replicas would not help.
  const uint64_t gib = 1ull << 30;
  Fixture f(chain_step({1e9, 1e9, 1e9, 1e9}, 1 << 20, 2 * gib), make_cluster(1, 4));
  Problem p = f.problem();
  PipelineDpSolution sol;
  const Plan plan = pipeline_dp_plan(p, {}, &sol);
  ASSERT_EQ(plan.pipeline.stages.size(), 4u);
  for (size_t s = 0; s < 4; ++s) {
    EXPECT_EQ(sol.stages[s].end - sol.stages[s].begin, 1);
    EXPECT_EQ(sol.stages[s].replicas, 1);
  }
  EXPECT_FALSE(plan.predicted.oom);
  // The same chain on 3 devices fits nowhere.
  Fixture f3(chain_step({1e9, 1e9, 1e9, 1e9}, 1 << 20, 2 * gib), make_cluster(1, 3));
  Problem p3 = f3.problem();
  EXPECT_THROW(pipeline_dp_plan(p3), Error);
}

TEST(PipelineDp, ReplicasSplitMicroBatchesEvenly) {
  // Compute-heavy layers with small parameters make wide replication pay, so the
  // unconstrained DP picks replica counts like 3 that leave fractional samples per replica
  // (64 / 3, or 1/2/3/2 GPUs with 2 micro-batches). The placer must only use r dividing
  // the per-micro-batch batch B / m, with m dividing B.
  struct Case {
    std::vector<double> flops;
    int hosts, per_host;
    int64_t batch;
    int micro_batches;  // 0 = the placer's choice
  };
  const std::vector<Case> cases = {
      {{1e11}, 1, 3, 64, 0},
      {{1e11, 1e11}, 1, 3, 64, 0},
      {{1e11, 1e11, 1e11}, 1, 6, 24, 0},
      {{1e11, 2e11, 3e11, 2e11}, 1, 8, 64, 2},
      {{1e11, 2e11, 3e11, 2e11}, 1, 8, 48, 0},
      {{1e11, 2e11, 3e11, 2e11}, 1, 8, 48, 3},
      {{1e11, 1e11, 3e11}, 2, 3, 36, 0},
      {{3e11, 1e11, 1e11, 1e11, 2e11}, 1, 7, 60, 4},
  };
  int uneven_before = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    SCOPED_TRACE("case " + std::to_string(k));
    Fixture f(chain_step(c.flops, 1 << 20, 1 << 20, c.batch), make_cluster(c.hosts, c.per_host));
    Problem p = f.problem();
    PipelinePlacerOptions po;
    po.micro_batches = c.micro_batches;
    // What the DP alone (no divisibility constraint) would choose.
    const LayerChain chain = build_layer_chain(f.g, po.max_units);
    std::vector<int> devs(static_cast<size_t>(f.c.num_devices()));
    for (size_t d = 0; d < devs.size(); ++d) devs[d] = static_cast<int>(d);
    const PipelineCostTable t = make_pipeline_cost_table(p, chain, devs, po);
    const PipelineDpSolution free_sol = solve_pipeline_dp(t, po.dp);
    ASSERT_TRUE(free_sol.feasible());
    const int64_t b_free = c.batch / (c.micro_batches > 0 ? c.micro_batches : 1);
    for (const PipelineStageChoice& st : free_sol.stages) {
      if (b_free % st.replicas != 0) {
        ++uneven_before;
        break;
      }
    }

    PipelineDpSolution sol;
    const Plan plan = pipeline_dp_plan(p, po, &sol);
    ASSERT_NO_THROW(plan.validate(f.g, f.c));
    const int m = plan.pipeline.micro_batches;
    if (c.micro_batches > 0) {
      EXPECT_EQ(m, c.micro_batches);
    }
    ASSERT_EQ(c.batch % m, 0) << "m = " << m;
    const int64_t per_micro_batch = c.batch / m;
    ASSERT_FALSE(plan.pipeline.stages.empty());
    for (const PipelineStage& st : plan.pipeline.stages) {
      EXPECT_EQ(per_micro_batch % static_cast<int64_t>(st.devices.size()), 0)
          << st.devices.size() << " replicas, " << per_micro_batch << " samples per micro-batch";
    }
    // Deterministic: the same problem gives the same plan.
    const Plan again = pipeline_dp_plan(p, po);
    ASSERT_EQ(again.pipeline.stages.size(), plan.pipeline.stages.size());
    for (size_t s = 0; s < plan.pipeline.stages.size(); ++s) {
      EXPECT_EQ(again.pipeline.stages[s].devices, plan.pipeline.stages[s].devices);
    }
    EXPECT_EQ(again.pipeline.micro_batches, m);
  }
  // The cases do exercise the constraint: without it some would split unevenly.
  EXPECT_GT(uneven_before, 0);
}

TEST(PipelineDp, ClearErrorWhenNothingFits) {
  Fixture f(chain_step({1e9, 1e9}, 1 << 20, 64 << 20), make_cluster(1, 2, 1 << 20));
  Problem p = f.problem();
  EXPECT_THROW(pipeline_dp_plan(p), Error);
}

TEST(PipelineDp, ReplicaCountsUnderTheBudget) {
  PipelineDpOptions o;
  o.replicas_divide = 24;
  EXPECT_EQ(pipeline_replica_counts(16, o), (std::vector<int>{1, 2, 3, 4, 6, 8, 12}));
  o.power_of_two_replicas = true;
  EXPECT_EQ(pipeline_replica_counts(16, o), (std::vector<int>{1, 2, 4, 8}));
  o.allow_replication = false;
  EXPECT_EQ(pipeline_replica_counts(16, o), (std::vector<int>{1}));
}

// The default budget: 1024 devices (128 hosts x 8) searched in seconds (unbounded: 137 s),
// by powers of two for the replica counts and a shorter chain.
TEST(PipelineDp, DefaultBudgetBoundsALargeCluster) {
  std::vector<double> flops(48, 1e9);
  Fixture f(chain_step(flops, 1 << 20, 1 << 20, /*batch=*/1024), make_cluster(128, 8));
  const auto start = std::chrono::steady_clock::now();
  PipelineDpSolution sol;
  const Plan plan = pipeline_dp_plan(f.problem(), {}, &sol);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(sol.feasible());
  EXPECT_FALSE(plan.pipeline.stages.empty());
  for (const PipelineStageChoice& c : sol.stages) {
    EXPECT_EQ(c.replicas & (c.replicas - 1), 0) << c.replicas;
  }
  EXPECT_LT(seconds, 20.0);
}

/// One group per op: the group of its chain unit, given per unit.
std::vector<int> groups_by_unit(const Graph& g, const LayerChain& chain, const std::vector<int>& per_unit) {
  std::vector<int> group(g.num_ops());
  for (OpId o = 0; o < g.num_ops(); ++o) group[o] = per_unit[static_cast<size_t>(chain.unit_of[o])];
  return group;
}

/// cuts_from_groups on a chain of one layer per FLOP count, each unit labelled per_unit.
std::vector<int> chain_cuts(const std::vector<double>& flops, const std::vector<int>& per_unit) {
  const Graph g = chain_step(flops);
  const LayerChain chain = build_layer_chain(g, 64);
  EXPECT_EQ(chain.units.size(), flops.size());
  return cuts_from_groups(g, chain, groups_by_unit(g, chain, per_unit));
}

TEST(PipelineDpCutGroups, ContiguousGroupsGiveTheirBoundaries) {
  const std::vector<double> even(8, 1e9);
  // Labels are arbitrary ids (devices); their order along the chain sets the stage order.
  EXPECT_EQ(chain_cuts(even, {5, 5, 5, 2, 2, 2, 7, 7}), (std::vector<int>{0, 3, 6, 8}));
  EXPECT_EQ(chain_cuts(even, {4, 4, 4, 4, 4, 4, 4, 4}), (std::vector<int>{0, 8}));
}

TEST(PipelineDpCutGroups, StrayUnitsJoinTheStageThatKeepsMoreWork) {
  // Units labelled A A B A B B C C, unit 3 six times heavier: groups ordered A (mean unit
  // (0 + 1 + 18) / 8), B (11 / 3), C (6.5). Keeping unit 3 in A costs unit 2 (1 GFLOP);
  // keeping unit 2 in B would cost unit 3 (6 GFLOP). So A = units 0-3, B = 4-5, C = 6-7.
  EXPECT_EQ(chain_cuts({1e9, 1e9, 1e9, 6e9, 1e9, 1e9, 1e9, 1e9}, {0, 0, 1, 0, 1, 1, 2, 2}),
            (std::vector<int>{0, 4, 6, 8}));
}

TEST(PipelineDpCutGroups, PlanCutsOnlyWhereTheGroupsChange) {
  Fixture f(chain_step({1e9, 4e9, 1e9, 1e9, 2e9, 1e9}), make_cluster(1, 4));
  const Problem p = f.problem();
  const LayerChain chain = build_layer_chain(f.g, 64);
  ASSERT_EQ(chain.units.size(), 6u);
  PipelineDpSolution free_sol, unit_sol, one_sol, proposed_sol;
  const Plan free_plan = pipeline_dp_plan(p, {}, &free_sol);

  // Every unit its own group: every cut allowed, so the same plan as the free DP.
  PipelinePlacerOptions every;
  every.cut_groups = groups_by_unit(f.g, chain, {0, 1, 2, 3, 4, 5});
  const Plan unit_plan = pipeline_dp_plan(p, every, &unit_sol);
  EXPECT_EQ(unit_sol.bottleneck, free_sol.bottleneck);
  EXPECT_EQ(unit_plan.predicted.step_time, free_plan.predicted.step_time);

  // One group: no cut, so one stage, replicated as the table says pays (here not at all:
  // the 48 MiB gradient all-reduce over 10 GB/s costs more than the compute it splits).
  const PipelineCostTable t = make_pipeline_cost_table(p, chain, {0, 1, 2, 3}, PipelinePlacerOptions{});
  PipelinePlacerOptions one;
  one.cut_groups.assign(size_t(f.g.num_ops()), 3);
  pipeline_dp_plan(p, one, &one_sol);
  ASSERT_EQ(one_sol.stages.size(), 1u);
  double best_one = kInf;
  for (int r : {1, 2, 4}) best_one = std::min(best_one, pipeline_bottleneck(t, {{0, 6, 0, r}}));
  EXPECT_EQ(one_sol.bottleneck, best_one);

  // Groups {0, 1}, {2, 3, 4, 5}: stages only at 0, 2, 6; the bottleneck is the best of
  // the two configurations that use only those cuts, computed by hand from the table.
  PipelinePlacerOptions proposed;
  proposed.cut_groups = groups_by_unit(f.g, chain, {9, 9, 1, 1, 1, 1});
  pipeline_dp_plan(p, proposed, &proposed_sol);
  for (const PipelineStageChoice& s : proposed_sol.stages) {
    EXPECT_TRUE(s.begin == 0 || s.begin == 2) << s.begin;
    EXPECT_TRUE(s.end == 2 || s.end == 6) << s.end;
  }
  double best = kInf;
  for (int r = 1; r <= 4; ++r) {
    if (64 % r == 0) best = std::min(best, pipeline_bottleneck(t, {{0, 6, 0, r}}));
    for (int r2 = 1; r + r2 <= 4; ++r2) {
      if (64 % r != 0 || 64 % r2 != 0) continue;
      best = std::min(best, pipeline_bottleneck(t, {{0, 2, 0, r}, {2, 6, r, r2}}));
    }
  }
  EXPECT_EQ(proposed_sol.bottleneck, best);
  EXPECT_GE(proposed_sol.bottleneck, free_sol.bottleneck);
}

TEST(PipelineDpCutGroups, OneGroupRunsAsDataParallelismWithTheFasterMicroBatchCount) {
  // Heavy compute, small weights: one stage replicated on all four devices wins, and with
  // one stage, micro-batches only multiply the kernels the host launches (2 ms each here,
  // longer than the kernels: host-bound).
  const Graph g = chain_step({8e9, 8e9, 8e9, 8e9}, 4 << 20, 1 << 20);
  const Cluster c = make_cluster(1, 4);
  CostProfile profile = uniform_profile(1.0);
  profile.launch_overhead = 2e-3;
  const CostModel cost(c, profile);
  Simulator sim(g, c, cost);
  const Problem p{g, c, cost, sim, {}};
  const Plan placement = placement_plan(p, std::vector<int>(g.num_ops(), 2), "gdp");
  const Plan plan = placement_as_pipeline(p, placement);
  ASSERT_EQ(plan.pipeline.stages.size(), 1u);
  EXPECT_EQ(plan.pipeline.stages[0].devices, (std::vector<int>{0, 1, 2, 3}));
  // What pipeline-dp alone would run (M from 2, 4, 8) and the same stage with M = 1.
  PipelinePlacerOptions o;
  o.cut_groups = placement.placement;
  const Plan dp = pipeline_dp_plan(p, o);
  Plan one = dp;
  one.pipeline.micro_batches = 1;
  const double t_one = sim.run(one).step_time;
  EXPECT_GT(dp.pipeline.micro_batches, 1);
  EXPECT_LT(t_one, dp.predicted.step_time);
  EXPECT_EQ(plan.pipeline.micro_batches, 1);
  EXPECT_EQ(plan.predicted.step_time, t_one);
}

TEST(PipelineDp, SteadyStateReplicatesTheHeavyStageWhenItsAllReduceOverlaps) {
  // Layers of 1, 4 and 1 GFLOP forward (x3 with the backward: 0.3, 1.2 and 0.3 ms at
  // 10 TFLOP/s), 8 MiB of parameters each, 256 KiB activations, on four devices of one host
  // (10 us + 10 GB/s links). Two replicas of the middle layer compute 0.6 ms each and
  // all-reduce 8 MiB in 2 x 1/2 x 8.39 MB / 10 GB/s + 2 x 10 us = 0.859 ms.
  Fixture f(chain_step({1e9, 4e9, 1e9}, 256 << 10, 8 << 20), make_cluster(1, 4));
  const Problem p = f.problem();
  PipelinePlacerOptions step, steady;
  steady.objective = Objective::kThroughput;
  const LayerChain chain = build_layer_chain(f.g, step.max_units);
  ASSERT_EQ(chain.units.size(), 3u);
  const PipelineCostTable t_step = make_pipeline_cost_table(p, chain, {0, 1, 2, 3}, step);
  const PipelineCostTable t_steady = make_pipeline_cost_table(p, chain, {0, 1, 2, 3}, steady);
  const double ar = f.cost.group_collective_time(
      CollectiveKind::kAllReduce, f.cost.make_group({1, 2}), 8 << 20, SyncScheme::kAuto);
  EXPECT_NEAR(ar, 2 * 0.5 * (8 << 20) / 10e9 + 2 * 10e-6, 1e-6);
  const double c1 = t_step.stage_time(1, 2, 1, 1);  // the middle layer on one device
  EXPECT_NEAR(c1, 1.2e-3, 0.1e-3);
  // Step costs add the all-reduce to the compute share (0.6 ms, and its optimizer step,
  // which each replica runs whole): more than 1.2 ms, so the step DP keeps one device per
  // layer.
  const double share = t_step.stage_time(1, 2, 1, 2) - ar;
  EXPECT_NEAR(share, c1 / 2, 0.05e-3);
  EXPECT_GT(share + ar, c1);
  // Steady-state costs: the longer of the compute share and the communication, the
  // all-reduce plus the replica's half of the boundaries in (from slot 0) and out (to
  // slot 3), activations and their gradients.
  const double comm = ar + t_step.boundary_time(1, 0, 1, 2) + t_step.boundary_time(2, 1, 3, 2);
  EXPECT_NEAR(t_steady.stage_time(1, 2, 1, 2), std::max(share, comm), 1e-12);
  EXPECT_LT(comm, c1);
  // So the steady-state DP replicates the middle layer over two devices (1 + 2 + 1), the
  // known optimum of that table, and the step DP does not.
  const PipelineDpSolution s_step = solve_pipeline_dp(t_step);
  const PipelineDpSolution s_steady = solve_pipeline_dp(t_steady);
  ASSERT_EQ(s_steady.stages.size(), 3u);
  EXPECT_EQ(s_steady.stages[1].replicas, 2);
  EXPECT_EQ(s_steady.stages[0].replicas + s_steady.stages[2].replicas, 2);
  EXPECT_NEAR(s_steady.bottleneck, comm, 1e-12);
  for (const PipelineStageChoice& s : s_step.stages) EXPECT_EQ(s.replicas, 1);
  // The simulator agrees: the replicated plan streams faster (steady state) than the step
  // DP's plan, each with one micro-batch.
  auto streamed = [&p](PipelinePlacerOptions o) {
    o.micro_batches = 1;
    const Plan plan = pipeline_dp_plan(p, o);
    return steady_state_time(p.simulator.run(plan), p.cluster);
  };
  EXPECT_LT(streamed(steady), streamed(step));
}

}  // namespace
}  // namespace placer
