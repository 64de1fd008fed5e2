#include "src/io/cluster_yaml.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "src/cluster/cluster_limits.h"
#include "src/io/units.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer {

namespace {

constexpr const char* kLevelKeys[kNumLinkLevels] = {"", "intra_host", "host_device", "inter_host"};

/// Default sharing per level: NVLink meshes have a channel per pair, PCIe a port per
/// device, a host's NIC is shared by its devices.
LinkSharing default_sharing(LinkLevel l) {
  switch (l) {
    case LinkLevel::kHostDevice:
      return LinkSharing::kPerDevice;
    case LinkLevel::kInterHost:
      return LinkSharing::kPerHost;
    default:
      return LinkSharing::kPerPair;
  }
}

bool parse_sharing(const std::string& s, LinkSharing* out) {
  if (s == "per_pair")
    *out = LinkSharing::kPerPair;
  else if (s == "per_device")
    *out = LinkSharing::kPerDevice;
  else if (s == "per_host")
    *out = LinkSharing::kPerHost;
  else
    return false;
  return true;
}

std::string file_stem(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  for (const char* ext : {".cluster.yaml", ".yaml", ".yml"}) {
    const std::string e = ext;
    if (base.size() > e.size() && base.compare(base.size() - e.size(), e.size(), e) == 0) {
      return base.substr(0, base.size() - e.size());
    }
  }
  return base;
}

DeviceSpec read_device_type(const YamlReader& r, const std::string& type_name, const YAML::Node& n,
                            const std::string& field) {
  r.check_keys(
      n, field,
      {"kind", "model", "peak_flops", "memory", "memory_bandwidth", "launch_overhead", "overlap"});
  DeviceSpec s;
  s.model = type_name;
  if (n["model"]) s.model = r.scalar(n["model"], field_join(field, "model"));
  if (n["kind"]) {
    const std::string k = r.scalar(n["kind"], field_join(field, "kind"));
    if (k == "gpu")
      s.kind = DeviceKind::kGpu;
    else if (k == "cpu")
      s.kind = DeviceKind::kCpu;
    else
      r.fail(field_join(field, "kind"),
             "unknown device kind " + quote_short(k) + " (use gpu or cpu)");
  }
  const std::string pf = field_join(field, "peak_flops");
  const YAML::Node peak = r.required(n, "peak_flops", field);
  if (peak.IsScalar()) {
    // A single number is the f32 peak.
    s.peak_flops[static_cast<int>(DType::kF32)] = r.to_quantity(peak, QuantityKind::kFlops, pf);
  } else {
    r.expect_map(peak, pf);
    std::set<int> seen;
    for (auto it = peak.begin(); it != peak.end(); ++it) {
      const std::string key = r.scalar(it->first, pf);
      const std::string f = field_join(pf, key);
      DType t;
      if (!parse_dtype(key, &t)) {
        r.fail(pf, "unknown dtype " + quote_short(key) + " (use f64, f32, f16, bf16, i8, ...)");
      }
      if (!seen.insert(static_cast<int>(t)).second) r.fail(f, "dtype given twice");
      const double v = r.to_quantity(it->second, QuantityKind::kFlops, f);
      if (!(v > 0)) r.fail(f, "must be > 0 (leave the dtype out instead)");
      s.peak_flops[static_cast<int>(t)] = v;
    }
    if (seen.empty()) r.fail(pf, "no dtype listed");
  }
  s.memory_bytes = r.to_bytes(r.required(n, "memory", field), field_join(field, "memory"));
  if (s.memory_bytes == 0) r.fail(field_join(field, "memory"), "must be > 0");
  s.memory_bandwidth =
      r.to_quantity(r.required(n, "memory_bandwidth", field), QuantityKind::kBandwidth,
                    field_join(field, "memory_bandwidth"));
  if (!(s.memory_bandwidth > 0)) r.fail(field_join(field, "memory_bandwidth"), "must be > 0");
  if (n["launch_overhead"]) {
    s.launch_overhead = r.to_quantity(n["launch_overhead"], QuantityKind::kTime,
                                      field_join(field, "launch_overhead"));
  }
  if (n["overlap"]) s.overlap_transfers = r.to_bool(n["overlap"], field_join(field, "overlap"));
  return s;
}

LinkSpec read_link(const YamlReader& r, LinkLevel level, const YAML::Node& n,
                   const std::string& field) {
  r.check_keys(n, field, {"type", "latency", "bandwidth", "sharing"});
  LinkSpec l;
  l.sharing = default_sharing(level);
  if (n["type"]) l.type = r.scalar(n["type"], field_join(field, "type"));
  const std::string bf = field_join(field, "bandwidth");
  l.bandwidth = r.to_quantity(r.required(n, "bandwidth", field), QuantityKind::kBandwidth, bf);
  if (!(l.bandwidth > 0)) r.fail_validation(bf, "zero bandwidth (a link needs bandwidth > 0)");
  if (n["latency"]) {
    l.latency = r.to_quantity(n["latency"], QuantityKind::kTime, field_join(field, "latency"));
  }
  if (n["sharing"]) {
    const std::string s = r.scalar(n["sharing"], field_join(field, "sharing"));
    if (!parse_sharing(s, &l.sharing)) {
      r.fail(field_join(field, "sharing"),
             "unknown sharing " + quote_short(s) + " (use per_pair, per_device or per_host)");
    }
  }
  return l;
}

/// The `topology` map (format 1.1): NVLink domains, leaf / spine fabric, rails.
Topology read_topology(const YamlReader& r, const YAML::Node& n, const std::string& field) {
  r.check_keys(
      n, field,
      {"nvlink_domain_hosts", "hosts_per_leaf", "oversubscription", "spine_latency", "rails"});
  Topology t;
  auto f = [&](const char* key) { return field_join(field, key); };
  if (n["nvlink_domain_hosts"]) {
    t.nvlink_domain_hosts =
        int(r.to_int(n["nvlink_domain_hosts"], f("nvlink_domain_hosts"), 1, kMaxDevices));
  }
  if (n["hosts_per_leaf"]) {
    t.hosts_per_leaf = int(r.to_int(n["hosts_per_leaf"], f("hosts_per_leaf"), 0, kMaxDevices));
  }
  if (n["oversubscription"]) {
    t.oversubscription = r.to_double(n["oversubscription"], f("oversubscription"));
    if (!(t.oversubscription >= 1 && t.oversubscription <= 1e6)) {
      r.fail(f("oversubscription"),
             "must be between 1 and 1e6 (bandwidth across the spine "
             "is the inter_host bandwidth / this)");
    }
  }
  if (n["spine_latency"]) {
    t.spine_latency = r.to_quantity(n["spine_latency"], QuantityKind::kTime, f("spine_latency"));
  }
  if (n["rails"]) t.rails = r.to_bool(n["rails"], f("rails"));
  return t;
}

/// The minor version of a format_version already checked ("1.1" -> 1, "1" -> 0).
int format_minor(const YamlReader& r, const YAML::Node& root) {
  const std::string v = r.scalar(root["format_version"], "format_version");
  const size_t dot = v.find('.');
  return dot == std::string::npos ? 0 : std::atoi(v.c_str() + dot + 1);
}

/// A matrix: a list of rows, or {unit: GB/s, rows: [...]} whose plain numbers are in
/// `unit`. "-" (or ~) on the diagonal reads as 0.
std::vector<double> read_matrix(const YamlReader& r, const YAML::Node& n, QuantityKind k,
                                const std::string& field, const Cluster& c) {
  // Note: assigning a YAML::Node overwrites the node it refers to, hence reset().
  YAML::Node rows;
  rows.reset(n);
  std::string unit;
  if (n.IsMap()) {
    r.check_keys(n, field, {"unit", "rows"});
    rows.reset(r.required(n, "rows", field));
    if (n["unit"]) {
      unit = r.scalar(n["unit"], field_join(field, "unit"));
      double scale = 0;
      if (!unit_value(unit, k, &scale)) {
        r.fail(field_join(field, "unit"),
               "unknown unit " + quote_short(unit) + " for " + quantity_description(k));
      }
    }
  }
  const std::string rf = n.IsMap() ? field_join(field, "rows") : field;
  r.expect_sequence(rows, rf);
  const size_t dev = static_cast<size_t>(c.num_devices());
  if (c.num_devices() > kMaxMatrixDevices) {
    // Checked before reading rows: the matrix is kept whole, 8 B per device pair.
    r.fail_validation(
        field, "a per-pair matrix allows at most " + std::to_string(kMaxMatrixDevices) +
                   " devices, the cluster has " + std::to_string(dev) +
                   " (placer keeps ~16 B per device pair: ~" +
                   format_bytes(uint64_t(matrix_table_bytes(double(dev)) / 1e6) * 1000000ull) +
                   "; without a matrix, links per level allow " + std::to_string(kMaxDevices) +
                   ")");
  }
  if (rows.size() != dev) {
    r.fail(rf, "has " + std::to_string(rows.size()) + " rows, expected " + std::to_string(dev) +
                   " (one per device, in declaration order)");
  }
  std::vector<double> m(dev * dev, 0.0);
  for (size_t i = 0; i < dev; ++i) {
    const std::string fi = field_index(rf, i);
    r.expect_sequence(rows[i], fi);
    if (rows[i].size() != dev) {
      r.fail(fi, "has " + std::to_string(rows[i].size()) + " entries, expected " +
                     std::to_string(dev) + " (row of device '" + c.device(int(i)).name + "')");
    }
    for (size_t j = 0; j < dev; ++j) {
      const std::string fij = field_index(fi, j);
      const YAML::Node e = rows[i][j];
      if (i == j && (e.IsNull() || (e.IsScalar() && e.Scalar() == "-"))) continue;
      const std::string text = r.scalar(e, fij);
      // A plain number is in `unit` ("3.125" with GB/s reads as "3.125 GB/s"), checked for
      // finiteness and bounds like any quantity.
      double plain = 0;
      const bool in_unit = !unit.empty() && parse_double(text, &plain);
      const double v = parse_quantity(in_unit ? text + " " + unit : text, k, r.file(), fij);
      if (i != j && k == QuantityKind::kBandwidth && !(v > 0)) {
        r.fail_validation(fij, "zero bandwidth from '" + c.device(int(i)).name + "' to '" +
                                   c.device(int(j)).name + "' (must be > 0)");
      }
      m[i * dev + j] = v;
    }
  }
  return m;
}

void read_hosts(const YamlReader& r, const YAML::Node& hosts,
                const std::map<std::string, DeviceSpec>& types, Cluster* c) {
  r.expect_sequence(hosts, "hosts");
  if (hosts.size() == 0) r.fail("hosts", "no hosts listed");
  std::set<std::string> host_names;
  std::string type_list;
  for (const auto& kv : types) type_list += (type_list.empty() ? "" : ", ") + kv.first;
  for (size_t hi = 0; hi < hosts.size(); ++hi) {
    const std::string hf = field_index("hosts", hi);
    const YAML::Node h = hosts[hi];
    r.check_keys(h, hf, {"name", "repeat", "devices", "cpu"});
    // The device list: {type, count}, a list of those, plus the `cpu: <type>` shorthand.
    std::vector<std::pair<const DeviceSpec*, int>> groups;
    auto add_group = [&](const YAML::Node& g, const std::string& f) {
      r.check_keys(g, f, {"type", "count"});
      const std::string t = r.scalar(r.required(g, "type", f), field_join(f, "type"));
      auto it = types.find(t);
      if (it == types.end()) {
        r.fail(field_join(f, "type"),
               "unknown device type " + quote_short(t) + " (device_types has: " + type_list + ")");
      }
      int count = 1;
      if (g["count"]) count = int(r.to_int(g["count"], field_join(f, "count"), 1, 1 << 20));
      groups.emplace_back(&it->second, count);
    };
    const YAML::Node devs = h["devices"];  // invalid (not just undefined) when absent
    const std::string df = field_join(hf, "devices");
    if (!devs.IsDefined() || devs.IsNull()) {
      // no accelerators: only the `cpu` device, checked below
    } else if (devs.IsMap()) {
      add_group(devs, df);
    } else if (devs.IsSequence()) {
      for (size_t k = 0; k < devs.size(); ++k) add_group(devs[k], field_index(df, k));
    } else {
      r.fail(df, "expected {type: <device type>, count: <n>} or a list of those");
    }
    if (h["cpu"]) {
      const std::string t = r.scalar(h["cpu"], field_join(hf, "cpu"));
      auto it = types.find(t);
      if (it == types.end()) {
        r.fail(field_join(hf, "cpu"),
               "unknown device type " + quote_short(t) + " (device_types has: " + type_list + ")");
      }
      groups.emplace_back(&it->second, 1);
    }
    if (!devs.IsDefined() && !h["cpu"]) r.fail(hf, "missing required key 'devices'");

    int repeat = 1;
    const bool repeated = bool(h["repeat"]);
    if (repeated) repeat = int(r.to_int(h["repeat"], field_join(hf, "repeat"), 1, 1 << 16));
    std::string base = "host";
    if (h["name"]) {
      base = r.scalar(h["name"], field_join(hf, "name"));
      if (base.empty() || base.find('/') != std::string::npos) {
        r.fail(field_join(hf, "name"), "host names must be non-empty and contain no '/'");
      }
    }
    // Bound the device count before allocating any: the sums stay far below int64
    // overflow (count <= 2^20, repeat <= 2^16).
    int64_t per_host = 0;
    for (const auto& g : groups) per_host += g.second;
    const int64_t total = c->num_devices() + per_host * repeat;
    if (total > kMaxDevices) {
      r.fail_validation(hf, "brings the cluster to " + std::to_string(total) +
                                " devices, more than the " + std::to_string(kMaxDevices) +
                                " placer supports");
    }
    for (int k = 0; k < repeat; ++k) {
      std::string name = base;
      if (repeated)
        name += std::to_string(k);
      else if (!h["name"])
        name += std::to_string(c->num_hosts());
      if (!host_names.insert(name).second) {
        r.fail(field_join(hf, "name"), "host name " + quote_short(name) + " is used twice");
      }
      const int host = c->add_host(name, DeviceSpec{}, 0);
      int per_kind[2] = {0, 0};
      for (const auto& g : groups) {
        const int kind = static_cast<int>(g.first->kind);
        for (int d = 0; d < g.second; ++d) {
          c->add_device(host,
                        name + "/" + to_string(g.first->kind) + std::to_string(per_kind[kind]++),
                        *g.first);
        }
      }
    }
  }
}

}  // namespace

