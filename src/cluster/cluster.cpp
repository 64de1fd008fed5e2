#include "src/cluster/cluster.h"

#include "src/cluster/cluster_limits.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/util/error.h"

namespace placer {

const char* to_string(DeviceKind k) { return k == DeviceKind::kCpu ? "cpu" : "gpu"; }
const char* to_string(LinkSharing s) {
  switch (s) {
    case LinkSharing::kPerPair: return "per_pair";
    case LinkSharing::kPerDevice: return "per_device";
    case LinkSharing::kPerHost: return "per_host";
  }
  return "per_pair";
}
const char* to_string(LinkLevel l) {
  switch (l) {
    case LinkLevel::kSame: return "same";
    case LinkLevel::kIntraHost: return "intra_host";
    case LinkLevel::kHostDevice: return "host_device";
    case LinkLevel::kInterHost: return "inter_host";
  }
  return "same";
}

double DeviceSpec::peak(DType t) const {
  double p = peak_flops[static_cast<int>(t)];
  if (p > 0) return p;
  // FP8 GEMMs without an f8 peak run at the 16-bit one (no speed-up).
  if (t == DType::kF8) {
    for (DType h : {DType::kBF16, DType::kF16}) {
      if (peak_flops[static_cast<int>(h)] > 0) return peak_flops[static_cast<int>(h)];
    }
  }
  p = peak_flops[static_cast<int>(DType::kF32)];
  if (p > 0) return p;
  return *std::max_element(peak_flops.begin(), peak_flops.end());
}

int Cluster::add_host(const std::string& host_name, const DeviceSpec& spec, int count) {
  Host h;
  h.name = host_name;
  hosts_.push_back(h);
  const int hid = static_cast<int>(hosts_.size()) - 1;
  const char* prefix = spec.kind == DeviceKind::kCpu ? "cpu" : "gpu";
  for (int i = 0; i < count; ++i) {
    add_device(hid, host_name + "/" + prefix + std::to_string(i), spec);
  }
  return hid;
}

int Cluster::add_device(int host, const std::string& device_name, const DeviceSpec& spec) {
  PLACER_CHECK(host >= 0 && host < num_hosts(), "add_device: no host #" << host);
  Device d;
  d.name = device_name;
  d.host = host;
  d.local_index = static_cast<int>(hosts_[host].devices.size());
  d.spec = spec;
  devices_.push_back(d);
  const int id = static_cast<int>(devices_.size()) - 1;
  hosts_[host].devices.push_back(id);
  return id;
}

void Cluster::set_link(LinkLevel level, const LinkSpec& spec) {
  links_[static_cast<int>(level)] = spec;
}

void Cluster::set_bandwidth_matrix(std::vector<double> m) { bw_matrix_ = std::move(m); }
void Cluster::set_latency_matrix(std::vector<double> m) { lat_matrix_ = std::move(m); }

int Cluster::find_device(const std::string& device_name) const {
  for (int i = 0; i < num_devices(); ++i) {
    if (devices_[i].name == device_name) return i;
  }
  return -1;
}

LinkLevel Cluster::level(int a, int b) const {
  if (a == b) return LinkLevel::kSame;
  const Device& da = devices_[a];
  const Device& db = devices_[b];
  if (da.host != db.host) {
    return topology_.same_domain(da.host, db.host) ? LinkLevel::kIntraHost : LinkLevel::kInterHost;
  }
  if (da.spec.kind != db.spec.kind) return LinkLevel::kHostDevice;
  return LinkLevel::kIntraHost;
}

bool Cluster::crosses_spine(int a, int b) const {
  if (level(a, b) != LinkLevel::kInterHost) return false;
  const Device& da = devices_[a];
  const Device& db = devices_[b];
  return topology_.crosses_spine(da.host, da.local_index, db.host, db.local_index);
}

std::array<bool, kNumLinkLevels> link_levels_in_use(const Cluster& c) {
  std::array<bool, kNumLinkLevels> used{};
  int hosts_with_devices = 0;
  for (const Host& h : c.hosts()) {
    int per_kind[2] = {0, 0};
    for (int id : h.devices) ++per_kind[static_cast<int>(c.device(id).spec.kind)];
    if (per_kind[0] > 1 || per_kind[1] > 1) used[static_cast<int>(LinkLevel::kIntraHost)] = true;
    if (per_kind[0] > 0 && per_kind[1] > 0) used[static_cast<int>(LinkLevel::kHostDevice)] = true;
    hosts_with_devices += !h.devices.empty();
  }
  used[static_cast<int>(LinkLevel::kInterHost)] = hosts_with_devices > 1;
  const Topology& t = c.topology();
  if (t.nvlink_domain_hosts > 1 && hosts_with_devices > 1) {
    // Hosts with devices in one domain talk over intra_host; in several, over inter_host.
    int first = -1, last = -1;
    for (int h = 0; h < c.num_hosts(); ++h) {
      if (c.host(h).devices.empty()) continue;
      if (first < 0) first = h;
      last = h;
    }
    used[static_cast<int>(LinkLevel::kIntraHost)] = true;
    used[static_cast<int>(LinkLevel::kInterHost)] = !t.same_domain(first, last);
  }
  return used;
}

double Cluster::bandwidth(int a, int b) const {
  if (a == b) return std::numeric_limits<double>::infinity();
  if (!bw_matrix_.empty()) return bw_matrix_[static_cast<size_t>(a) * num_devices() + b];
  const double bw = link(level(a, b)).bandwidth;
  return crosses_spine(a, b) ? bw / topology_.oversubscription : bw;
}

double Cluster::latency(int a, int b) const {
  if (a == b) return 0;
  if (!lat_matrix_.empty()) return lat_matrix_[static_cast<size_t>(a) * num_devices() + b];
  const double lat = link(level(a, b)).latency;
  return crosses_spine(a, b) ? lat + topology_.spine_latency : lat;
}

double Cluster::transfer_time(int a, int b, uint64_t bytes) const {
  if (a == b) return 0;
  return latency(a, b) + static_cast<double>(bytes) / bandwidth(a, b);
}

void Cluster::validate_topology(const std::string& where) const {
  const Topology& t = topology_;
  auto fail = [&](const std::string& why) { throw ValidationError(where + ": topology: " + why); };
  if (t.nvlink_domain_hosts < 1) fail("nvlink_domain_hosts must be >= 1");
  if (t.hosts_per_leaf < 0) fail("hosts_per_leaf must be >= 0");
  if (!(t.oversubscription >= 1 && std::isfinite(t.oversubscription))) {
    fail("oversubscription must be a finite number >= 1");
  }
  if (!(t.spine_latency >= 0 && std::isfinite(t.spine_latency))) {
    fail("spine_latency must be finite and >= 0");
  }
  if (t.trivial()) return;
  if (!bw_matrix_.empty() || !lat_matrix_.empty()) {
    fail("cannot be combined with a per-pair bandwidth or latency matrix");
  }
  for (const Device& d : devices_) {
    if (d.spec.kind == DeviceKind::kCpu) fail("needs GPUs only, but '" + d.name + "' is a CPU");
  }
}

void Cluster::validate() const {
  const std::string where = "cluster '" + name + "'";
  if (devices_.empty()) throw ValidationError(where + ": no devices");
  if (num_devices() > kMaxDevices) {
    throw ValidationError(where + ": " + std::to_string(num_devices()) +
                          " devices, more than the " + std::to_string(kMaxDevices) +
                          " placer supports");
  }
  const bool matrix = !bw_matrix_.empty() || !lat_matrix_.empty();
  if (matrix && num_devices() > kMaxMatrixDevices) {
    throw ValidationError(where + ": " + std::to_string(num_devices()) +
                          " devices, more than the " + std::to_string(kMaxMatrixDevices) +
                          " a per-pair bandwidth or latency matrix allows");
  }
  for (const Device& d : devices_) {
    if (!(d.spec.peak(DType::kF32) > 0 && std::isfinite(d.spec.peak(DType::kF32)))) {
      throw ValidationError(where + ": device '" + d.name + "' has no peak FLOP/s");
    }
    if (d.spec.memory_bytes == 0) {
      throw ValidationError(where + ": device '" + d.name + "' has zero memory");
    }
    if (!(d.spec.memory_bandwidth > 0 && std::isfinite(d.spec.memory_bandwidth))) {
      throw ValidationError(where + ": device '" + d.name + "' has no memory bandwidth");
    }
  }
  validate_topology(where);
  const size_t n = devices_.size();
  auto check_matrix = [&](const std::vector<double>& m, const char* what, bool positive) {
    if (m.empty()) return;
    if (m.size() != n * n) {
      throw ValidationError(where + ": " + what + " matrix has " + std::to_string(m.size()) +
                            " entries, expected " + std::to_string(n) + "x" + std::to_string(n));
    }
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) {
        if (i == j) continue;
        const double v = m[i * n + j];
        if (!std::isfinite(v) || (positive ? !(v > 0) : !(v >= 0))) {
          throw ValidationError(where + ": " + what + " from '" + devices_[i].name + "' to '" +
                                devices_[j].name + "' is " + std::to_string(v) +
                                (positive ? " (must be > 0)" : " (must be >= 0)"));
        }
      }
    }
  };
  check_matrix(bw_matrix_, "bandwidth", true);
  check_matrix(lat_matrix_, "latency", false);
  if (bw_matrix_.empty()) {
    // Every level that some device pair uses needs a positive bandwidth.
    const std::array<bool, kNumLinkLevels> used = link_levels_in_use(*this);
    for (int l = 1; l < kNumLinkLevels; ++l) {
      if (used[l] && !(links_[l].bandwidth > 0 && std::isfinite(links_[l].bandwidth))) {
        throw ValidationError(where + ": link level '" + to_string(static_cast<LinkLevel>(l)) +
                              "' is used but has bandwidth " +
                              std::to_string(links_[l].bandwidth) + " (must be > 0)");
      }
      if (used[l] && !(links_[l].latency >= 0 && std::isfinite(links_[l].latency))) {
        throw ValidationError(where + ": link level '" + to_string(static_cast<LinkLevel>(l)) +
                              "' has a negative or non-finite latency");
      }
    }
  }
}

}  // namespace placer
