// Fits: alpha-beta recovery from noisy synthetic data, efficiency curves, collective
// curves, fit_profile on a CSV and check_profile's numbers (hand-computed).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "simulator/calibration/fit.h"
#include "simulator/calibration/profiler_trace.h"
#include "simulator/cost_model.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

namespace placer {
namespace {

std::string data(const std::string& name) { return std::string(PLACER_TEST_DATA_DIR) + "/" + name; }

TEST(FitAlphaBeta, ExactLine) {
  // t = 5 us + x / 100 GB/s
  std::vector<double> x, t;
  for (double b = 1e3; b <= 1e9; b *= 4) {
    x.push_back(b);
    t.push_back(5e-6 + b / 100e9);
  }
  const AlphaBeta ab = fit_alpha_beta(x, t);
  EXPECT_NEAR(ab.alpha, 5e-6, 1e-12);
  EXPECT_NEAR(1 / ab.beta, 100e9, 1e-3);
}

TEST(FitAlphaBeta, RecoversConstantsFromNoisyData) {
  // 40 sizes from 1 KB to 1 GB, 2% log-normal noise, seeded.
  std::mt19937_64 rng(42);
  std::normal_distribution<double> noise(0.0, 0.02);
  const double alpha = 12e-6, bw = 230e9;
  std::vector<double> x, t;
  for (int i = 0; i < 40; ++i) {
    const double b = std::pow(10.0, 3 + 6.0 * i / 39);
    x.push_back(b);
    t.push_back((alpha + b / bw) * std::exp(noise(rng)));
  }
  const AlphaBeta ab = fit_alpha_beta(x, t);
  EXPECT_NEAR(ab.alpha, alpha, 0.03 * alpha);
  EXPECT_NEAR(1 / ab.beta, bw, 0.03 * bw);
}

TEST(FitAlphaBeta, OnePointAndBadInput) {
  const AlphaBeta ab = fit_alpha_beta({1e6}, {1e-4});
  EXPECT_EQ(ab.alpha, 0);
  EXPECT_DOUBLE_EQ(ab.beta, 1e-10);
  EXPECT_THROW(fit_alpha_beta({}, {}), ValidationError);
  EXPECT_THROW(fit_alpha_beta({1, 2}, {1e-6, 0}), ValidationError);
}

TEST(RelativeErrors, MedianAndP90) {
  // errors 0.1, 0.2, 0.0, 0.5 -> sorted 0, 0.1, 0.2, 0.5: median 0.15, p90 = 4th = 0.5
  const FitError e = relative_errors({1.1, 2.4, 3.0, 2.0}, {1.0, 2.0, 3.0, 4.0});
  EXPECT_EQ(e.points, 4);
  EXPECT_NEAR(e.median, 0.15, 1e-12);
  EXPECT_NEAR(e.p90, 0.5, 1e-12);
  const FitError one = relative_errors({2}, {1});
  EXPECT_NEAR(one.median, 1.0, 1e-12);
  EXPECT_NEAR(one.p90, 1.0, 1e-12);
}

TEST(FitEfficiencyCurve, ReproducesAPiecewiseLinearCurve) {
  const EfficiencyCurve truth = EfficiencyCurve::ramp({{3, 0.1}, {4, 0.4}, {5, 0.8}, {6, 0.9}});
  std::vector<double> s, e;
  for (double x = 3; x <= 6.0001; x += 0.25) {
    s.push_back(std::pow(10.0, x));
    e.push_back(truth.at(std::pow(10.0, x)));
  }
  const EfficiencyCurve c = fit_efficiency_curve(s, e, 0.5);
  for (size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(c.at(s[i]), e[i], 0.01 * e[i]) << s[i];
  EXPECT_EQ(c.points.front().first, 3.0);
  EXPECT_EQ(c.points.back().first, 6.0);
  // One size: the constant minimising the relative error.
  const EfficiencyCurve k = fit_efficiency_curve({1e6, 1e6}, {0.5, 0.5});
  EXPECT_TRUE(k.is_constant());
  EXPECT_DOUBLE_EQ(k.points[0].second, 0.5);
}

TEST(FitCollectiveCurve, StraightLineStaysAlphaBeta) {
  std::vector<CollectivePoint> pts;
  for (double b = 1e4; b <= 1e9; b *= 2) {
    pts.push_back({b, 8, 10e-6 + b * bus_factor(CollectiveKind::kAllReduce, 8) / 200e9});
  }
  FitError err;
  std::string model;
  const CollectiveCurve c =
      fit_collective_curve(CollectiveKind::kAllReduce, pts, 0.05, &err, &model);
  EXPECT_EQ(model, "alpha-beta");
  EXPECT_NEAR(c.latency, 10e-6, 1e-9);
  EXPECT_NEAR(c.bus_bandwidth, 200e9, 200e9 * 1e-6);
  EXPECT_TRUE(c.efficiency.is_constant());
  EXPECT_EQ(c.ranks, 8);
  EXPECT_LT(err.median, 1e-6);
}

TEST(FitCollectiveCurve, RampGetsACurveWithinFivePercent) {
  // Bus bandwidth ramps with size (as measured busbw does): 20 GB/s at 1 MiB, 126 at
  // 16 MiB, 229 at 1 GiB, linear in log10(size) between, on top of 8 us.
  const EfficiencyCurve ramp = EfficiencyCurve::ramp({{4, 0.01},
                                                      {std::log10(1048576.0), 20.0 / 229},
                                                      {std::log10(16777216.0), 126.0 / 229},
                                                      {std::log10(1073741824.0), 1.0}});
  std::vector<CollectivePoint> pts;
  for (double b = 8; b <= 4e9; b *= 2) {
    const double t = 8e-6 + b * bus_factor(CollectiveKind::kAllReduce, 8) / (229e9 * ramp.at(b));
    pts.push_back({b, 8, t});
  }
  FitError err;
  std::string model;
  const CollectiveCurve c =
      fit_collective_curve(CollectiveKind::kAllReduce, pts, 0.05, &err, &model);
  EXPECT_NE(model, "alpha-beta");
  EXPECT_LE(err.median, 0.05);
  EXPECT_LE(err.p90, 0.15);
  EXPECT_NEAR(c.bus_bandwidth, 229e9, 229e9 * 0.02);
}

TEST(GroupDevices, SpreadsOverHosts) {
  const Cluster c = load_cluster_yaml(std::string(PLACER_SOURCE_DIR) +
                                      "/datasets/clusters/h100_ib_4node.cluster.yaml");
  const std::vector<int> one = group_devices(c, 8, 1, "x");
  EXPECT_EQ(one, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  const std::vector<int> two = group_devices(c, 4, 2, "x");
  EXPECT_EQ(two.size(), 4u);
  EXPECT_EQ(c.device(two[0]).host, 0);
  EXPECT_EQ(c.device(two[3]).host, 1);
  EXPECT_EQ(group_devices(c, 16, 0, "x").size(), 16u);
  try {
    group_devices(c, 64, 8, "m.log:3");
    FAIL();
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("m.log:3: the measurement spans 8 hosts"),
              std::string::npos);
  }
}

// measurements.csv on two_gpus.cluster.yaml (10 TFLOP/s f32, 1 TB/s, 5 us launch, 10 us +
// 10 GB/s PCIe) with uniform_profile(1.0): hand-computed predictions.
TEST(CheckProfile, HandComputedPredictions) {
  const Cluster c = load_cluster_yaml(data("two_gpus.cluster.yaml"));
  const std::vector<MeasurementSet> m = {load_measurements(data("calibration/measurements.csv"))};
  const CheckReport r = check_profile(c, uniform_profile(1.0), m);
  ASSERT_EQ(r.rows.size(), 4u);  // the tf32 row is not predicted
  // gemm: 5 us + 2^31 / 1e13 s = 219.748... us vs 224 us
  EXPECT_NEAR(r.rows[0].predicted, 5e-6 + 2147483648.0 / 1e13, 1e-15);
  EXPECT_NEAR(r.rows[0].rel_error, (5e-6 + 2147483648.0 / 1e13 - 224e-6) / 224e-6, 1e-12);
  EXPECT_EQ(r.rows[0].group, "gemm fp32");
  // add: 5 us + 201326592 B / 1e12 B/s
  EXPECT_NEAR(r.rows[1].predicted, 5e-6 + 201326592.0 / 1e12, 1e-15);
  // p2p: 10 us + 1 MiB / 10 GB/s = 114.8576 us (the row's time)
  EXPECT_NEAR(r.rows[2].predicted, 114.8576e-6, 1e-15);
  EXPECT_EQ(r.rows[2].group, "memcpy p2p intra_host");
  // ring all-reduce of 2: n / b + 2 a = 104.8576 + 20 us
  EXPECT_NEAR(r.rows[3].predicted, 124.8576e-6, 1e-15);
  EXPECT_EQ(r.rows[3].group, "all_reduce intra_host");
  EXPECT_EQ(r.overall.points, 4);
  const double e0 = std::abs(r.rows[0].rel_error), e1 = std::abs(r.rows[1].rel_error);
  EXPECT_NEAR(r.overall.p90, e0, 1e-12);
  EXPECT_NEAR(r.overall.median, 0.5 * (e1 + 0.0), 1e-9);
  EXPECT_EQ(r.collectives.points, 1);
  EXPECT_EQ(r.compute.points, 2);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("tf32"), std::string::npos);
}

TEST(FitProfile, FromTheCsvFixture) {
  const Cluster c = load_cluster_yaml(data("two_gpus.cluster.yaml"));
  const std::vector<MeasurementSet> m = {load_measurements(data("calibration/measurements.csv"))};
  const FitReport r = fit_profile(c, uniform_profile(1.0), m, {});
  const CostProfile& p = r.profile;
  // One p2p row (sizes within two decades): the cluster's 10 us latency stays and the
  // bandwidth is fitted: 1 MiB in 114.8576 us - 10 us = 10 GB/s.
  EXPECT_EQ(p.link(LinkLevel::kIntraHost).latency, 10e-6);
  EXPECT_NEAR(p.link(LinkLevel::kIntraHost).bandwidth, 10e9, 1);
  EXPECT_EQ(p.link(LinkLevel::kIntraHost).bandwidth_efficiency, 1.0);
  // One all-reduce row of 2 ranks (bus factor 1): bus bandwidth = bytes / time, rounded to
  // 4 significant digits.
  ASSERT_TRUE(p.curve(CollectiveKind::kAllReduce, LinkLevel::kIntraHost).has_value());
  const CollectiveCurve& ar = *p.curve(CollectiveKind::kAllReduce, LinkLevel::kIntraHost);
  EXPECT_EQ(ar.bus_bandwidth, 8.398e9);  // 1048576 / 124.8576 us = 8.39818e9
  EXPECT_EQ(ar.latency, 0);
  EXPECT_EQ(ar.ranks, 2);
  // Compute: 2 rows are too few for a launch overhead; the device's 5 us stays.
  EXPECT_LT(p.launch_overhead, 0);
  EXPECT_EQ(p.op(OpCategory::kMatMul).compute.at(2147483648.0), 0.9806);  // 2^31 / (1e13 * 219 us)
  EXPECT_EQ(p.op(OpCategory::kElementwise).memory.at(201326592.0),
            1.002);  // 201326592 / (1e12 * 201 us)
  EXPECT_TRUE(p.fit_errors.count("collective_curves.all_reduce.intra_host"));
  EXPECT_TRUE(p.fit_errors.count("links.intra_host"));
  EXPECT_TRUE(p.fit_errors.count("ops.matmul.compute_efficiency"));
  EXPECT_LT(p.fit_errors.at("ops.matmul.compute_efficiency").median, 5e-4);
  EXPECT_LT(p.fit_errors.at("collective_curves.all_reduce.intra_host").median, 5e-4);
  // And the fitted profile reproduces the rows it was fitted on.
  const CheckReport chk = check_profile(c, p, m);
  EXPECT_LT(chk.overall.p90, 5e-4);
}

TEST(FitProfile, FromAProfilerTrace) {
  // aten::addmm with 1.374e11 FLOPs ran 900 us of kernel time; as f16 on an A100
  // (312 TFLOP/s): efficiency 1.37438953472e11 / (312e12 * 900e-6) = 0.48945 -> 0.4895.
  const Cluster c = load_cluster_yaml(std::string(PLACER_SOURCE_DIR) +
                                      "/datasets/clusters/dgx_a100.cluster.yaml");
  FitOptions o;
  o.trace_dtype = DType::kF16;
  const FitReport r = fit_profile(c, default_profile(), {},
                                  {load_profiler_trace(data("calibration/kineto_trace.json"))}, o);
  const EfficiencyCurve& e = r.profile.op(OpCategory::kMatMul).compute;
  EXPECT_TRUE(e.is_constant());
  EXPECT_EQ(e.points[0].second, 0.4895);
  EXPECT_LT(r.profile.launch_overhead, 0);  // 3 kernels: too few for a launch overhead
  const FitError& err = r.profile.fit_errors.at("ops.matmul.compute_efficiency");
  EXPECT_EQ(err.points, 1);
  EXPECT_LT(err.median, 5e-4);
}

// GEMM rows of two dtypes on two_gpus.cluster.yaml (10 TFLOP/s for every dtype, 5 us
// launch): f32 at 0.8 and bf16 at 0.2 of peak at every size. One curve over FLOPs cannot
// hold both; each dtype gets its own, and each reproduces its rows.
TEST(FitProfile, TwoDtypesGetTheirOwnComputeCurves) {
  const Cluster c = load_cluster_yaml(data("two_gpus.cluster.yaml"));
  MeasurementSet set;
  set.source = "mem.csv";
  for (const char* dtype : {"fp32", "bf16"}) {
    const double eff = std::string(dtype) == "fp32" ? 0.8 : 0.2;
    for (double flops : {1e9, 1e10, 1e11}) {
      Measurement m;
      m.kind = MeasureKind::kGemm;
      m.op = "gemm";
      m.dtype = dtype;
      m.flops = flops;
      m.bytes = 1e6;
      m.devices = 1;
      m.hosts = 1;
      m.time_s = 5e-6 + flops / (1e13 * eff);  // the launch plus the kernel
      set.rows.push_back(m);
    }
  }
  const FitReport r = fit_profile(c, uniform_profile(1.0), {set}, {});
  const OpCostProfile& mm = r.profile.op(OpCategory::kMatMul);
  ASSERT_EQ(mm.compute_by_dtype.size(), 2u);
  EXPECT_NEAR(mm.compute_for(DType::kF32).at(1e10), 0.8, 1e-3);
  EXPECT_NEAR(mm.compute_for(DType::kBF16).at(1e10), 0.2, 1e-3);
  // f16 had no rows: it takes the curve fitted over all rows.
  EXPECT_EQ(&mm.compute_for(DType::kF16), &mm.compute);
  EXPECT_LT(r.profile.fit_errors.at("ops.matmul.compute_efficiency").p90, 5e-3);
  const CheckReport chk = check_profile(c, r.profile, {set});
  EXPECT_LT(chk.compute.p90, 5e-3);
}

TEST(FitProfile, NothingToFit) {
  const Cluster c = load_cluster_yaml(data("two_gpus.cluster.yaml"));
  EXPECT_THROW(fit_profile(c, default_profile(), {}, {}), ValidationError);
}

}  // namespace
}  // namespace placer