namespace {
Cluster read_cluster(const YAML::Node& root, const std::string& filename);
}  // namespace

Cluster parse_cluster_yaml(const std::string& text, const std::string& filename) {
  const YAML::Node root = parse_yaml_text(text, filename);
  return with_yaml_errors(filename, [&] { return read_cluster(root, filename); });
}

namespace {

Cluster read_cluster(const YAML::Node& root, const std::string& filename) {
  YamlReader r(filename);
  r.check_format_version(root, kClusterFormatMajor, kClusterFormatMinor);
  r.check_keys(root, "",
               {"format_version", "name", "description", "device_types", "hosts", "links",
                "topology", "bandwidth_matrix", "latency_matrix"});
  Cluster c;
  c.name = root["name"] ? r.scalar(root["name"], "name") : file_stem(filename);

  const YAML::Node types_node = r.required(root, "device_types", "");
  r.expect_map(types_node, "device_types");
  std::map<std::string, DeviceSpec> types;
  for (auto it = types_node.begin(); it != types_node.end(); ++it) {
    const std::string t = r.scalar(it->first, "device_types");
    const std::string f = field_join("device_types", t);
    if (types.count(t)) r.fail(f, "device type given twice");
    types[t] = read_device_type(r, t, it->second, f);
  }
  if (types.empty()) r.fail("device_types", "no device types defined");

  read_hosts(r, r.required(root, "hosts", ""), types, &c);
  if (root["topology"]) {
    if (format_minor(r, root) < 1) {
      r.fail("topology", "needs format_version \"1.1\" (a 1.0 file has no topology)");
    }
    c.set_topology(read_topology(r, root["topology"], "topology"));
  }

  const YAML::Node links = root["links"];
  bool given[kNumLinkLevels] = {true, false, false, false};
  if (links.IsDefined() && !links.IsNull()) {
    r.check_keys(links, "links", {"intra_host", "host_device", "inter_host"});
    for (int l = 1; l < kNumLinkLevels; ++l) {
      const YAML::Node n = links[kLevelKeys[l]];
      if (!n.IsDefined()) continue;
      const std::string f = field_join("links", kLevelKeys[l]);
      c.set_link(static_cast<LinkLevel>(l), read_link(r, static_cast<LinkLevel>(l), n, f));
      given[l] = true;
    }
  }
  // Every level some device pair uses must be described (its sharing and latency apply
  // even under a bandwidth matrix).
  const std::array<bool, kNumLinkLevels> used = link_levels_in_use(c);
  for (int l = 1; l < kNumLinkLevels; ++l) {
    if (!used[l] || given[l]) continue;
    for (int a = 0; a < c.num_devices(); ++a) {  // name the first such pair
      for (int b = 0; b < c.num_devices(); ++b) {
        if (static_cast<int>(c.level(a, b)) != l) continue;
        r.fail_validation(field_join("links", kLevelKeys[l]),
                          "missing, but devices '" + c.device(a).name + "' and '" +
                              c.device(b).name + "' are connected at this level");
      }
    }
  }
  if (root["bandwidth_matrix"]) {
    c.set_bandwidth_matrix(
        read_matrix(r, root["bandwidth_matrix"], QuantityKind::kBandwidth, "bandwidth_matrix", c));
  }
  if (root["latency_matrix"]) {
    c.set_latency_matrix(
        read_matrix(r, root["latency_matrix"], QuantityKind::kTime, "latency_matrix", c));
  }
  try {
    c.validate();
  } catch (const ValidationError& e) {
    throw ValidationError(format_context(filename, "", e.what()));
  }
  return c;
}

}  // namespace

