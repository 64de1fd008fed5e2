// Pipeline arrays (Auto-MAP 4.5.1): raw arrays of a hand-built chain, the prefix-sum /
// coarsening / one-MAX transform on hand examples, pivot snapping, host-aligned stage
// devices, the analytic 1F1B length on hand-computed cases, generator determinism and the
// array MDP's masks and rewards.
#include "env/pipeline_arrays.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "env/pipeline_env.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "src/util/error.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;
using testing::TestGraph;

// Six ops: 1, 2, 3, 4, 5, 5 ms; 1000 parameter bytes each; op i writes (i + 1) MB.
Graph six() {
  TestGraph b("six");
  const std::vector<double> flops{1e9, 2e9, 3e9, 4e9, 5e9, 5e9};
  TensorId in = b.tensor("x", 1000);
  for (size_t i = 0; i < flops.size(); ++i) {
    const TensorId out = b.tensor("t" + std::to_string(i), (i + 1) * 1000000);
    const OpId o = b.op("op" + std::to_string(i), flops[i], {in}, {out});
    b.at(o).scope = "block." + std::to_string(i);
    b.at(o).param_bytes = 1000;
    in = out;
  }
  return b.build();
}

TEST(PipelineArraysTest, RawArraysOfAChain) {
  const Graph g = six();
  const Cluster cluster = make_cluster(1, 3, link(0, 1e9), link(0, 1e9));
  const CostModel cost(cluster, uniform_profile(1.0));
  PipelineEnvOptions o;
  o.stages = 3;
  PipelineEnv env(g, cluster, cost, o);
  const PositionArrays a = graph_position_arrays(g, cost, env.position_of_op(), 6, 0);
  const std::vector<double> c{1e-3, 2e-3, 3e-3, 4e-3, 5e-3, 5e-3};
  ASSERT_EQ(a.compute.size(), 6u);
  double total = 0;
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(a.compute[i], c[i], 1e-12) << i;
    total += a.compute[i];
    EXPECT_EQ(a.params[i], 1000.0);  // no gradient tensors: the forward param bytes
    // A cut at i separates op i-1's output (i MB) from its consumer op i.
    EXPECT_EQ(a.activation[i], i * 1e6) << i;
  }
  EXPECT_NEAR(total, env.compute_between(0, 6), 1e-12);
  EXPECT_THROW(graph_position_arrays(g, cost, {0, 1}, 6, 0), ValidationError);
}

TEST(PipelineArraysTest, TransformOfAHandExample) {
  // F = 256: point j ends at boundary 2 (j + 1). C = 1, W = 0.5, A[i] = i per position:
  // C' = 2 (j + 1), W' = j + 1, A' = 2 (j + 1) (0 at the end); MAX = C'[127] = 256.
  PositionArrays raw;
  for (int i = 0; i < 256; ++i) {
    raw.compute.push_back(1);
    raw.params.push_back(0.5);
    raw.activation.push_back(i);
  }
  const CoarseArrays c = coarsen_arrays(raw);
  ASSERT_EQ(c.C.size(), 128u);
  EXPECT_EQ(c.scale, 256.0);
  EXPECT_EQ(c.positions, 256);
  for (int j = 0; j < 128; ++j) {
    EXPECT_EQ(c.boundary[static_cast<size_t>(j)], 2 * (j + 1)) << j;
    EXPECT_EQ(c.C[static_cast<size_t>(j)], (j + 1) / 128.0f) << j;
    EXPECT_EQ(c.W[static_cast<size_t>(j)], (j + 1) / 256.0f) << j;
    EXPECT_EQ(c.A[static_cast<size_t>(j)], j < 127 ? (j + 1) / 128.0f : 0.0f) << j;
    EXPECT_EQ(c.allowed[static_cast<size_t>(j)], j < 127 ? 1 : 0) << j;
  }
}

