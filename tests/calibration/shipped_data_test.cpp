// The shipped measurements (datasets/clusters/measurements, transcribed published
// nccl-tests results) and the profiles fitted from them: the fitted all-reduce curves
// reproduce the measurements within the goal (median relative error <= 5%).
#include <gtest/gtest.h>

#include <iostream>

#include "simulator/calibration/fit.h"
#include "simulator/cost_profile.h"
#include "src/io/cluster_yaml.h"

namespace placer {
namespace {

std::string src(const std::string& rel) { return std::string(PLACER_SOURCE_DIR) + "/" + rel; }

struct Case {
  const char* log;
  const char* cluster;
  const char* profile;
  LinkLevel level;
  int ranks;
};

const Case kCases[] = {
    {"datasets/clusters/measurements/h100_a3mega_2x8.all_reduce_perf.log",
     "datasets/clusters/h100_ib_4node.cluster.yaml", "datasets/clusters/h100_a3mega.profile.yaml",
     LinkLevel::kInterHost, 16},
    {"datasets/clusters/measurements/a100_coreweave_32.all_reduce_perf.log",
     "datasets/clusters/measurements/coreweave_hgx_a100_4node.cluster.yaml",
     "datasets/clusters/dgx_a100.profile.yaml", LinkLevel::kInterHost, 32},
};

TEST(ShippedData, FittedAllReduceCurvesMeetTheGoal) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.log);
    const Cluster cluster = load_cluster_yaml(src(c.cluster));
    const std::vector<MeasurementSet> m = {load_measurements(src(c.log))};
    ASSERT_GE(m[0].rows.size(), 31u);
    EXPECT_EQ(m[0].rows[0].devices, c.ranks);
    const FitReport fit = fit_profile(cluster, default_profile(), m, {});
    const auto& curve = fit.profile.curve(CollectiveKind::kAllReduce, c.level);
    ASSERT_TRUE(curve.has_value());
    const FitError& e = fit.profile.fit_errors.at(std::string("collective_curves.all_reduce.") +
                                                  to_string(c.level));
    EXPECT_LE(e.median, 0.05);
    EXPECT_EQ(e.points, static_cast<int>(m[0].rows.size()));
    // The same numbers through the cost model (check), and through the shipped profile.
    const CheckReport chk = check_profile(cluster, fit.profile, m);
    EXPECT_LE(chk.collectives.median, 0.05);
    EXPECT_NEAR(chk.collectives.median, e.median, 1e-9);
    const CostProfile shipped = load_cost_profile(src(c.profile));
    const CheckReport chk2 = check_profile(cluster, shipped, m);
    EXPECT_LE(chk2.collectives.median, 0.05);
  }
}

TEST(ShippedData, HeldOutSizes) {
  // Fit on every other size, predict the sizes in between (interpolation between knots).
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.log);
    const Cluster cluster = load_cluster_yaml(src(c.cluster));
    const MeasurementSet all = load_measurements(src(c.log));
    MeasurementSet even = all, odd = all;
    even.rows.clear();
    odd.rows.clear();
    for (size_t i = 0; i < all.rows.size(); ++i) (i % 2 ? odd : even).rows.push_back(all.rows[i]);
    const FitReport fit = fit_profile(cluster, default_profile(), {even}, {});
    const CheckReport held = check_profile(cluster, fit.profile, {odd});
    std::cout << c.log << ": fitted on " << even.rows.size() << " sizes, held-out "
              << odd.rows.size() << ": median " << held.collectives.median << ", p90 "
              << held.collectives.p90 << "\n";
    EXPECT_LE(held.collectives.median, 0.10);
  }
}

TEST(ShippedData, DefaultProfileIsFarOffForSmallMessages) {
  // Why calibration matters: the alpha-beta defaults miss the measured ramp.
  const Cluster cluster = load_cluster_yaml(src(kCases[0].cluster));
  const std::vector<MeasurementSet> m = {load_measurements(src(kCases[0].log))};
  const CheckReport chk = check_profile(cluster, default_profile(), m);
  EXPECT_GT(chk.collectives.median, 0.2);
}

TEST(ShippedData, SendRecvGivesTheA100LinkBandwidth) {
  const Cluster cluster = load_cluster_yaml(src("datasets/clusters/dgx_a100.cluster.yaml"));
  const std::vector<MeasurementSet> m = {
      load_measurements(src("datasets/clusters/measurements/a100_8gpu.sendrecv_perf.log"))};
  const FitReport fit = fit_profile(cluster, default_profile(), m, {});
  const LinkOverride& o = fit.profile.link(LinkLevel::kIntraHost);
  // 1 GiB in 5503.4 us: ~195 GB/s; the line through the four rows is within 10% of it.
  EXPECT_NEAR(o.bandwidth, 195e9, 0.1 * 195e9);
  EXPECT_EQ(o.bandwidth_efficiency, 1.0);
}

}  // namespace
}  // namespace placer
