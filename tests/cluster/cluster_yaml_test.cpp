#include "src/io/cluster_yaml.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "src/util/error.h"

namespace placer {
namespace {

namespace fs = std::filesystem;

const std::string kData = PLACER_TEST_DATA_DIR;
const std::string kClusters = std::string(PLACER_SOURCE_DIR) + "/datasets/clusters";

void expect_same_cluster(const Cluster& a, const Cluster& b) {
  EXPECT_EQ(a.name, b.name);
  ASSERT_EQ(a.num_hosts(), b.num_hosts());
  for (int h = 0; h < a.num_hosts(); ++h) {
    EXPECT_EQ(a.host(h).name, b.host(h).name);
    EXPECT_EQ(a.host(h).devices, b.host(h).devices);
  }
  ASSERT_EQ(a.num_devices(), b.num_devices());
  for (int d = 0; d < a.num_devices(); ++d) {
    const Device& x = a.device(d);
    const Device& y = b.device(d);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.host, y.host);
    EXPECT_EQ(x.local_index, y.local_index);
    EXPECT_EQ(x.spec.model, y.spec.model);
    EXPECT_EQ(x.spec.kind, y.spec.kind);
    EXPECT_EQ(x.spec.peak_flops, y.spec.peak_flops);
    EXPECT_EQ(x.spec.memory_bandwidth, y.spec.memory_bandwidth);
    EXPECT_EQ(x.spec.memory_bytes, y.spec.memory_bytes);
    EXPECT_EQ(x.spec.launch_overhead, y.spec.launch_overhead);
    EXPECT_EQ(x.spec.overlap_transfers, y.spec.overlap_transfers);
  }
  for (int l = 1; l < kNumLinkLevels; ++l) {
    const LinkSpec& x = a.link(static_cast<LinkLevel>(l));
    const LinkSpec& y = b.link(static_cast<LinkLevel>(l));
    EXPECT_EQ(x.type, y.type) << "level " << l;
    EXPECT_EQ(x.latency, y.latency) << "level " << l;
    EXPECT_EQ(x.bandwidth, y.bandwidth) << "level " << l;
    EXPECT_EQ(x.sharing, y.sharing) << "level " << l;
  }
  EXPECT_EQ(a.topology().nvlink_domain_hosts, b.topology().nvlink_domain_hosts);
  EXPECT_EQ(a.topology().hosts_per_leaf, b.topology().hosts_per_leaf);
  EXPECT_EQ(a.topology().oversubscription, b.topology().oversubscription);
  EXPECT_EQ(a.topology().spine_latency, b.topology().spine_latency);
  EXPECT_EQ(a.topology().rails, b.topology().rails);
  EXPECT_EQ(a.bandwidth_matrix(), b.bandwidth_matrix());
  EXPECT_EQ(a.latency_matrix(), b.latency_matrix());
}

/// Runs `f`, expects an exception of type E whose message contains `part`.
template <typename E, typename F>
void expect_error(F f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one containing: " << part;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << part;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// A small valid cluster text with one placeholder to break.
std::string two_hosts(const std::string& links) {
  return "format_version: \"1.0\"\n"
         "name: t\n"
         "device_types:\n"
         "  g: {peak_flops: {f32: 10 TFLOPS}, memory: 16 GiB, memory_bandwidth: 1 TB/s}\n"
         "hosts:\n"
         "  - {name: n, repeat: 2, devices: {type: g, count: 2}}\n" +
         links;
}

TEST(ClusterYaml, TwoGpusHandChecked) {
  const Cluster c = load_cluster_yaml(kData + "/two_gpus.cluster.yaml");
  EXPECT_EQ(c.name, "two-gpus");
  ASSERT_EQ(c.num_devices(), 2);
  ASSERT_EQ(c.num_hosts(), 1);
  EXPECT_EQ(c.device(0).name, "host0/gpu0");
  EXPECT_EQ(c.device(1).name, "host0/gpu1");
  EXPECT_EQ(c.find_device("host0/gpu1"), 1);
  const DeviceSpec& s = c.device(1).spec;
  EXPECT_EQ(s.model, "gpu10t");
  EXPECT_EQ(s.kind, DeviceKind::kGpu);
  EXPECT_EQ(s.peak(DType::kF32), 10e12);
  EXPECT_EQ(s.peak(DType::kF16), 20e12);
  EXPECT_EQ(s.peak(DType::kBF16), 10e12);  // not listed: falls back to f32
  EXPECT_EQ(s.memory_bytes, 16ull << 30);
  EXPECT_EQ(s.memory_bandwidth, 1e12);
  EXPECT_EQ(s.launch_overhead, 5e-6);
  EXPECT_EQ(c.link(LinkLevel::kIntraHost).type, "pcie");
  EXPECT_EQ(c.link(LinkLevel::kIntraHost).sharing, LinkSharing::kPerPair);
  EXPECT_EQ(c.bandwidth(0, 1), 10e9);
  EXPECT_EQ(c.latency(0, 1), 10e-6);
  EXPECT_DOUBLE_EQ(c.transfer_time(0, 1, 1000000000), 0.10001);
}

TEST(ClusterYaml, EveryShippedClusterLoads) {
  const std::map<std::string, int> expected_devices = {
      {"dgx1_p100.cluster.yaml", 8},         {"p2_8xlarge_k80.cluster.yaml", 9},
      {"automap_config_a.cluster.yaml", 16}, {"automap_config_b.cluster.yaml", 24},
      {"automap_config_c.cluster.yaml", 32}, {"dgx_a100.cluster.yaml", 8},
      {"h100_ib_4node.cluster.yaml", 32},    {"h100_ib_64node.cluster.yaml", 512},
      {"h100_sxm_1gpu.cluster.yaml", 1},    {"h200_sxm_1gpu.cluster.yaml", 1},
      {"sync_1gbit.cluster.yaml", 8},        {"sync_10gbit.cluster.yaml", 8},
      {"sync_25gbit.cluster.yaml", 8},       {"sync_40gbit.cluster.yaml", 8},
      // The per-GPU files: 8 GPUs per node, 1 or 4 nodes.
      {"a100_40gb_1node.cluster.yaml", 8},   {"a100_40gb_4node_ib200.cluster.yaml", 32},
      {"a100_40gb_4node_ib400.cluster.yaml", 32}, {"a100_80gb_4node_ib200.cluster.yaml", 32},
      {"a100_80gb_4node_ib400.cluster.yaml", 32}, {"h100_sxm_1node.cluster.yaml", 8},
      {"h100_sxm_4node_ib200.cluster.yaml", 32},  {"h200_1node.cluster.yaml", 8},
      {"h200_4node_ib200.cluster.yaml", 32},      {"h200_4node_ib400.cluster.yaml", 32},
      {"b200_1node.cluster.yaml", 8},             {"b200_4node_ib200.cluster.yaml", 32},
      {"b200_4node_ib400.cluster.yaml", 32},      {"b200_32node_ib400.cluster.yaml", 256},
      {"b300_32node_ib800.cluster.yaml", 256},
      // Topology: NVL72 domains, a leaf / spine fabric, rails.
      {"gb200_nvl72_2rack.cluster.yaml", 144},    {"gb200_nvl72_4rack.cluster.yaml", 288},
      {"gb300_nvl72_4rack.cluster.yaml", 288},    {"h100_leaf_spine_2to1.cluster.yaml", 64},
      {"gb200_nvl72_4rack_64gpu.cluster.yaml", 256}, {"gb300_nvl72_4rack_64gpu.cluster.yaml", 256},
      {"h100_rail_optimized.cluster.yaml", 32}};
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(kClusters)) {
    const std::string file = entry.path().filename().string();
    if (file.size() < 13 || file.substr(file.size() - 13) != ".cluster.yaml") continue;
    SCOPED_TRACE(file);
    const Cluster c = load_cluster_yaml(entry.path().string());
    EXPECT_NO_THROW(c.validate());
    auto it = expected_devices.find(file);
    ASSERT_NE(it, expected_devices.end()) << "add " << file << " to this test";
    EXPECT_EQ(c.num_devices(), it->second);
    ++seen;
    // Round trip through the writer.
    const std::string text = cluster_to_yaml(c);
    const Cluster back = parse_cluster_yaml(text, file + " (rewritten)");
    expect_same_cluster(c, back);
    EXPECT_EQ(cluster_to_yaml(back), text);
  }
  EXPECT_EQ(seen, int(expected_devices.size()));
}

TEST(ClusterYaml, Dgx1NvlinkCubeMesh) {
  const Cluster c = load_cluster_yaml(kClusters + "/dgx1_p100.cluster.yaml");
  EXPECT_EQ(c.device(0).spec.peak(DType::kF32), 10.6e12);
  EXPECT_EQ(c.device(0).spec.memory_bandwidth, 732e9);
  EXPECT_EQ(c.bandwidth(0, 1), 20e9);  // NVLink inside a quad
  EXPECT_EQ(c.bandwidth(0, 4), 20e9);  // NVLink to the same position in the other quad
  EXPECT_EQ(c.bandwidth(0, 5), 10e9);  // no NVLink: PCIe / QPI
  EXPECT_EQ(c.bandwidth(7, 3), 20e9);
  EXPECT_EQ(c.bandwidth(7, 0), 10e9);
  EXPECT_EQ(c.latency(0, 5), 5e-6);
  // 100 MB over a non-NVLink pair: 5 us + 1e8 / 1e10 s.
  EXPECT_DOUBLE_EQ(c.transfer_time(0, 5, 100000000), 5e-6 + 0.01);
  int nvlinks = 0;
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) nvlinks += a != b && c.bandwidth(a, b) == 20e9;
  }
  EXPECT_EQ(nvlinks, 8 * 4);  // four NVLinks per GPU
}

