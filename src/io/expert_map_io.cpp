// Expert maps as JSON (src/io/expert_map_io.h).
#include "src/io/expert_map_io.h"

#include <algorithm>
#include <sstream>

#include "src/io/json_read.h"
#include "src/io/routing_io.h"
#include "src/io/yaml_util.h"
#include "src/util/files.h"

namespace placer {

using Json = nlohmann::json;

namespace {

constexpr const char* kMapFormat = "placer-expert-map";

std::vector<int> read_copies(const JsonReader& r, const Json& v, const std::string& path, int ep) {
  const Json& a = r.array(v, path);
  if (a.empty()) r.fail(path, "an expert needs at least one rank");
  std::vector<int> ranks;
  for (size_t i = 0; i < a.size(); ++i) {
    const int rank = int(r.integer(a[i], path + "[" + std::to_string(i) + "]", 0, ep - 1));
    if (std::count(ranks.begin(), ranks.end(), rank)) {
      r.fail(path + "[" + std::to_string(i) + "]",
             "rank " + std::to_string(rank) + " holds this expert twice");
    }
    ranks.push_back(rank);
  }
  return ranks;
}

}  // namespace

std::string expert_map_to_json(const ExpertParallelConfig& ep) {
  std::ostringstream out;
  out << "{\n  \"format\": \"" << kMapFormat << "\",\n  \"version\": 1,\n  \"ep\": " << ep.degree
      << ",\n  \"layers\": [";
  for (size_t l = 0; l < ep.layers.size(); ++l) {
    out << (l ? ",\n    [" : "\n    [");
    const auto& reps = ep.layers[l].replicas;
    for (size_t e = 0; e < reps.size(); ++e) out << (e ? ", " : "") << Json(reps[e]).dump();
    out << "]";
  }
  out << "\n  ]\n}\n";
  return out.str();
}

ExpertParallelConfig parse_expert_map_json(const std::string& json_text, const std::string& file) {
  const Json root = parse_json_text(json_text, file);
  const JsonReader r(file);
  r.object(root, "(top level)");
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() != "format" && it.key() != "version" && it.key() != "ep" && it.key() != "layers") {
      r.fail(it.key(), "unknown key");
    }
  }
  auto required = [&](const char* key) -> const Json& {
    const Json* v = r.find(root, key, "");
    if (v == nullptr) r.fail(key, "missing (required)");
    return *v;
  };
  const std::string format = r.string(required("format"), "format");
  if (format != kMapFormat)
    r.fail("format", "expected \"placer-expert-map\", got " + quote_short(format));
  r.integer(required("version"), "version", 1, 1);
  ExpertParallelConfig ep;
  ep.degree = int(r.integer(required("ep"), "ep", 1, kMaxRoutingExperts));
  const Json& layers = r.array(required("layers"), "layers");
  if (layers.size() > size_t(kMaxRoutingLayers)) r.fail("layers", "more than 4096 layers");
  for (size_t l = 0; l < layers.size(); ++l) {
    const std::string path = "layers[" + std::to_string(l) + "]";
    const Json& experts = r.array(layers[l], path);
    if (experts.empty() || experts.size() > size_t(kMaxRoutingExperts) ||
        (l > 0 && experts.size() != ep.layers[0].replicas.size())) {
      r.fail(path, "expected 1 to 65536 experts, as many as layers[0]; got " +
                       std::to_string(experts.size()));
    }
    ExpertLayerMap m;
    for (size_t e = 0; e < experts.size(); ++e) {
      m.replicas.push_back(
          read_copies(r, experts[e], path + "[" + std::to_string(e) + "]", ep.degree));
    }
    ep.layers.push_back(std::move(m));
  }
  return ep;
}

ExpertParallelConfig load_expert_map(const std::string& path) {
  return parse_expert_map_json(read_text_file(path, "expert map"), path);
}

void save_expert_map(const ExpertParallelConfig& ep, const std::string& path) {
  write_text_atomic(path, expert_map_to_json(ep), "expert map");
}

}  // namespace placer