TEST(PipelineArraysTest, OneMaxAcrossTheThreeArrays) {
  // F = 2, C = [1, 1], A = [0, 5]: boundary 1 from point 31 (round(32 x 2 / 128) = 1) to
  // 94, 2 from 95. MAX = A at boundary 1 = 5, so C' = 1/5 there and the end is 2/5.
  PositionArrays raw{{1, 1}, {0, 5}, {0, 0}};
  const CoarseArrays c = coarsen_arrays(raw);
  EXPECT_EQ(c.scale, 5.0);
  EXPECT_EQ(c.boundary[30], 0);
  EXPECT_EQ(c.boundary[31], 1);
  EXPECT_EQ(c.boundary[94], 1);
  EXPECT_EQ(c.boundary[95], 2);
  EXPECT_EQ(c.A[31], 1.0f);
  EXPECT_EQ(c.C[31], 0.2f);
  EXPECT_EQ(c.C[127], 0.4f);
  EXPECT_EQ(c.C[0], 0.0f);
  int allowed = 0;
  for (uint8_t a : c.allowed) allowed += a;
  EXPECT_EQ(allowed, 1);  // only point 31 (boundary 1); boundary 0 and F are no cuts
  EXPECT_EQ(c.allowed[31], 1);
}

TEST(PipelineArraysTest, CoarseningPicksAndSnapping) {
  PositionArrays raw;
  for (int i = 0; i < 10; ++i) {
    raw.compute.push_back(i + 1);
    raw.activation.push_back(0);
    raw.params.push_back(0);
  }
  const CoarseArrays c = coarsen_arrays(raw);
  // b_j = round((j + 1) 10 / 128): 0 for j <= 5, 1 for j = 6 .. 18, ...
  EXPECT_EQ(c.boundary[5], 0);
  EXPECT_EQ(c.boundary[6], 1);
  EXPECT_EQ(c.boundary[18], 1);
  EXPECT_EQ(c.boundary[19], 2);
  EXPECT_EQ(c.boundary[127], 10);
  int allowed = 0;
  for (uint8_t a : c.allowed) allowed += a;
  EXPECT_EQ(allowed, 9);  // boundaries 1 .. 9, each once
  EXPECT_EQ(c.C[6], 1.0f / 55.0f);
  // Snapped to {3, 7}: boundaries <= 5 go to 3 (tie at 5: the lower), >= 6 to 7.
  const CoarseArrays s = coarsen_arrays(raw, {3, 7});
  EXPECT_EQ(s.boundary[0], 3);
  EXPECT_EQ(s.boundary[63], 3);  // round(640 / 128) = 5: a tie between 3 and 7 -> 3
  EXPECT_EQ(s.boundary[70], 7);  // round(710 / 128) = 6
  EXPECT_EQ(s.boundary[126], 7);
  EXPECT_EQ(s.boundary[127], 10);
  allowed = 0;
  for (uint8_t a : s.allowed) allowed += a;
  EXPECT_EQ(allowed, 2);
  EXPECT_EQ(s.C[0], 6.0f / 55.0f);
  EXPECT_THROW(coarsen_arrays(raw, {7, 3}), ValidationError);
  EXPECT_THROW(coarsen_arrays(PositionArrays{{1}, {0, 0}, {1}}), ValidationError);
  EXPECT_THROW(coarsen_arrays(PositionArrays{{-1}, {0}, {1}}), ValidationError);
}

TEST(PipelineArraysTest, HostAlignedStageDevices) {
  const std::vector<int> four_hosts{0, 0, 1, 1, 2, 2, 3, 3};
  EXPECT_EQ(stage_device_counts(four_hosts, 2), (std::vector<int>{4, 4}));
  EXPECT_EQ(stage_device_counts(four_hosts, 3), (std::vector<int>{4, 2, 2}));
  EXPECT_EQ(stage_device_counts(four_hosts, 5), (std::vector<int>{2, 2, 2, 1, 1}));
  EXPECT_EQ(stage_device_counts({0, 0, 0, 1}, 2), (std::vector<int>{2, 2}));
  EXPECT_THROW(stage_device_counts({0, 0}, 3), ValidationError);
}

