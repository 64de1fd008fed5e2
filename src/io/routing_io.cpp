// Routing-statistics files: reader and writer (docs/formats/routing.md).
#include "src/io/routing_io.h"

#include <set>
#include <sstream>

#include "src/io/json_read.h"
#include "src/io/yaml_util.h"
#include "src/util/checked_math.h"
#include "src/util/error.h"
#include "src/util/files.h"

namespace placer {

using Json = nlohmann::json;

RoutingStats shares_of(const LayerTokens& tokens) {
  RoutingStats s;
  s.share.reserve(tokens.size());
  for (const std::vector<int64_t>& row : tokens) {
    double total = 0;
    for (int64_t t : row) total += double(t);
    std::vector<double> share(row.size(), row.empty() ? 0.0 : 1.0 / double(row.size()));
    if (total > 0) {
      for (size_t e = 0; e < row.size(); ++e) share[e] = double(row[e]) / total;
    }
    s.share.push_back(std::move(share));
  }
  return s;
}

RoutingStats RoutingTrace::stats() const { return shares_of(tokens); }

namespace {

constexpr const char* kFormatName = "placer-routing";

/// Reads one routing file's tree; every error names the key path.
class RoutingReader {
 public:
  RoutingReader(const Json& root, const std::string& file) : root_(root), r_(file) {}

  RoutingTrace read() {
    r_.object(root_, "(top level)");
    check_keys();
    const std::string format = r_.string(required("format"), "format");
    if (format != kFormatName) {
      r_.fail("format",
              "expected \"" + std::string(kFormatName) + "\", got " + quote_short(format));
    }
    r_.integer(required("version"), "version", 1, 1);
    if (const Json* v = r_.find(root_, "name", "")) t_.name = r_.string(*v, "name");
    if (const Json* v = r_.find(root_, "family", "")) t_.family = r_.string(*v, "family");
    t_.experts = int(r_.integer(required("experts"), "experts", 1, kMaxRoutingExperts));
    if (const Json* v = r_.find(root_, "top_k", "")) {
      t_.top_k = int(r_.integer(*v, "top_k", 1, std::min(kMaxRoutingTopK, t_.experts)));
    }
    t_.tokens = table(required("layers"), "layers", /*lo_layers=*/1);
    read_micro_batches();
    read_steps();
    return std::move(t_);
  }

 private:
  const Json& required(const char* key) {
    const Json* v = r_.find(root_, key, "");
    if (v == nullptr) r_.fail(key, "missing (required)");
    return *v;
  }

  void check_keys() {
    static const std::set<std::string> known = {"format", "version",       "name",
                                                "family", "experts",       "top_k",
                                                "layers", "micro_batches", "steps"};
    for (auto it = root_.begin(); it != root_.end(); ++it) {
      if (!known.count(it.key())) r_.fail(it.key(), "unknown key");
    }
  }

  /// A [layer][expert] table of counts; `lo_layers` = 1 for the window's totals, and the
  /// window's layer count once that is read.
  LayerTokens table(const Json& v, const std::string& path, int lo_layers) {
    const Json& rows = r_.array(v, path);
    const int want = t_.tokens.empty() ? -1 : t_.layers();
    if (int64_t(rows.size()) < lo_layers || rows.size() > size_t(kMaxRoutingLayers)) {
      r_.fail(path, "expected 1 to " + std::to_string(kMaxRoutingLayers) + " layers, got " +
                        std::to_string(rows.size()));
    }
    if (want >= 0 && int(rows.size()) != want) {
      r_.fail(path, "expected " + std::to_string(want) + " layers (as in \"layers\"), got " +
                        std::to_string(rows.size()));
    }
    LayerTokens out;
    out.reserve(rows.size());
    for (size_t l = 0; l < rows.size(); ++l)
      out.push_back(row(rows[l], path + "[" + std::to_string(l) + "]"));
    return out;
  }