TEST(ClusterYaml, AutoMapConfigB) {
  const Cluster c = load_cluster_yaml(kClusters + "/automap_config_b.cluster.yaml");
  ASSERT_EQ(c.num_devices(), 24);
  ASSERT_EQ(c.num_hosts(), 3);
  EXPECT_EQ(c.host(2).name, "server2");
  EXPECT_EQ(c.device(23).name, "server2/gpu7");
  EXPECT_EQ(c.device(8).host, 1);
  EXPECT_EQ(c.level(0, 7), LinkLevel::kIntraHost);
  EXPECT_EQ(c.level(7, 8), LinkLevel::kInterHost);
  EXPECT_EQ(c.bandwidth(7, 8), 25e9 / 8);  // 25 Gbps
  EXPECT_EQ(c.bandwidth(0, 7), 25e9);      // one NVLink 2.0 link
  EXPECT_EQ(c.link(LinkLevel::kInterHost).sharing, LinkSharing::kPerHost);
  EXPECT_EQ(c.device(0).spec.peak(DType::kF16), 125e12);
}

TEST(ClusterYaml, K80HostHasACpuDevice) {
  const Cluster c = load_cluster_yaml(kClusters + "/p2_8xlarge_k80.cluster.yaml");
  ASSERT_EQ(c.num_devices(), 9);
  EXPECT_EQ(c.device(8).name, "p2/cpu0");
  EXPECT_EQ(c.device(8).spec.kind, DeviceKind::kCpu);
  EXPECT_EQ(c.level(0, 8), LinkLevel::kHostDevice);
  EXPECT_EQ(c.bandwidth(8, 3), 12e9);
  EXPECT_EQ(c.bandwidth(0, 1), 21e9);
  EXPECT_EQ(c.device(0).spec.memory_bytes, 12ull << 30);
  EXPECT_EQ(c.link(LinkLevel::kIntraHost).sharing, LinkSharing::kPerDevice);
}