Cluster load_cluster_yaml(const std::string& path) {
  return parse_cluster_yaml(read_text_file(path, "cluster file"), path);
}

// ---- Writer --------------------------------------------------------------------------

namespace {

using Json = nlohmann::ordered_json;

bool same_spec(const DeviceSpec& a, const DeviceSpec& b) {
  return a.model == b.model && a.kind == b.kind && a.peak_flops == b.peak_flops &&
         a.memory_bandwidth == b.memory_bandwidth && a.memory_bytes == b.memory_bytes &&
         a.launch_overhead == b.launch_overhead && a.overlap_transfers == b.overlap_transfers;
}

Json spec_to_json(const DeviceSpec& s, const std::string& key) {
  Json j;
  j["kind"] = to_string(s.kind);
  if (s.model != key) j["model"] = s.model;
  Json peak = Json::object();
  for (int t = 0; t < kNumDTypes; ++t) {
    if (s.peak_flops[t] > 0) peak[to_string(static_cast<DType>(t))] = format_flops(s.peak_flops[t]);
  }
  j["peak_flops"] = peak;
  j["memory"] = format_bytes(s.memory_bytes);
  j["memory_bandwidth"] = format_bandwidth(s.memory_bandwidth);
  j["launch_overhead"] = format_time(s.launch_overhead);
  if (!s.overlap_transfers) j["overlap"] = false;
  return j;
}

/// Writes a matrix as {unit, rows} in `unit` when every entry reads back exactly, else in
/// the base unit. Zero diagonal entries are written as "-".
Json matrix_to_json(const std::vector<double>& m, int n, QuantityKind k, const char* unit,
                    const char* base_unit) {
  PLACER_CHECK(m.size() == size_t(n) * n,
               "cluster_to_yaml: matrix has " << m.size() << " entries for " << n << " devices");
  bool exact = true;
  const double scale = apply_unit(1.0, unit, k);
  for (double v : m) {
    double back = 0;
    exact =
        exact && parse_double(format_double(v / scale), &back) && apply_unit(back, unit, k) == v;
  }
  const char* u = exact ? unit : base_unit;
  const double s = exact ? scale : 1.0;
  Json rows = Json::array();
  for (int i = 0; i < n; ++i) {
    Json row = Json::array();
    for (int j = 0; j < n; ++j) {
      const double v = m[size_t(i) * n + j];
      if (i == j && v == 0)
        row.push_back("-");
      else
        row.push_back(v / s);  // exact: checked above (or s == 1)
    }
    rows.push_back(row);
  }
  Json j;
  j["unit"] = u;
  j["rows"] = rows;
  return j;
}

/// The device groups of a host as [{type, count}], consecutive equal types merged.
Json host_devices(const Cluster& c, const Host& h, const std::vector<std::string>& type_of) {
  Json list = Json::array();
  std::string last;
  int per_kind[2] = {0, 0};
  for (int id : h.devices) {
    const Device& d = c.device(id);
    const int kind = static_cast<int>(d.spec.kind);
    const std::string expect =
        h.name + "/" + to_string(d.spec.kind) + std::to_string(per_kind[kind]++);
    PLACER_CHECK(d.name == expect, "cluster_to_yaml: device '"
                                       << d.name << "' cannot be written: device names are "
                                       << "derived as '" << expect << "'");
    if (!list.empty() && type_of[id] == last) {
      list.back()["count"] = list.back()["count"].get<int>() + 1;
    } else {
      list.push_back(Json{{"type", type_of[id]}, {"count", 1}});
      last = type_of[id];
    }
  }
  return list;
}

/// Splits "node12" into ("node", 12); index -1 when there is no numeric suffix.
std::pair<std::string, long> split_index(const std::string& s) {
  size_t i = s.size();
  while (i > 0 && std::isdigit(static_cast<unsigned char>(s[i - 1]))) --i;
  if (i == s.size() || s.size() - i > 9 || (s[i] == '0' && i + 1 != s.size())) return {s, -1};
  return {s.substr(0, i), std::stol(s.substr(i))};
}

}  // namespace