// C' = (j + 1) / 128 (uniform compute), A' = 0.1 everywhere, W' = w (j + 1) / 128.
ArrayProblem linear_problem(std::vector<int> hosts, double inter, std::vector<int> stages,
                            int m, double w) {
  ArrayProblem p;
  for (int j = 0; j < 128; ++j) {
    p.arrays.C.push_back((j + 1) / 128.0f);
    p.arrays.A.push_back(0.1f);
    p.arrays.W.push_back(static_cast<float>(w * (j + 1) / 128.0));
    p.arrays.boundary.push_back(j + 1);
    p.arrays.allowed.push_back(j < 127);
  }
  const size_t n = hosts.size();
  p.topology.host = hosts;
  p.topology.bandwidth.assign(n * n, 1.0);
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      if (hosts[a] != hosts[b]) p.topology.bandwidth[a * n + b] = inter;
    }
  }
  p.stage_devices = std::move(stages);
  p.micro_batches = m;
  return p;
}

TEST(PipelineArraysTest, AnalyticLengthByHand) {
  // Two stages of one device, link 0.5, m = 2, cut at 63: t = 0.5 / 2 = 0.25 per stage,
  // x = 2 x 0.1 / (1 x 2 x 0.5) = 0.2; L = 0.25 + 0.25 + 0.2 + 1 x 0.25 = 0.95.
  const ArrayProblem p = linear_problem({0, 1}, 0.5, {1, 1}, 2, 0.0);
  EXPECT_NEAR(pipeline_length(p, {63}), 0.95, 1e-6);
  // Cut at 31: t = 0.125 / 0.375, x = 0.2: L = 0.125 + 0.375 + 0.2 + 0.375 = 1.075.
  EXPECT_NEAR(pipeline_length(p, {31}), 1.075, 1e-6);
  EXPECT_EQ(balanced_cuts(p), (std::vector<int>{63}));
  // Two hosts of two devices (intra 1, inter 0.25), stages {2, 2}, m = 4, W' = 0.5 (j+1)/128:
  // t = 0.5 / 8 = 0.0625, x = 2 x 0.1 / (2 x 4 x 0.25) = 0.1, all-reduce r = 2 x 1/2 x 0.25
  // / 1 = 0.25; L = 2 x 0.0625 + 0.1 + 3 x 0.1 + 0.25 = 0.775.
  const ArrayProblem q = linear_problem({0, 0, 1, 1}, 0.25, {2, 2}, 4, 0.5);
  EXPECT_NEAR(pipeline_length(q, {63}), 0.775, 1e-6);
  EXPECT_THROW(pipeline_length(q, {}), ValidationError);
  EXPECT_THROW(pipeline_length(q, {127}), ValidationError);
  // Three stages: balanced cuts at C' = 1/3, 2/3 -> points 42 (43/128) and 84 (85/128).
  const ArrayProblem r = linear_problem({0, 1, 2}, 1.0, {1, 1, 1}, 3, 0.0);
  EXPECT_EQ(balanced_cuts(r), (std::vector<int>{42, 84}));
  EXPECT_THROW(pipeline_length(r, {50, 40}), ValidationError);
}

TEST(PipelineArraysTest, WithoutOverlapTheMiddleStageCarriesBothCuts) {
  // Three stages of one device, links 1, m = 3, A' = 0.1: x = 2 x 0.1 / 3 = 1/15 per cut.
  // Cuts {42, 84}: t = 43/384, 42/384, 43/384; L = 1/3 + 2/15 + 2 x bottleneck.
  //   overlap: bottleneck 43/384, L = 221/320; without: 42/384 + 2/15, L = 457/480.
  // Cuts {50, 76}: t = 51/384, 26/384, 51/384.
  //   overlap: bottleneck 51/384, L = 703/960 (worse); without: 26/384 + 2/15 (the smaller
  //   middle stage carries both cuts), L = 139/160 (better).
  ArrayProblem p = linear_problem({0, 1, 2}, 1.0, {1, 1, 1}, 3, 0.0);
  EXPECT_NEAR(pipeline_length(p, {42, 84}), 221.0 / 320, 1e-6);
  EXPECT_NEAR(pipeline_length(p, {50, 76}), 703.0 / 960, 1e-6);
  p.overlap = false;
  EXPECT_NEAR(pipeline_length(p, {42, 84}), 457.0 / 480, 1e-6);
  EXPECT_NEAR(pipeline_length(p, {50, 76}), 139.0 / 160, 1e-6);
}