TEST(ClusterYaml, A100AndH100) {
  const Cluster a = load_cluster_yaml(kClusters + "/dgx_a100.cluster.yaml");
  EXPECT_EQ(a.bandwidth(0, 7), 300e9);  // NVSwitch, 600 GB/s bidirectional
  EXPECT_EQ(a.link(LinkLevel::kIntraHost).sharing, LinkSharing::kPerDevice);
  EXPECT_EQ(a.device(0).spec.memory_bytes, 80ull << 30);
  EXPECT_EQ(a.device(0).spec.peak(DType::kBF16), 312e12);
  const Cluster h = load_cluster_yaml(kClusters + "/h100_ib_4node.cluster.yaml");
  EXPECT_EQ(h.num_hosts(), 4);
  EXPECT_EQ(h.bandwidth(0, 1), 450e9);
  EXPECT_EQ(h.bandwidth(3, 11), 50e9);  // 400 Gb/s NDR per GPU
  EXPECT_EQ(h.link(LinkLevel::kInterHost).sharing, LinkSharing::kPerDevice);
  EXPECT_EQ(h.device(31).name, "node3/gpu7");
  EXPECT_EQ(h.device(0).spec.peak(DType::kF8), 1979e12);  // dense FP8, twice bf16
  EXPECT_EQ(a.device(0).spec.peak(DType::kF8), 312e12);   // no FP8 on an A100: the bf16 peak
}