Json topology_to_json(const Topology& t) {
  Json j = Json::object();
  if (t.nvlink_domain_hosts != 1) j["nvlink_domain_hosts"] = t.nvlink_domain_hosts;
  if (t.hosts_per_leaf != 0) j["hosts_per_leaf"] = t.hosts_per_leaf;
  if (t.oversubscription != 1) j["oversubscription"] = t.oversubscription;
  if (t.spine_latency != 0) j["spine_latency"] = format_time(t.spine_latency);
  if (t.rails) j["rails"] = true;
  return j;
}

std::string cluster_to_yaml(const Cluster& c) {
  Json root;
  root["format_version"] = c.topology().trivial() ? "1.0" : "1.1";
  root["name"] = c.name;

  // Distinct device specs, keyed by model (suffixed when two specs share a model).
  std::vector<DeviceSpec> specs;
  std::vector<std::string> keys;
  std::vector<std::string> type_of(c.num_devices());
  for (const Device& d : c.devices()) {
    size_t k = 0;
    while (k < specs.size() && !same_spec(specs[k], d.spec)) ++k;
    if (k == specs.size()) {
      specs.push_back(d.spec);
      std::string key = d.spec.model.empty() ? "type" + std::to_string(k) : d.spec.model;
      while (std::find(keys.begin(), keys.end(), key) != keys.end()) key += "_" + std::to_string(k);
      keys.push_back(key);
    }
    type_of[&d - c.devices().data()] = keys[k];
  }
  Json types = Json::object();
  for (size_t k = 0; k < specs.size(); ++k) types[keys[k]] = spec_to_json(specs[k], keys[k]);
  root["device_types"] = types;

  Json hosts = Json::array();
  for (int h = 0; h < c.num_hosts();) {
    const Json devs = host_devices(c, c.host(h), type_of);
    // A run of hosts P0, P1, ... with the same devices becomes one `repeat` entry.
    int run = 1;
    const auto [prefix, index] = split_index(c.host(h).name);
    if (index == 0) {
      while (h + run < c.num_hosts() && c.host(h + run).name == prefix + std::to_string(run) &&
             host_devices(c, c.host(h + run), type_of) == devs) {
        ++run;
      }
    }
    Json e;
    if (run > 1) {
      e["name"] = prefix;
      e["repeat"] = run;
    } else {
      e["name"] = c.host(h).name;
    }
    e["devices"] = devs.size() == 1 ? devs[0] : devs;
    hosts.push_back(e);
    h += run;
  }
  root["hosts"] = hosts;

  Json links = Json::object();
  for (int l = 1; l < kNumLinkLevels; ++l) {
    const LinkSpec& s = c.link(static_cast<LinkLevel>(l));
    if (s.bandwidth <= 0 && s.type.empty() && s.latency == 0) continue;  // level not described
    Json j;
    if (!s.type.empty()) j["type"] = s.type;
    j["latency"] = format_time(s.latency);
    j["bandwidth"] = format_bandwidth(s.bandwidth);
    j["sharing"] = to_string(s.sharing);
    links[kLevelKeys[l]] = j;
  }
  root["links"] = links;
  if (!c.topology().trivial()) root["topology"] = topology_to_json(c.topology());
  if (!c.bandwidth_matrix().empty()) {
    root["bandwidth_matrix"] = matrix_to_json(c.bandwidth_matrix(), c.num_devices(),
                                              QuantityKind::kBandwidth, "GB/s", "B/s");
  }
  if (!c.latency_matrix().empty()) {
    root["latency_matrix"] =
        matrix_to_json(c.latency_matrix(), c.num_devices(), QuantityKind::kTime, "us", "s");
  }
  return emit_yaml(root,
                   "Cluster '" + c.name + "', written by placer.\nFormat: docs/formats/cluster.md");
}

void save_cluster_yaml(const Cluster& c, const std::string& path) {
  write_text_file(path, cluster_to_yaml(c));
}

}  // namespace placer
