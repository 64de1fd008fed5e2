#pragma once
// The cluster: hosts x devices, device specs and a hierarchical interconnect.
//
// Links come in levels: between two devices of one host (NVLink / PCIe), between a host's
// CPU device and its accelerators (PCIe), and between hosts (Ethernet / InfiniBand).
// Each level has a latency alpha (s) and a bandwidth beta (B/s) and a sharing rule that
// says which transfers queue behind each other. An explicit per-pair bandwidth / latency
// matrix, when given, overrides the levels' numbers pair by pair (e.g. DGX-1's hybrid
// cube-mesh, where only some GPU pairs have NVLink).
//
// Above the host, an optional Topology groups hosts: NVLink domains larger than a host
// (NVL72), whose GPUs talk over the intra-host link; leaf switches joined by an
// oversubscribed spine; rail-optimized fabrics. Routes follow from host and device indices,
// so nothing is stored per device pair.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/types.h"

namespace placer {

enum class DeviceKind : uint8_t { kGpu, kCpu };
const char* to_string(DeviceKind k);

/// Performance and capacity of one device model.
struct DeviceSpec {
  std::string model;                           ///< e.g. "V100-SXM2-32GB"
  DeviceKind kind = DeviceKind::kGpu;
  std::array<double, kNumDTypes> peak_flops{};  ///< FLOP/s per dtype; 0 = not listed
  double memory_bandwidth = 0;                 ///< B/s
  uint64_t memory_bytes = 0;                   ///< capacity
  double launch_overhead = 0;                  ///< s per kernel / op
  /// false: the device has no copy engines, so its sends and receives occupy it (they add
  /// to its compute instead of overlapping it); cluster key `overlap: false`.
  bool overlap_transfers = true;

  /// Peak FLOP/s for `t`; falls back to f32's (then to the largest listed) when absent.
  double peak(DType t) const;
};

struct Device {
  std::string name;     ///< unique, e.g. "host0/gpu3"
  int host = 0;         ///< index into Cluster::hosts()
  int local_index = 0;  ///< index among the host's devices
  DeviceSpec spec;
};

struct Host {
  std::string name;
  std::vector<int> devices;  ///< global device ids
};

/// How concurrent transfers on one level share it (the simulator queues accordingly).
enum class LinkSharing : uint8_t {
  kPerPair,    ///< each ordered device pair has its own channel (NVLink mesh)
  kPerDevice,  ///< each device has one send and one receive port (PCIe; one NIC per GPU)
  kPerHost,    ///< each host has one send and one receive port (a NIC shared by its devices)
};
const char* to_string(LinkSharing s);

/// The kind of path between two devices.
enum class LinkLevel : uint8_t { kSame = 0, kIntraHost = 1, kHostDevice = 2, kInterHost = 3 };
inline constexpr int kNumLinkLevels = 4;
const char* to_string(LinkLevel l);

struct LinkSpec {
  std::string type;            ///< "nvlink", "pcie", "ethernet", "infiniband", ... (informational)
  double latency = 0;          ///< alpha, seconds
  double bandwidth = 0;        ///< beta, bytes / second (per direction)
  LinkSharing sharing = LinkSharing::kPerPair;
};

/// How hosts are grouped above the host level; the defaults are one host per NVLink domain
/// and one non-blocking fabric. Hosts are grouped in order: domain = host / domain size,
/// leaf = host / hosts per leaf.
struct Topology {
  int nvlink_domain_hosts = 1;  ///< hosts per NVLink domain (GPUs of one domain: intra_host link)
  int hosts_per_leaf = 0;       ///< hosts below one leaf switch; 0 = every host on one leaf
  double oversubscription = 1;  ///< traffic across the spine gets inter_host bandwidth / this
  double spine_latency = 0;     ///< seconds added to the inter_host latency across the spine
  bool rails = false;           ///< rail-optimized: GPU i of every host on rail i; only same-rail
                                ///< traffic between hosts of one leaf stays in the leaf

  /// True for the defaults (the cluster behaves as one without a topology).
  bool trivial() const {
    return nvlink_domain_hosts == 1 && hosts_per_leaf == 0 && oversubscription == 1 &&
           spine_latency == 0 && !rails;
  }
  /// Whether a transfer between local device `la` of host `ha` and `lb` of host `hb` (two
  /// hosts of different NVLink domains) crosses the spine.
  bool crosses_spine(int ha, int la, int hb, int lb) const {
    if (hosts_per_leaf > 0 && ha / hosts_per_leaf != hb / hosts_per_leaf) return true;
    return rails && la != lb;
  }
  bool same_domain(int ha, int hb) const {
    return ha / nvlink_domain_hosts == hb / nvlink_domain_hosts;
  }
};

class Cluster {
 public:
  Cluster() = default;

  std::string name;

  /// Adds a host with `count` devices of `spec`; returns the host index.
  int add_host(const std::string& host_name, const DeviceSpec& spec, int count);
  /// Adds one device to an existing host (e.g. a CPU device); returns its global id.
  int add_device(int host, const std::string& device_name, const DeviceSpec& spec);

  void set_link(LinkLevel level, const LinkSpec& spec);
  const LinkSpec& link(LinkLevel level) const { return links_[static_cast<int>(level)]; }

  void set_topology(const Topology& t) { topology_ = t; }
  const Topology& topology() const { return topology_; }

  /// Per-pair overrides, row-major num_devices() x num_devices(); empty = none.
  /// Diagonal entries are ignored. Set after all devices are added.
  void set_bandwidth_matrix(std::vector<double> m);
  void set_latency_matrix(std::vector<double> m);
  const std::vector<double>& bandwidth_matrix() const { return bw_matrix_; }
  const std::vector<double>& latency_matrix() const { return lat_matrix_; }

  int num_devices() const { return static_cast<int>(devices_.size()); }
  int num_hosts() const { return static_cast<int>(hosts_.size()); }
  const Device& device(int id) const { return devices_[id]; }
  const std::vector<Device>& devices() const { return devices_; }
  const Host& host(int id) const { return hosts_[id]; }
  const std::vector<Host>& hosts() const { return hosts_; }
  /// Device id by name; -1 when absent.
  int find_device(const std::string& device_name) const;

  /// The level of the path from a to b; two GPUs of one NVLink domain are kIntraHost.
  LinkLevel level(int a, int b) const;
  /// Whether the path from a to b crosses the spine (Topology::crosses_spine).
  bool crosses_spine(int a, int b) const;
  /// Bandwidth (B/s) and latency (s) of a transfer from a to b; infinite / 0 for a == b.
  /// Across the spine: the inter_host bandwidth / oversubscription, latency + spine latency.
  double bandwidth(int a, int b) const;
  double latency(int a, int b) const;
  /// Seconds to move `bytes` from a to b on an idle path: latency + bytes / bandwidth.
  double transfer_time(int a, int b, uint64_t bytes) const;

  /// Throws ValidationError on an unusable cluster: no devices, a device without peak
  /// FLOP/s or memory, a link level in use with zero/negative bandwidth, a matrix of the
  /// wrong size or with a zero entry off the diagonal (naming the device pair), a topology
  /// out of range or combined with a matrix or CPU devices.
  void validate() const;

 private:
  void validate_topology(const std::string& where) const;

  std::vector<Host> hosts_;
  std::vector<Device> devices_;
  std::array<LinkSpec, kNumLinkLevels> links_{};
  std::vector<double> bw_matrix_, lat_matrix_;
  Topology topology_;
};

}  // namespace placer
