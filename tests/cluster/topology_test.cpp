// Topology above the host: NVLink domains, leaf / spine fabrics with oversubscription,
// rails. Transfer times hand-computed; the cluster file round trip.
#include <gtest/gtest.h>

#include <string>

#include "src/cluster/cluster.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

namespace placer {
namespace {

const std::string kClusters = std::string(PLACER_SOURCE_DIR) + "/datasets/clusters";

// `hosts` hosts of `per_host` GPUs; intra_host 3 us at 900 GB/s, inter_host 5 us at 50 GB/s.
Cluster fabric(int hosts, int per_host, const Topology& t) {
  DeviceSpec g;
  g.model = "g";
  g.peak_flops[static_cast<int>(DType::kF32)] = 1e13;
  g.memory_bytes = 1ull << 34;
  g.memory_bandwidth = 1e12;
  Cluster c;
  c.name = "fabric";
  for (int h = 0; h < hosts; ++h) c.add_host("node" + std::to_string(h), g, per_host);
  c.set_link(LinkLevel::kIntraHost, {"nvswitch", 3e-6, 9e11, LinkSharing::kPerDevice});
  c.set_link(LinkLevel::kInterHost, {"infiniband", 5e-6, 5e10, LinkSharing::kPerDevice});
  c.set_topology(t);
  c.validate();
  return c;
}

constexpr uint64_t kGB = 1000000000;

TEST(Topology, TwoLeavesOversubscribedTwoToOne) {
  Topology t;
  t.hosts_per_leaf = 2;
  t.oversubscription = 2;
  t.spine_latency = 1e-6;
  const Cluster c = fabric(4, 2, t);  // leaf 0: node0, node1; leaf 1: node2, node3
  // node0/gpu0 -> node1/gpu1: inside leaf 0, 5 us + 1 GB / 50 GB/s.
  EXPECT_FALSE(c.crosses_spine(0, 3));
  EXPECT_DOUBLE_EQ(c.transfer_time(0, 3, kGB), 5e-6 + 0.02);
  // node0/gpu0 -> node2/gpu0: over the spine, 6 us + 1 GB / 25 GB/s.
  EXPECT_TRUE(c.crosses_spine(0, 4));
  EXPECT_EQ(c.level(0, 4), LinkLevel::kInterHost);
  EXPECT_DOUBLE_EQ(c.bandwidth(0, 4), 2.5e10);
  EXPECT_DOUBLE_EQ(c.latency(0, 4), 6e-6);
  EXPECT_DOUBLE_EQ(c.transfer_time(0, 4, kGB), 6e-6 + 0.04);
  // Inside one host nothing changes: 3 us + 1 GB / 900 GB/s.
  EXPECT_DOUBLE_EQ(c.transfer_time(4, 5, kGB), 3e-6 + 1.0 / 900);
}

TEST(Topology, Nvl72DomainOfNineHostsTalksAtNvlinkSpeed) {
  Topology t;
  t.nvlink_domain_hosts = 9;
  const Cluster c = fabric(18, 8, t);  // two domains of 72 GPUs
  // node0/gpu0 -> node8/gpu7 (device 71): other host, same domain: NVLink.
  EXPECT_EQ(c.level(0, 71), LinkLevel::kIntraHost);
  EXPECT_DOUBLE_EQ(c.transfer_time(0, 71, kGB), 3e-6 + 1.0 / 900);
  // node0/gpu0 -> node9/gpu0 (device 72): the next domain, over InfiniBand.
  EXPECT_EQ(c.level(0, 72), LinkLevel::kInterHost);
  EXPECT_DOUBLE_EQ(c.transfer_time(0, 72, kGB), 5e-6 + 0.02);
  EXPECT_EQ(c.level(80, 143), LinkLevel::kIntraHost);  // node10 and node17: domain 1
}

TEST(Topology, RailsKeepSameRailTrafficInTheLeaf) {
  Topology t;
  t.rails = true;
  t.oversubscription = 4;
  const Cluster c = fabric(4, 8, t);
  // node0/gpu3 -> node2/gpu3: rail 3, inside its leaf: 5 us + 1 GB / 50 GB/s.
  EXPECT_FALSE(c.crosses_spine(3, 19));
  EXPECT_DOUBLE_EQ(c.transfer_time(3, 19, kGB), 5e-6 + 0.02);
  // node0/gpu3 -> node2/gpu5: from rail 3 to rail 5 over the spine: 1 GB / 12.5 GB/s.
  EXPECT_TRUE(c.crosses_spine(3, 21));
  EXPECT_DOUBLE_EQ(c.transfer_time(3, 21, kGB), 5e-6 + 0.08);
  // Inside a host the rails do not matter.
  EXPECT_DOUBLE_EQ(c.transfer_time(3, 5, kGB), 3e-6 + 1.0 / 900);
}

TEST(Topology, RailsWithLeavesCrossTheSpineBetweenLeaves) {
  Topology t;
  t.rails = true;
  t.hosts_per_leaf = 2;
  t.oversubscription = 2;
  const Cluster c = fabric(4, 2, t);
  EXPECT_FALSE(c.crosses_spine(0, 2));  // node0/gpu0 -> node1/gpu0: one leaf, one rail
  EXPECT_TRUE(c.crosses_spine(0, 4));   // node0/gpu0 -> node2/gpu0: other leaf
  EXPECT_TRUE(c.crosses_spine(0, 3));   // node0/gpu0 -> node1/gpu1: other rail
}

TEST(Topology, OutOfRangeOrCombinedWithAMatrixIsRefused) {
  Topology t;
  t.oversubscription = 0.5;
  EXPECT_THROW(fabric(2, 2, t), ValidationError);
  t = Topology{};
  t.nvlink_domain_hosts = 0;
  EXPECT_THROW(fabric(2, 2, t), ValidationError);
  t = Topology{};
  t.rails = true;
  Cluster c = fabric(2, 2, t);
  c.set_bandwidth_matrix(std::vector<double>(16, 1e10));
  EXPECT_THROW(c.validate(), ValidationError);
}

std::string topology_file(const std::string& version, const std::string& topology) {
  return "format_version: \"" + version +
         "\"\n"
         "name: t\n"
         "device_types:\n"
         "  g: {peak_flops: {f32: 10 TFLOPS}, memory: 16 GiB, memory_bandwidth: 1 TB/s}\n"
         "hosts:\n"
         "  - {name: n, repeat: 4, devices: {type: g, count: 2}}\n"
         "links:\n"
         "  intra_host: {bandwidth: 900 GB/s, latency: 3 us}\n"
         "  inter_host: {bandwidth: 400 Gbit/s, latency: 5 us}\n" +
         topology;
}

TEST(TopologyYaml, ReadWrittenAndReadBack) {
  const std::string text =
      topology_file("1.1",
                    "topology: {nvlink_domain_hosts: 2, hosts_per_leaf: 2, oversubscription: 1.5, "
                    "spine_latency: 2 us, rails: true}\n");
  const Cluster c = parse_cluster_yaml(text, "t.cluster.yaml");
  const Topology& t = c.topology();
  EXPECT_EQ(t.nvlink_domain_hosts, 2);
  EXPECT_EQ(t.hosts_per_leaf, 2);
  EXPECT_EQ(t.oversubscription, 1.5);
  EXPECT_EQ(t.spine_latency, 2e-6);
  EXPECT_TRUE(t.rails);
  const std::string written = cluster_to_yaml(c);
  EXPECT_NE(written.find("format_version: \"1.1\""), std::string::npos) << written;
  const Cluster back = parse_cluster_yaml(written, "back.cluster.yaml");
  EXPECT_EQ(back.topology().nvlink_domain_hosts, 2);
  EXPECT_EQ(back.topology().hosts_per_leaf, 2);
  EXPECT_EQ(back.topology().oversubscription, 1.5);
  EXPECT_EQ(back.topology().spine_latency, 2e-6);
  EXPECT_TRUE(back.topology().rails);
  EXPECT_EQ(cluster_to_yaml(back), written);
  // node0/gpu0 -> node3/gpu1: other domain, other leaf: 7 us + 1 GB / (50 GB/s / 1.5).
  EXPECT_DOUBLE_EQ(back.transfer_time(0, 7, kGB), 7e-6 + 0.03);
}

TEST(TopologyYaml, ErrorsNameTheField) {
  try {
    parse_cluster_yaml(topology_file("1.0", "topology: {rails: true}\n"), "old.cluster.yaml");
    ADD_FAILURE() << "a 1.0 file with a topology was read";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("old.cluster.yaml: topology: needs format_version"),
              std::string::npos)
        << e.what();
  }
  try {
    parse_cluster_yaml(topology_file("1.1", "topology: {oversubscription: 0.5}\n"),
                       "o.cluster.yaml");
    ADD_FAILURE() << "oversubscription 0.5 was read";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("topology.oversubscription: must be between 1"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_cluster_yaml(topology_file("1.1", "topology: {leaf: 2}\n"), "k.cluster.yaml"),
               FormatError);
}

TEST(TopologyYaml, ShippedExamplesOfEachKind) {
  const Cluster nvl = load_cluster_yaml(kClusters + "/gb200_nvl72_2rack.cluster.yaml");
  EXPECT_EQ(nvl.num_devices(), 144);
  EXPECT_EQ(nvl.level(0, 71), LinkLevel::kIntraHost);
  EXPECT_EQ(nvl.level(0, 72), LinkLevel::kInterHost);
  const Cluster leaf = load_cluster_yaml(kClusters + "/h100_leaf_spine_2to1.cluster.yaml");
  EXPECT_EQ(leaf.topology().oversubscription, 2);
  EXPECT_FALSE(leaf.crosses_spine(0, 8 * (leaf.topology().hosts_per_leaf - 1)));
  EXPECT_TRUE(leaf.crosses_spine(0, 8 * leaf.topology().hosts_per_leaf));
  const Cluster rails = load_cluster_yaml(kClusters + "/h100_rail_optimized.cluster.yaml");
  EXPECT_TRUE(rails.topology().rails);
  EXPECT_FALSE(rails.crosses_spine(0, 8));
  EXPECT_TRUE(rails.crosses_spine(0, 9));
}

}  // namespace
}  // namespace placer
