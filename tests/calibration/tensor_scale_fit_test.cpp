// The tensor-core scales of a GPU generation (simulator/calibration/tensor_scale_fit.h) by
// hand: the response of a step to each scale, the fit recovering known scales, the curves
// they multiply, and one simulated step on the shipped B200 profile.
#include "simulator/calibration/tensor_scale_fit.h"

#include <gtest/gtest.h>

#include "simulator/calibration/shipped_profiles.h"
#include "simulator/simulator.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer {
namespace {

TEST(TensorScaleFit, ResponseFromThreeSimulations) {
  // fixed 4 s, GEMMs 5 s, attention 1 s: at s = 1.25 the GEMMs take 4 s, attention 0.8 s.
  const ScaleResponse r = scale_response(10.0, 4 + 5 / 1.25 + 1, 4 + 5 + 1 / 1.25);
  EXPECT_NEAR(r.fixed, 4, 1e-12);
  EXPECT_NEAR(r.gemm, 5, 1e-12);
  EXPECT_NEAR(r.attention, 1, 1e-12);
  EXPECT_NEAR(r.at({0.5, 0.25}), 4 + 10 + 4, 1e-12);
  // A step that got slower with faster GEMMs (event-ordering noise) has no GEMM part.
  const ScaleResponse noisy = scale_response(10.0, 10.1, 10.0);
  EXPECT_EQ(noisy.gemm, 0);
  EXPECT_EQ(noisy.fixed, 10);
}

TEST(TensorScaleFit, RecoversTheScalesThatMadeTheTimes) {
  const std::vector<ScaleResponse> r = {{1, 8, 1}, {2, 4, 4}, {0.5, 2, 0.5}};
  std::vector<double> measured;
  for (const ScaleResponse& x : r) measured.push_back(x.at({0.8, 0.6}));
  const TensorScales s = fit_tensor_scales(r, measured, 0);
  EXPECT_NEAR(s.gemm, 0.8, 0.8 * 5e-4);
  EXPECT_NEAR(s.attention, 0.6, 0.6 * 5e-4);
  // Runs without attention cannot tell its scale: the prior keeps it with the GEMMs'.
  const std::vector<ScaleResponse> gemm_only = {{1, 8, 0}, {2, 4, 0}};
  const TensorScales t = fit_tensor_scales(gemm_only, {1 + 8 / 0.9, 2 + 4 / 0.9});
  EXPECT_NEAR(t.gemm, 0.9, 0.9 * 5e-4);
  EXPECT_NEAR(t.attention, 0.9, 0.9 * 5e-4);
  EXPECT_THROW(fit_tensor_scales({}, {}), ValidationError);
  EXPECT_THROW(fit_tensor_scales(r, {1.0}), ValidationError);
}

TEST(TensorScaleFit, RecoversTheHostTimePerMoeSync) {
  // Runs with 100, 400 and 0 syncs on the critical path (the last one graph-captured), made
  // at GEMM scale 0.8, attention 0.8 and 3 ms of host work per sync.
  const std::vector<ScaleResponse> r = {{1, 8, 1, 100}, {2, 4, 4, 400}, {0.5, 2, 0.5, 0}};
  std::vector<double> measured;
  for (const ScaleResponse& x : r) measured.push_back(x.at({0.8, 0.8, 3e-3}));
  const TensorScales s = fit_tensor_scales(r, measured, 0, true);
  // Within the last grids' steps (0.05 % in scale, 0.5 us) and their trade-off: a 0.1 %
  // slower attention scale is worth 10 us less host time per sync on these runs.
  EXPECT_NEAR(s.gemm, 0.8, 0.8 * 1e-3);
  EXPECT_NEAR(s.attention, 0.8, 0.8 * 1e-3);
  EXPECT_NEAR(s.sync_host, 3e-3, 15e-6);
  // Without the flag the host time stays 0.
  EXPECT_EQ(fit_tensor_scales(r, measured, 0).sync_host, 0);
  // The fitted host time is added to the profile's.
  CostProfile p;
  p.moe_sync_host_time = 1e-3;
  EXPECT_DOUBLE_EQ(with_tensor_scales(p, {1, 1, 2e-3}).moe_sync_host_time, 3e-3);
}

TEST(TensorScaleFit, ScalesTensorCoreCurvesOnly) {
  CostProfile p;
  p.op(OpCategory::kMatMul).compute = EfficiencyCurve::constant(0.5);
  p.op(OpCategory::kMatMul).compute_by_dtype[DType::kBF16] = EfficiencyCurve::constant(0.7);
  p.op(OpCategory::kMatMul).compute_by_dtype[DType::kF32] = EfficiencyCurve::constant(0.6);
  p.op(OpCategory::kAttention).compute = EfficiencyCurve::ramp({{10, 0.2}, {12, 0.6}});
  p.op(OpCategory::kElementwise).compute = EfficiencyCurve::constant(0.5);
  const CostProfile q = with_tensor_scales(p, {1.5, 0.5});
  EXPECT_DOUBLE_EQ(q.op(OpCategory::kMatMul).compute.at(1e9), 0.75);
  EXPECT_DOUBLE_EQ(q.op(OpCategory::kMatMul).compute_for(DType::kBF16).at(1e9), 1.0);  // capped
  EXPECT_DOUBLE_EQ(q.op(OpCategory::kMatMul).compute_for(DType::kF32).at(1e9), 0.6);
  EXPECT_DOUBLE_EQ(q.op(OpCategory::kAttention).compute.at(1e12), 0.3);
  EXPECT_DOUBLE_EQ(q.op(OpCategory::kElementwise).compute.at(1e9), 0.5);
  const CostProfile r = with_reference_compute_curves(q, p);
  EXPECT_EQ(r.op(OpCategory::kMatMul), p.op(OpCategory::kMatMul));
  EXPECT_EQ(r.op(OpCategory::kAttention), p.op(OpCategory::kAttention));
}

// One GEMM of a transformer layer (1e12 FLOPs, bf16, 8 MB of weights, no inputs) on one GPU
// of the shipped B200 cluster with the profile picked for it, by hand from the profile file:
// the host issues it (matmul dispatch 40 us), it launches (3.824 us) and runs at the bf16
// curve's value at 1e12 FLOPs, 0.674134 (0.7651920502 of the H100 curve x the Blackwell GEMM
// scale 0.881) of 2,250 TFLOP/s: 1e12 / (2.25e15 x 0.674134) = 659.282 us. In FP8: the f8
// curve at 1e12, 0.625951 (0.7105 x 0.881) of 4,500 TFLOP/s = 355.015 us, plus the scaling
// pass over the weights (2.5 x 8 MB at the bf16 elementwise curve at 2e7 bytes, 0.851 of
// 8 TB/s: 2.938 us, and its launch).
TEST(TensorScaleFit, OneGemmOnTheShippedB200Profile) {
  const std::string dir = shipped_profiles_dir() + "/";
  const Cluster cl = load_cluster_yaml(dir + "b200_1node.cluster.yaml");
  ASSERT_EQ(shipped_profile_file(cl), "b200_ib400.profile.yaml");
  const CostModel cost(cl, load_cost_profile(dir + "b200_ib400.profile.yaml"));
  testing::TestGraph b;
  const OpId mm = b.op("mm", 1e12, {}, {});
  b.at(mm).dtype = DType::kBF16;
  b.at(mm).layer = 0;
  b.at(mm).param_bytes = 8000000;
  const Graph g = b.build();
  Simulator sim(g, cl, cost);
  Plan p = testing::place(g, {0});
  EXPECT_NEAR(sim.run(p).step_time, 40e-6 + 3.824e-6 + 1 / (2250 * 0.674134), 1e-9);
  p.precision.fp8 = true;
  EXPECT_NEAR(sim.run(p).step_time,
              40e-6 + 3.824e-6 + 1 / (4500 * 0.625951) + 3.824e-6 + 2e7 / (8e12 * 0.851), 1e-9);
}

}  // namespace
}  // namespace placer