TEST(ClusterYaml, Fp8PeakIsSpelledF8OrFp8AndRoundTrips) {
  const std::string yaml =
      "format_version: \"1.0\"\nname: one\ndevice_types:\n  g:\n"
      "    peak_flops: {bf16: 989 TFLOPS, fp8: 1979 TFLOPS}\n    memory: 80 GiB\n"
      "    memory_bandwidth: 3.35 TB/s\nhosts:\n  - name: h\n    devices: {type: g, count: 1}\n";
  const Cluster c = parse_cluster_yaml(yaml, "one.cluster.yaml");
  EXPECT_EQ(c.device(0).spec.peak_flops[static_cast<int>(DType::kF8)], 1979e12);
  const std::string written = cluster_to_yaml(c);
  EXPECT_NE(written.find("f8: "), std::string::npos);
  expect_same_cluster(c, parse_cluster_yaml(written, "rt.cluster.yaml"));
}

TEST(ClusterYaml, OverlapFalseReadsAndRoundTrips) {
  const std::string yaml =
      "format_version: \"1.0\"\nname: two\ndevice_types:\n  a:\n"
      "    peak_flops: 10 TFLOPS\n    memory: 16 GiB\n    memory_bandwidth: 1 TB/s\n"
      "    overlap: false\n  b:\n    peak_flops: 10 TFLOPS\n    memory: 16 GiB\n"
      "    memory_bandwidth: 1 TB/s\nhosts:\n  - name: h\n"
      "    devices: [{type: a, count: 1}, {type: b, count: 1}]\n"
      "links:\n  intra_host: {latency: 1 us, bandwidth: 10 GB/s}\n";
  const Cluster c = parse_cluster_yaml(yaml, "two.cluster.yaml");
  EXPECT_FALSE(c.device(0).spec.overlap_transfers);
  EXPECT_TRUE(c.device(1).spec.overlap_transfers);  // the default
  const std::string written = cluster_to_yaml(c);
  EXPECT_NE(written.find("overlap: false"), std::string::npos);
  expect_same_cluster(c, parse_cluster_yaml(written, "rt.cluster.yaml"));
  const std::string bad =
      std::string(yaml).replace(yaml.find("overlap: false"), 14, "overlap: sure");
  try {
    parse_cluster_yaml(bad, "bad.cluster.yaml");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device_types.a.overlap"), std::string::npos) << e.what();
  }
}

