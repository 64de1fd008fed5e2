#include "src/io/plan_sync_io.h"

#include "src/plan/plan.h"
#include "src/util/format.h"

namespace placer {

namespace {

using Json = nlohmann::ordered_json;
using DeviceReader = std::function<std::vector<int>(const YAML::Node&, const std::string&)>;

VariableSync read_strategy(const YamlReader& r, const YAML::Node& n, const std::string& f,
                           const DeviceReader& devices) {
  VariableSync s;
  if (n["synchronizer"]) {
    const std::string v = r.scalar(n["synchronizer"], field_join(f, "synchronizer"));
    if (!parse_synchronizer(v, &s.synchronizer)) {
      r.fail(field_join(f, "synchronizer"),
             "unknown synchronizer " + quote_short(v) + " (use allreduce, ps, allgather or sfb)");
    }
  }
  if (n["algorithm"]) {
    const std::string v = r.scalar(n["algorithm"], field_join(f, "algorithm"));
    if (!parse_sync_scheme(v, &s.algorithm)) {
      r.fail(field_join(f, "algorithm"), "unknown all-reduce algorithm " + quote_short(v) +
                                             " (use ring, tree or hierarchical)");
    }
  }
  if (n["destinations"]) s.destinations = devices(n["destinations"], field_join(f, "destinations"));
  if (n["shards"]) s.shards = int(r.to_int(n["shards"], field_join(f, "shards"), -1000, 1 << 20));
  if (n["local_aggregation"]) {
    s.local_aggregation = r.to_bool(n["local_aggregation"], field_join(f, "local_aggregation"));
  }
  if (n["compressor"]) {
    const std::string v = r.scalar(n["compressor"], field_join(f, "compressor"));
    if (!parse_compressor(v, &s.compressor)) {
      r.fail(field_join(f, "compressor"), "unknown compressor " + quote_short(v) +
                                              " (use none, fp16, onebit, topk or powersgd)");
    }
  }
  if (n["ratio"]) s.topk_ratio = r.to_double(n["ratio"], field_join(f, "ratio"));
  if (n["rank"]) s.powersgd_rank = int(r.to_int(n["rank"], field_join(f, "rank"), -1000, 1 << 20));
  if (n["staleness"]) {
    const std::string sf = field_join(f, "staleness");
    if (r.scalar(n["staleness"], sf) == "async") {
      s.async = true;
    } else {
      s.staleness = int(r.to_int(n["staleness"], sf, -1000000, 1000000));
    }
  }
  return s;
}

constexpr std::initializer_list<const char*> kStrategyKeys = {
    "synchronizer", "algorithm", "destinations", "shards", "local_aggregation",
    "compressor",   "ratio",     "rank",         "staleness"};

void add_strategy(Json& j, const VariableSync& s,
                  const std::function<std::string(int)>& device_name) {
  j["synchronizer"] = to_string(s.synchronizer);
  j["algorithm"] = to_string(s.algorithm);
  if (!s.destinations.empty()) {
    Json d = Json::array();
    for (int x : s.destinations) d.push_back(device_name(x));
    j["destinations"] = d;
  }
  j["shards"] = s.shards;
  j["local_aggregation"] = s.local_aggregation;
  j["compressor"] = to_string(s.compressor);
  j["ratio"] = s.topk_ratio;
  j["rank"] = s.powersgd_rank;
  if (s.async)
    j["staleness"] = "async";
  else
    j["staleness"] = s.staleness;
}

}  // namespace

void read_synchronization(const YamlReader& r, const YAML::Node& n, const DeviceReader& devices,
                          SynchronizationConfig* out) {
  const std::string f = "synchronization";
  r.check_keys(n, f, {"default", "variables", "lossy"});
  out->enabled = true;
  if (n["default"]) {
    const std::string df = field_join(f, "default");
    r.expect_map(n["default"], df);
    r.check_keys(n["default"], df, kStrategyKeys);
    out->default_strategy = read_strategy(r, n["default"], df, devices);
  }
  if (!n["variables"]) return;
  const std::string vf = field_join(f, "variables");
  r.expect_sequence(n["variables"], vf);
  for (size_t i = 0; i < n["variables"].size(); ++i) {
    const YAML::Node v = n["variables"][i];
    const std::string ef = field_index(vf, i);
    r.expect_map(v, ef);
    SyncRule rule;
    int matches = 0;
    for (SyncMatch m : {SyncMatch::kName, SyncMatch::kScope, SyncMatch::kGroup}) {
      if (v[to_string(m)]) {
        ++matches;
        rule.match = m;
        rule.pattern = r.scalar(v[to_string(m)], field_join(ef, to_string(m)));
      }
    }
    if (matches != 1) r.fail(ef, "give exactly one of name, scope or group");
    r.check_keys(v, ef, {"name", "scope", "group", "synchronizer", "algorithm", "destinations",
                         "shards", "local_aggregation", "compressor", "ratio", "rank",
                         "staleness"});
    rule.strategy = read_strategy(r, v, ef, devices);
    out->rules.push_back(std::move(rule));
  }
}

Json synchronization_tree(const SynchronizationConfig& s, const Graph& g,
                          const std::function<std::string(int)>& device_name) {
  Json j;
  Json dflt;
  add_strategy(dflt, s.default_strategy, device_name);
  j["default"] = dflt;
  if (!s.rules.empty()) {
    Json vars = Json::array();
    for (const SyncRule& rule : s.rules) {
      Json v;
      v[to_string(rule.match)] = rule.pattern;
      add_strategy(v, rule.strategy, device_name);
      vars.push_back(v);
    }
    j["variables"] = vars;
  }
  const std::vector<std::string> lossy = lossy_choices(s, g);
  if (!lossy.empty()) j["lossy"] = lossy;
  return j;
}

}  // namespace placer
