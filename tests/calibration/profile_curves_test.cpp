// CostProfile's collective curves and fit errors: YAML round trip, validation, and
// CostModel using a curve when present and its formulas (bit-identical) otherwise.
#include <gtest/gtest.h>

#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "src/util/error.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;

CostProfile with_curves() {
  CostProfile p = default_profile();
  p.name = "curves";
  CollectiveCurve ar;
  ar.latency = 8e-6;
  ar.bus_bandwidth = 229e9;
  ar.efficiency = EfficiencyCurve::ramp({{6, 0.1}, {7.2, 0.55}, {9, 1.0}});
  ar.ranks = 8;
  p.curve(CollectiveKind::kAllReduce, LinkLevel::kIntraHost) = ar;
  CollectiveCurve ag;
  ag.latency = 20e-6;
  ag.bus_bandwidth = 50e9;
  ag.efficiency = EfficiencyCurve::constant(1.0);
  p.curve(CollectiveKind::kAllGather, LinkLevel::kInterHost) = ag;
  p.fit_errors["collective_curves.all_reduce.intra_host"] = {0.021, 0.048, 31};
  p.fit_errors["links.intra_host"] = {0.5, 1.25, 4};
  return p;
}

TEST(ProfileCurves, YamlRoundTrip) {
  const CostProfile p = with_curves();
  const std::string yaml = cost_profile_to_yaml(p);
  EXPECT_NE(yaml.find("collective_curves:"), std::string::npos);
  EXPECT_NE(yaml.find("fit_errors:"), std::string::npos);
  const CostProfile q = parse_cost_profile(yaml, "round.yaml");
  EXPECT_EQ(q, p);
  EXPECT_EQ(cost_profile_to_yaml(q), yaml);
}

TEST(ProfileCurves, ProfilesWithoutCurvesWriteAsBefore) {
  const std::string yaml = cost_profile_to_yaml(default_profile());
  EXPECT_EQ(yaml.find("collective_curves"), std::string::npos);
  EXPECT_EQ(yaml.find("fit_errors"), std::string::npos);
  EXPECT_FALSE(default_profile().has_collective_curves());
  EXPECT_TRUE(with_curves().has_collective_curves());
}

TEST(ProfileCurves, ParseDefaultsAndErrors) {
  const std::string head = "format_version: \"1.0\"\n";
  const CostProfile p = parse_cost_profile(
      head + "collective_curves:\n  broadcast:\n    intra_host: {bus_bandwidth: 100 GB/s}\n",
      "p.yaml");
  const auto& c = p.curve(CollectiveKind::kBroadcast, LinkLevel::kIntraHost);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->latency, 0);
  EXPECT_EQ(c->bus_bandwidth, 100e9);
  EXPECT_TRUE(c->efficiency.is_constant());
  auto msg = [&](const std::string& body) {
    try {
      parse_cost_profile(head + body, "p.yaml");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg("collective_curves:\n  send_to_all:\n    intra_host: {bus_bandwidth: 1 GB/s}\n")
                .find("p.yaml: collective_curves.send_to_all: unknown collective 'send_to_all'"),
            std::string::npos);
  EXPECT_NE(msg("collective_curves:\n  all_reduce:\n    host_device: {bus_bandwidth: 1 GB/s}\n")
                .find("collective_curves.all_reduce.host_device: unknown link level"),
            std::string::npos);
  EXPECT_NE(msg("collective_curves:\n  all_reduce:\n    intra_host: {latency: 1 us}\n")
                .find("collective_curves.all_reduce.intra_host.bus_bandwidth: missing"),
            std::string::npos);
  EXPECT_NE(msg("collective_curves:\n  all_reduce:\n    intra_host: {bus_bandwidth: 1 GB/s, "
                "efficiency: [[6, 0.5], [5, 0.6]]}\n")
                .find("collective_curves.all_reduce.intra_host.efficiency[1]: log10(size) values "
                      "must increase"),
            std::string::npos);
  EXPECT_NE(
      msg("collective_curves:\n  all_reduce:\n    intra_host: {bus_bandwidth: 1 GB/s, speed: 2}\n")
          .find("speed"),
      std::string::npos);
  EXPECT_NE(msg("fit_errors:\n  links.intra_host: {median: -1, p90: 0, points: 1}\n")
                .find("fit_errors.links.intra_host"),
            std::string::npos);
}