TEST(ClusterYaml, ProgrammaticRoundTripWithAwkwardNumbers) {
  Cluster c;
  c.name = "odd";
  DeviceSpec g;
  g.model = "gpu-x";
  g.peak_flops[static_cast<int>(DType::kF32)] = 1e13 / 3;
  g.peak_flops[static_cast<int>(DType::kI8)] = 123456789.125;
  g.memory_bytes = 12345678901ull;
  g.memory_bandwidth = 2.0 / 3.0 * 1e12;
  g.launch_overhead = 1.0 / 7.0 * 1e-5;
  DeviceSpec g2 = g;
  g2.memory_bytes = 1ull << 34;  // same model, other spec: written under another key
  DeviceSpec cpu;
  cpu.model = "cpu";
  cpu.kind = DeviceKind::kCpu;
  cpu.peak_flops[static_cast<int>(DType::kF64)] = 5e11;
  cpu.memory_bytes = 1ull << 38;
  cpu.memory_bandwidth = 1e11;
  c.add_host("a0", g, 2);
  c.add_device(0, "a0/gpu2", g2);
  c.add_device(0, "a0/cpu0", cpu);
  c.add_host("a1", g, 3);
  c.add_device(1, "a1/cpu0", cpu);
  c.add_host("solo", g2, 1);
  c.set_link(LinkLevel::kIntraHost, {"nvlink", 1e-6 / 3, 1e10 / 3, LinkSharing::kPerPair});
  c.set_link(LinkLevel::kHostDevice, {"", 7e-6, 12e9, LinkSharing::kPerDevice});
  c.set_link(LinkLevel::kInterHost, {"ib", 2e-6, 25e9 / 8, LinkSharing::kPerHost});
  const int n = c.num_devices();
  std::vector<double> bw(size_t(n) * n), lat(size_t(n) * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      bw[size_t(i) * n + j] = i == j ? 0 : 1e9 * (1 + i) / (1 + j);
      lat[size_t(i) * n + j] = i == j ? 0 : 1e-6 * (i + j);
    }
  }
  c.set_bandwidth_matrix(bw);
  c.set_latency_matrix(lat);
  c.validate();

  const fs::path dir = fs::temp_directory_path() / "placer_cluster_yaml_test";
  fs::create_directories(dir);
  const std::string path = (dir / "odd.cluster.yaml").string();
  save_cluster_yaml(c, path);
  const Cluster back = load_cluster_yaml(path);
  expect_same_cluster(c, back);
  fs::remove_all(dir);
}