TEST(PipelineArraysTest, ArrayEnvMasksAndRewards) {
  ArrayPipelineEnv env(linear_problem({0, 1, 2}, 1.0, {1, 1, 1}, 3, 0.0), 4);
  EXPECT_EQ(static_cast<int>(env.observation().size()), ArrayPipelineEnv::state_dim(3, 4));
  EXPECT_EQ(ArrayPipelineEnv::state_dim(3, 4), 4 * 128 + 16 + 3 + 2);
  EXPECT_EQ(env.action_mask()[125], 1);
  EXPECT_EQ(env.action_mask()[126], 0);  // no room for the second cut
  EXPECT_EQ(env.step(42), 0.0);
  EXPECT_EQ(env.observation()[3 * 128 + 42], 1.0f);
  EXPECT_EQ(env.action_mask()[42], 0);
  EXPECT_EQ(env.action_mask()[43], 1);
  EXPECT_EQ(env.action_mask()[126], 1);
  EXPECT_THROW(env.step(10), ValidationError);
  EXPECT_NEAR(env.step(84), 1.0, 1e-12);  // the balanced cuts: reward 1
  EXPECT_TRUE(env.done());
  EXPECT_THROW(env.step(100), Error);
  env.reset();
  env.step(10);
  const double r = env.step(20);
  EXPECT_NEAR(r, pipeline_length(env.problem(), {42, 84}) / pipeline_length(env.problem(), {10, 20}),
              1e-12);
  EXPECT_LT(r, 1.0);
  // Bandwidth block: device 0 row, then padding.
  EXPECT_EQ(env.observation()[4 * 128 + 0], 1.0f);
  EXPECT_EQ(env.observation()[4 * 128 + 3], 0.0f);  // device 3 is padding
  EXPECT_EQ(env.observation()[4 * 128 + 16], 0.25f);  // stage 0: 1 of 4 devices
}

TEST(PipelineArraysTest, GeneratorIsSeededAndNormalised) {
  ArrayGenOptions o;
  o.stages = 4;
  o.max_devices = 16;
  for (uint64_t seed : {1u, 2u, 77u}) {
    const ArrayProblem a = generate_array_problem(seed, o);
    const ArrayProblem b = generate_array_problem(seed, o);
    EXPECT_EQ(a.arrays.C, b.arrays.C);
    EXPECT_EQ(a.arrays.A, b.arrays.A);
    EXPECT_EQ(a.arrays.W, b.arrays.W);
    EXPECT_EQ(a.topology.bandwidth, b.topology.bandwidth);
    EXPECT_EQ(a.stage_devices, b.stage_devices);
    EXPECT_EQ(a.micro_batches, b.micro_batches);
    float mx = 0;
    for (size_t j = 0; j < 128; ++j) {
      for (float v : {a.arrays.C[j], a.arrays.A[j], a.arrays.W[j]}) {
        EXPECT_GE(v, 0.0f);
        EXPECT_LE(v, 1.0f);
        mx = std::max(mx, v);
      }
      if (j > 0) {
        EXPECT_GE(a.arrays.C[j], a.arrays.C[j - 1]);
      }
    }
    EXPECT_EQ(mx, 1.0f);
    EXPECT_EQ(a.stages(), 4);
    EXPECT_GE(a.topology.num_devices(), 4);
    EXPECT_LE(a.topology.num_devices(), 16);
    EXPECT_GE(a.micro_batches, 4);
    EXPECT_LE(a.micro_batches, 16);
  }
  EXPECT_NE(generate_array_problem(1, o).arrays.C, generate_array_problem(2, o).arrays.C);
  o.distributions = {"poisson"};
  EXPECT_THROW(generate_array_problem(1, o), ValidationError);
}

}  // namespace
}  // namespace placer