TEST(ProfileCurves, ValidateRejectsBadCurves) {
  CostProfile p = default_profile();
  CollectiveCurve c;
  c.bus_bandwidth = 0;
  p.curve(CollectiveKind::kAllReduce, LinkLevel::kIntraHost) = c;
  EXPECT_THROW(p.validate(), ValidationError);
  c.bus_bandwidth = 1e9;
  c.latency = -1;
  p.curve(CollectiveKind::kAllReduce, LinkLevel::kIntraHost) = c;
  EXPECT_THROW(p.validate(), ValidationError);
  c.latency = 0;
  p.curve(CollectiveKind::kAllReduce, LinkLevel::kIntraHost) = c;
  EXPECT_NO_THROW(p.validate());
  p.curve(CollectiveKind::kAllReduce, LinkLevel::kHostDevice) = c;
  EXPECT_THROW(p.validate(), ValidationError);
}

TEST(ProfileCurves, BusFactorsAndCurveTime) {
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kAllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kBroadcast, 8), 1.0);
  CollectiveCurve c;
  c.latency = 10e-6;
  c.bus_bandwidth = 100e9;
  c.efficiency = EfficiencyCurve::ramp({{6, 0.5}, {8, 1.0}});
  // 1e7 bytes: efficiency 0.75; all-reduce of 8: 10 us + 1e7 * 1.75 / 75e9
  EXPECT_DOUBLE_EQ(c.time(CollectiveKind::kAllReduce, 8, 1e7), 10e-6 + 1e7 * 1.75 / (100e9 * 0.75));
  EXPECT_EQ(c.time(CollectiveKind::kAllReduce, 1, 1e7), 0);
}

TEST(ProfileCurves, CostModelUsesCurvesOnlyWhereTheyExist) {
  // 2 hosts x 4 devices.
  const Cluster cl = make_cluster(2, 4, link(3e-6, 300e9), link(5e-6, 25e9));
  const CostProfile base = default_profile();
  const CostProfile curves = with_curves();
  const CostModel a(cl, base), b(cl, curves);
  const std::vector<int> intra = {0, 1, 2, 3}, inter = {0, 1, 4, 5};
  const uint64_t n = 64ull << 20;
  for (SyncScheme s : {SyncScheme::kRing, SyncScheme::kTree, SyncScheme::kHierarchical,
                       SyncScheme::kParameterServer, SyncScheme::kAuto}) {
    // No curve for these (kind, level): bit-identical to the profile without curves.
    EXPECT_EQ(a.collective_time(CollectiveKind::kAllReduce, inter, n, s),
              b.collective_time(CollectiveKind::kAllReduce, inter, n, s));
    EXPECT_EQ(a.collective_time(CollectiveKind::kAllGather, intra, n, s),
              b.collective_time(CollectiveKind::kAllGather, intra, n, s));
    EXPECT_EQ(a.collective_time(CollectiveKind::kBroadcast, inter, n, s),
              b.collective_time(CollectiveKind::kBroadcast, inter, n, s));
    EXPECT_EQ(a.collective_time(CollectiveKind::kReduceScatter, intra, n, s),
              b.collective_time(CollectiveKind::kReduceScatter, intra, n, s));
  }
  // Curves: every scheme but the parameter server.
  const CollectiveCurve& ar = *curves.curve(CollectiveKind::kAllReduce, LinkLevel::kIntraHost);
  for (SyncScheme s :
       {SyncScheme::kRing, SyncScheme::kTree, SyncScheme::kHierarchical, SyncScheme::kAuto}) {
    EXPECT_DOUBLE_EQ(b.collective_time(CollectiveKind::kAllReduce, intra, n, s),
                     ar.time(CollectiveKind::kAllReduce, 4, static_cast<double>(n)));
  }
  EXPECT_EQ(b.collective_time(CollectiveKind::kAllReduce, intra, n, SyncScheme::kParameterServer),
            a.collective_time(CollectiveKind::kAllReduce, intra, n, SyncScheme::kParameterServer));
  const CollectiveCurve& ag = *curves.curve(CollectiveKind::kAllGather, LinkLevel::kInterHost);
  EXPECT_DOUBLE_EQ(b.collective_time(CollectiveKind::kAllGather, inter, n, SyncScheme::kAuto),
                   20e-6 + static_cast<double>(n) * 0.75 / 50e9);
  EXPECT_DOUBLE_EQ(ag.time(CollectiveKind::kAllGather, 4, static_cast<double>(n)),
                   20e-6 + static_cast<double>(n) * 0.75 / 50e9);
  // Groups of one still cost nothing; transfers and ops are untouched.
  EXPECT_EQ(b.collective_time(CollectiveKind::kAllReduce, {2}, n, SyncScheme::kAuto), 0);
  EXPECT_EQ(a.transfer_time(0, 5, n), b.transfer_time(0, 5, n));
}

}  // namespace
}  // namespace placer