TEST(ClusterYaml, WriterIsCompact) {
  const Cluster c = load_cluster_yaml(kClusters + "/automap_config_c.cluster.yaml");
  const std::string text = cluster_to_yaml(c);
  EXPECT_NE(text.find("repeat: 4"), std::string::npos) << text;
  EXPECT_NE(text.find("bandwidth: 3.125 GB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("memory: 16 GiB"), std::string::npos) << text;
  EXPECT_NE(text.find("format_version: \"1.0\""), std::string::npos) << text;
}

TEST(ClusterYaml, CpuShorthandAndDeviceLists) {
  const Cluster c = parse_cluster_yaml(
      "format_version: 1.0\n"
      "device_types:\n"
      "  g: {peak_flops: 10 TFLOPS, memory: 16 GiB, memory_bandwidth: 1 TB/s}\n"
      "  h: {peak_flops: 20 TFLOPS, memory: 32 GiB, memory_bandwidth: 2 TB/s}\n"
      "  x: {kind: cpu, peak_flops: 1 TFLOPS, memory: 64 GiB, memory_bandwidth: 100 GB/s}\n"
      "hosts:\n"
      "  - devices: [{type: g, count: 2}, {type: h}]\n"
      "    cpu: x\n"
      "links:\n"
      "  intra_host: {bandwidth: 10 GB/s}\n"
      "  host_device: {bandwidth: 12 GB/s, latency: 1 us}\n",
      "mixed.cluster.yaml");
  EXPECT_EQ(c.name, "mixed");  // from the file name
  ASSERT_EQ(c.num_devices(), 4);
  EXPECT_EQ(c.device(2).name, "host0/gpu2");
  EXPECT_EQ(c.device(2).spec.memory_bytes, 32ull << 30);
  EXPECT_EQ(c.device(3).name, "host0/cpu0");
  EXPECT_EQ(c.link(LinkLevel::kIntraHost).latency, 0.0);
  EXPECT_EQ(c.link(LinkLevel::kHostDevice).sharing, LinkSharing::kPerDevice);
  const Cluster back = parse_cluster_yaml(cluster_to_yaml(c), "mixed.cluster.yaml");
  expect_same_cluster(c, back);
}

/// The first ```yaml block of a markdown file.
std::string first_yaml_block(const std::string& md_path) {
  std::ifstream in(md_path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t b = text.find("```yaml\n");
  const size_t e = text.find("```", b + 8);
  if (b == std::string::npos || e == std::string::npos) return "";
  return text.substr(b + 8, e - b - 8);
}

TEST(ClusterYaml, DocExampleParses) {
  const std::string doc = std::string(PLACER_SOURCE_DIR) + "/docs/formats/cluster.md";
  const Cluster c = parse_cluster_yaml(first_yaml_block(doc), doc);
  EXPECT_EQ(c.name, "two-servers");
  ASSERT_EQ(c.num_devices(), 10);  // the id table in the doc
  EXPECT_EQ(c.device(4).name, "server0/cpu0");
  EXPECT_EQ(c.device(5).name, "server1/gpu0");
  EXPECT_EQ(c.device(9).name, "server1/cpu0");
  EXPECT_EQ(c.bandwidth(0, 5), 3.125e9);
  EXPECT_EQ(c.bandwidth(4, 0), 12e9);
  EXPECT_EQ(c.device(0).spec.peak(DType::kF16), 125e12);
}

// ---- Bad input -------------------------------------------------------------------------

TEST(ClusterYamlBad, MissingFile) {
  const std::string path = kData + "/no_such.cluster.yaml";
  expect_error<FileError>([&] { load_cluster_yaml(path); },
                          path + ": cannot open cluster file (No such file or directory)");
}

TEST(ClusterYamlBad, MalformedYamlHasLineAndColumn) {
  expect_error<FormatError>([&] { load_cluster_yaml(kData + "/bad/malformed.cluster.yaml"); },
                            "malformed.cluster.yaml: line ");
  expect_error<FormatError>([&] { load_cluster_yaml(kData + "/bad/malformed.cluster.yaml"); },
                            "malformed YAML:");
  expect_error<FormatError>([] { parse_cluster_yaml("a: [1, 2\nb: 3\n", "x.yaml"); },
                            "x.yaml: line 2, column 2: malformed YAML: ");
}

TEST(ClusterYamlBad, WrongFormatVersion) {
  expect_error<FormatError>(
      [&] { load_cluster_yaml(kData + "/bad/wrong_version.cluster.yaml"); },
      "wrong_version.cluster.yaml: unsupported format_version '2.0' (this build reads 1.x)");
  expect_error<FormatError>([] { parse_cluster_yaml("name: x\n", "v.yaml"); },
                            "v.yaml: format_version: missing (this build reads 1.x");
  expect_error<FormatError>([] { parse_cluster_yaml("format_version: one\n", "v.yaml"); },
                            "unsupported format_version 'one'");
  expect_error<FormatError>([] { parse_cluster_yaml("- 1\n- 2\n", "v.yaml"); },
                            "v.yaml: expected a mapping");
}

TEST(ClusterYamlBad, ZeroBandwidthLink) {
  expect_error<ValidationError>(
      [&] { load_cluster_yaml(kData + "/bad/zero_bandwidth.cluster.yaml"); },
      "zero_bandwidth.cluster.yaml: links.inter_host.bandwidth: zero bandwidth");
  // A zero off the diagonal of the matrix names the device pair.
  expect_error<ValidationError>(
      [] {
        parse_cluster_yaml(two_hosts("links:\n"
                                     "  intra_host: {bandwidth: 10 GB/s}\n"
                                     "  inter_host: {bandwidth: 1 GB/s}\n"
                                     "bandwidth_matrix:\n"
                                     "  unit: GB/s\n"
                                     "  rows: [[-, 1, 1, 1], [1, -, 1, 1], [1, 1, -, 0],"
                                     " [1, 1, 1, -]]\n"),
                           "m.yaml");
      },
      "m.yaml: bandwidth_matrix.rows[2][3]: zero bandwidth from 'n1/gpu0' to 'n1/gpu1'");
}

TEST(ClusterYamlBad, UnknownKeys) {
  expect_error<FormatError>([&] { load_cluster_yaml(kData + "/bad/unknown_key.cluster.yaml"); },
                            "unknown_key.cluster.yaml: links.intra_host: unknown key 'bandwith' "
                            "(did you mean 'bandwidth'?)");
  expect_error<FormatError>([] { parse_cluster_yaml(two_hosts("colour: blue\n"), "k.yaml"); },
                            "k.yaml: unknown key 'colour' (expected one of: format_version, name,");
  // A newer 1.x file may carry keys this build does not know.
  std::string newer = two_hosts(
      "links: {intra_host: {bandwidth: 1 GB/s}, inter_host: {bandwidth: 1 GB/s}}\n"
      "future_key: 3\n");
  newer.replace(newer.find("\"1.0\""), 5, "\"1.2\"");
  EXPECT_EQ(parse_cluster_yaml(newer, "n.yaml").num_devices(), 4);
}

TEST(ClusterYamlBad, UnreadableQuantity) {
  expect_error<FormatError>([&] { load_cluster_yaml(kData + "/bad/bad_unit.cluster.yaml"); },
                            "bad_unit.cluster.yaml: links.inter_host.bandwidth: cannot read "
                            "'25 Gbq' as a bandwidth (use e.g. '25 Gbit/s' or '3.1 GB/s')");
}

TEST(ClusterYamlBad, InconsistentStructure) {
  expect_error<ValidationError>(
      [] { parse_cluster_yaml(two_hosts("links: {intra_host: {bandwidth: 1 GB/s}}\n"), "l.yaml"); },
      "l.yaml: links.inter_host: missing, but devices 'n0/gpu0' and 'n1/gpu0' are connected");
  expect_error<FormatError>(
      [] {
        std::string t = two_hosts("links: {intra_host: {bandwidth: 1 GB/s}}\n");
        t.replace(t.find("type: g,"), 8, "type: q,");
        parse_cluster_yaml(t, "t.yaml");
      },
      "t.yaml: hosts[0].devices.type: unknown device type 'q' (device_types has: g)");
  expect_error<FormatError>(
      [] {
        parse_cluster_yaml(two_hosts("  - {name: n1, devices: {type: g}}\n"
                                     "links: {intra_host: {bandwidth: 1 GB/s}}\n"),
                           "d.yaml");
      },
      "d.yaml: hosts[1].name: host name 'n1' is used twice");
  expect_error<FormatError>(
      [] {
        parse_cluster_yaml(two_hosts("links: {intra_host: {bandwidth: 1 GB/s}, inter_host: "
                                     "{bandwidth: 1 GB/s}}\nbandwidth_matrix: [[1, 2], [3, 4]]\n"),
                           "s.yaml");
      },
      "s.yaml: bandwidth_matrix: has 2 rows, expected 4");
  expect_error<FormatError>(
      [] {
        parse_cluster_yaml(two_hosts("links: {intra_host: {bandwidth: 1 GB/s, sharing: "
                                     "shared}, inter_host: {bandwidth: 1 GB/s}}\n"),
                           "h.yaml");
      },
      "h.yaml: links.intra_host.sharing: unknown sharing 'shared' (use per_pair, per_device or "
      "per_host)");
  expect_error<FormatError>(
      [] {
        parse_cluster_yaml(
            two_hosts(
                "links:\n  intra_host: {bandwidth: 1 GB/s}\n  intra_host: {bandwidth: 2 GB/s}\n"),
            "dup.yaml");
      },
      "dup.yaml: links.intra_host: key given twice");
}

// ---- Bounds ----------------------------------------------------------------

/// `two_hosts` with its intra-host link bandwidth set to `bw`.
std::string with_bandwidth(const std::string& bw) {
  return two_hosts("links:\n  intra_host: {bandwidth: " + bw +
                   "}\n  inter_host: {bandwidth: 10 GB/s}\n");
}

TEST(ClusterYamlBounds, HostWithoutDevicesNamesTheKey) {
  const std::string path = kData + "/bad/host_without_devices.cluster.yaml";
  expect_error<FormatError>([&] { load_cluster_yaml(path); },
                            path + ": hosts[0]: missing required key 'devices'");
}

TEST(ClusterYamlBounds, NonFiniteAndNonPhysicalBandwidths) {
  expect_error<FormatError>([] { parse_cluster_yaml(with_bandwidth("NaN"), "c.yaml"); },
                            "c.yaml: links.intra_host.bandwidth: cannot read 'NaN' as a bandwidth");
  expect_error<FormatError>([] { parse_cluster_yaml(with_bandwidth(".inf"), "c.yaml"); },
                            "c.yaml: links.intra_host.bandwidth: cannot read '.inf'");
  for (const std::string bw : {"1e308", "9.2e18"}) {
    expect_error<FormatError>([&] { parse_cluster_yaml(with_bandwidth(bw), "c.yaml"); },
                              "c.yaml: links.intra_host.bandwidth: '" + bw +
                                  "' is out of physical bounds: a bandwidth must be 0 or between "
                                  "1 B/s and 100 TB/s");
  }
  // Plain numbers of a matrix in its unit are checked the same way.
  std::string text = two_hosts("links:\n  intra_host: {bandwidth: 1 GB/s}\n"
                               "  inter_host: {bandwidth: 1 GB/s}\n"
                               "bandwidth_matrix:\n  unit: GB/s\n  rows:\n");
  for (int i = 0; i < 4; ++i) text += i == 1 ? "    - [1, ~, NaN, 1]\n" : "    - [~, 1, 1, 1]\n";
  expect_error<FormatError>([&] { parse_cluster_yaml(text, "m.yaml"); },
                            "m.yaml: bandwidth_matrix.rows[1][2]: cannot read 'NaN GB/s'");
}

TEST(ClusterYamlBounds, DeviceCountIsBoundedBeforeAllocating) {
  std::string text = two_hosts("links:\n  intra_host: {bandwidth: 1 GB/s}\n");
  // One host of 100000 devices; then the largest repeat x count the keys allow (2^36).
  const std::string one = "  - {name: n, repeat: 2, devices: {type: g, count: 2}}\n";
  std::string huge = text;
  huge.replace(huge.find(one), one.size(), "  - {name: n, devices: {type: g, count: 200000}}\n");
  expect_error<ValidationError>(
      [&] { parse_cluster_yaml(huge, "h.yaml"); },
      "h.yaml: hosts[0]: brings the cluster to 200000 devices, more than the 131072 placer "
      "supports");
  std::string widest = text;
  widest.replace(widest.find(one), one.size(),
                 "  - {name: n, repeat: 65536, devices: {type: g, count: 1048576}}\n");
  expect_error<ValidationError>([&] { parse_cluster_yaml(widest, "w.yaml"); },
                                "w.yaml: hosts[0]: brings the cluster to 68719476736 devices");
  // Exactly the limit loads.
  std::string limit = text;
  limit.replace(limit.find(one), one.size(),
                "  - {name: n, repeat: 64, devices: {type: g, count: 2048}}\n");
  limit += "  inter_host: {bandwidth: 1 GB/s}\n";
  EXPECT_EQ(parse_cluster_yaml(limit, "l.yaml").num_devices(), 131072);
}

TEST(ClusterYamlBounds, PerPairMatrixKeepsTheSmallerLimit) {
  // 4098 devices: fine with links per level, refused with a matrix before its rows are read.
  std::string text = two_hosts(
      "links:\n  intra_host: {bandwidth: 1 GB/s}\n"
      "  inter_host: {bandwidth: 1 GB/s}\n");
  const std::string one = "  - {name: n, repeat: 2, devices: {type: g, count: 2}}\n";
  text.replace(text.find(one), one.size(),
               "  - {name: n, repeat: 2, devices: {type: g, count: 2049}}\n");
  EXPECT_EQ(parse_cluster_yaml(text, "l.yaml").num_devices(), 4098);
  expect_error<ValidationError>(
      [&] { parse_cluster_yaml(text + "bandwidth_matrix:\n  - [1]\n", "m.yaml"); },
      "m.yaml: bandwidth_matrix: a per-pair matrix allows at most 4096 devices, the cluster "
      "has 4098 (placer keeps ~16 B per device pair: ~268 MB; without a matrix, links per "
      "level allow 131072)");
}

}  // namespace
}  // namespace placer