  std::vector<int64_t> row(const Json& v, const std::string& path) {
    const Json& a = r_.array(v, path);
    if (int(a.size()) != t_.experts) {
      r_.fail(path, "expected " + std::to_string(t_.experts) +
                        " token counts (one per expert), got " + std::to_string(a.size()));
    }
    std::vector<int64_t> out(a.size());
    int64_t total = 0;
    for (size_t e = 0; e < a.size(); ++e) {
      const std::string p = path + "[" + std::to_string(e) + "]";
      out[e] = r_.integer(a[e], p, 0, kMaxJsonInteger);
      if (total > kMaxJsonInteger - out[e]) r_.fail(path, "token counts sum above 2^53");
      total += out[e];
    }
    return out;
  }

  void read_micro_batches() {
    const Json* v = r_.find(root_, "micro_batches", "");
    if (v == nullptr) return;
    const Json& a = r_.array(*v, "micro_batches");
    for (size_t m = 0; m < a.size(); ++m) {
      t_.micro_batches.push_back(table(a[m], "micro_batches[" + std::to_string(m) + "]", 1));
    }
  }

  void read_steps() {
    const Json* v = r_.find(root_, "steps", "");
    if (v == nullptr) return;
    const Json& a = r_.array(*v, "steps");
    for (size_t s = 0; s < a.size(); ++s) {
      const std::string path = "steps[" + std::to_string(s) + "]";
      r_.object(a[s], path);
      for (auto it = a[s].begin(); it != a[s].end(); ++it) {
        if (it.key() != "step" && it.key() != "layers")
          r_.fail(path + "." + it.key(), "unknown key");
      }
      const Json* step = r_.find(a[s], "step", path);
      const Json* layers = r_.find(a[s], "layers", path);
      if (step == nullptr) r_.fail(path + ".step", "missing (required)");
      if (layers == nullptr) r_.fail(path + ".layers", "missing (required)");
      const int64_t lo = t_.step_index.empty() ? 0 : t_.step_index.back() + 1;
      t_.step_index.push_back(r_.integer(*step, path + ".step", lo, kMaxJsonInteger));
      t_.steps.push_back(table(*layers, path + ".layers", 1));
    }
  }

  const Json& root_;
  JsonReader r_;
  RoutingTrace t_;
};

void write_table(std::ostringstream& out, const LayerTokens& t, const std::string& indent) {
  out << "[";
  for (size_t l = 0; l < t.size(); ++l) {
    out << (l ? ",\n" : "\n") << indent << "  [";
    for (size_t e = 0; e < t[l].size(); ++e) out << (e ? ", " : "") << t[l][e];
    out << "]";
  }
  out << "\n" << indent << "]";
}

}  // namespace

RoutingTrace parse_routing_json(const std::string& json_text, const std::string& file) {
  const Json root = parse_json_text(json_text, file);
  return RoutingReader(root, file).read();
}

RoutingTrace load_routing(const std::string& path) {
  return parse_routing_json(read_text_file(path, "routing statistics"), path);
}

std::string routing_to_json(const RoutingTrace& t) {
  std::ostringstream out;
  out << "{\n  \"format\": \"" << kFormatName << "\",\n  \"version\": 1,\n";
  if (!t.name.empty()) out << "  \"name\": " << Json(t.name).dump() << ",\n";
  if (!t.family.empty()) out << "  \"family\": " << Json(t.family).dump() << ",\n";
  out << "  \"experts\": " << t.experts << ",\n  \"top_k\": " << t.top_k << ",\n  \"layers\": ";
  write_table(out, t.tokens, "  ");
  if (!t.micro_batches.empty()) {
    out << ",\n  \"micro_batches\": [";
    for (size_t m = 0; m < t.micro_batches.size(); ++m) {
      out << (m ? ", " : "");
      write_table(out, t.micro_batches[m], "    ");
    }
    out << "]";
  }
  if (!t.steps.empty()) {
    out << ",\n  \"steps\": [";
    for (size_t s = 0; s < t.steps.size(); ++s) {
      out << (s ? ",\n    " : "\n    ") << "{\"step\": " << t.step_index[s] << ", \"layers\": ";
      write_table(out, t.steps[s], "    ");
      out << "}";
    }
    out << "\n  ]";
  }
  out << "\n}\n";
  return out.str();
}

void save_routing(const RoutingTrace& t, const std::string& path) {
  write_text_atomic(path, routing_to_json(t), "routing statistics");
}

}  // namespace placer
