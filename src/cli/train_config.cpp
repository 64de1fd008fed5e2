#include "src/cli/train_config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>

#include "agents/placer.h"
#include "agents/rainbow_config.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"

namespace placer::cli {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

/// Where a value comes from: the reader names the file (or "--set") in errors; relative
/// input paths are resolved against base_dir.
struct Source {
  YamlReader reader;
  std::string base_dir;
};

/// One key of the file: how to read it into a TrainConfig and how to write it out.
struct Field {
  std::string key;  ///< dotted
  std::function<void(TrainConfig&, const Source&, const YAML::Node&, const std::string&)> read;
  std::function<Json(const TrainConfig&)> write;
};

/// Absolute, normalised, without a trailing separator.
std::string absolute_path(const fs::path& p) {
  std::string s = fs::absolute(p).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

std::string resolve_input(const std::string& p, const std::string& base) {
  if (p.empty()) return p;
  const fs::path path(p);
  return absolute_path(path.is_absolute() ? path : fs::path(base) / path);
}

/// A scalar string; null (`key:` with nothing) is the empty string.
std::string read_string(const Source& s, const YAML::Node& n, const std::string& f) {
  if (n.IsNull()) return "";
  return s.reader.scalar(n, f);
}

/// A list of scalars; a single scalar is a one-element list, null the empty list.
std::vector<YAML::Node> list_items(const Source& s, const YAML::Node& n, const std::string& f) {
  std::vector<YAML::Node> out;
  if (n.IsNull()) return out;
  if (n.IsScalar()) return {n};
  s.reader.expect_sequence(n, f);
  for (size_t i = 0; i < n.size(); ++i) out.push_back(n[i]);
  return out;
}

double read_double(const Source& s, const YAML::Node& n, const std::string& f, double lo, double hi,
                   bool lo_open) {
  const double v = s.reader.to_double(n, f);
  if (!std::isfinite(v) || v < lo || v > hi || (lo_open && v == lo)) {
    std::string range = (lo_open ? "> " : ">= ") + Json(lo).dump();
    if (hi < std::numeric_limits<double>::max()) range += " and <= " + Json(hi).dump();
    s.reader.fail(f, "must be " + range + " (got '" + n.Scalar() + "')");
  }
  return v;
}

/// Rejects a name outside `known` with a suggestion.
void check_name(const Source& s, const std::string& f, const std::string& v,
                const std::vector<std::string>& known, const std::string& what) {
  std::string all, best;
  size_t best_d = 3;
  for (const std::string& k : known) {
    if (k == v) return;
    all += (all.empty() ? "" : ", ") + k;
    const size_t d = edit_distance(v, k);
    if (d < best_d) best_d = d, best = k;
  }
  s.reader.fail(f, "unknown " + what + " '" + v + "' (" +
                       (best.empty() ? "known: " + all : "did you mean '" + best + "'?") + ")");
}

std::vector<std::string> method_names() {
  std::vector<std::string> out;
  for (const MethodInfo& m : placer_methods()) out.push_back(m.name);
  return out;
}

// `ref` is a lambda giving a reference to the field inside a TrainConfig.
template <class Ref>
Field int_field(const char* key, Ref ref, int64_t lo, int64_t hi) {
  return Field{
      key,
      [ref, lo, hi](TrainConfig& c, const Source& s, const YAML::Node& n, const std::string& f) {
        using T = std::decay_t<decltype(ref(c))>;
        ref(c) = static_cast<T>(s.reader.to_int(n, f, lo, hi));
      },
      [ref](const TrainConfig& c) { return Json(ref(const_cast<TrainConfig&>(c))); }};
}

template <class Ref>
Field double_field(const char* key, Ref ref, double lo, double hi, bool lo_open) {
  return Field{key,
               [ref, lo, hi, lo_open](TrainConfig& c, const Source& s, const YAML::Node& n,
                                      const std::string& f) {
                 ref(c) = read_double(s, n, f, lo, hi, lo_open);
               },
               [ref](const TrainConfig& c) { return Json(ref(const_cast<TrainConfig&>(c))); }};
}

template <class Ref>
Field bool_field(const char* key, Ref ref) {
  return Field{key,
               [ref](TrainConfig& c, const Source& s, const YAML::Node& n, const std::string& f) {
                 ref(c) = s.reader.to_bool(n, f);
               },
               [ref](const TrainConfig& c) { return Json(ref(const_cast<TrainConfig&>(c))); }};
}

/// A string, optionally one of `choices` and optionally an input path.
template <class Ref>
Field string_field(const char* key, Ref ref, std::vector<std::string> choices, bool path,
                   const char* what = "value") {
  return Field{key,
               [ref, choices, path, what](TrainConfig& c, const Source& s, const YAML::Node& n,
                                          const std::string& f) {
                 std::string v = read_string(s, n, f);
                 if (!choices.empty()) check_name(s, f, v, choices, what);
                 ref(c) = path ? resolve_input(v, s.base_dir) : v;
               },
               [ref](const TrainConfig& c) { return Json(ref(const_cast<TrainConfig&>(c))); }};
}

/// A list of strings: input paths, method names, or free tags.
enum class ListKind { kTags, kPaths, kMethods };
template <class Ref>
Field string_list_field(const char* key, Ref ref, ListKind kind) {
  return Field{
      key,
      [ref, kind](TrainConfig& c, const Source& s, const YAML::Node& n, const std::string& f) {
        const std::vector<YAML::Node> items = list_items(s, n, f);
        std::vector<std::string> out;
        const std::vector<std::string> methods =
            kind == ListKind::kMethods ? method_names() : std::vector<std::string>{};
        for (size_t i = 0; i < items.size(); ++i) {
          const std::string fi = field_index(f, i);
          std::string v = s.reader.scalar(items[i], fi);
          if (kind == ListKind::kPaths) {
            if (v.empty()) s.reader.fail(fi, "empty path");
            v = resolve_input(v, s.base_dir);
          }
          if (kind == ListKind::kMethods) check_name(s, fi, v, methods, "method");
          out.push_back(v);
        }
        ref(c) = out;
      },
      [ref](const TrainConfig& c) { return Json(ref(const_cast<TrainConfig&>(c))); }};
}

template <class Ref>
Field int_list_field(const char* key, Ref ref, int64_t lo, int64_t hi) {
  return Field{
      key,
      [ref, lo, hi](TrainConfig& c, const Source& s, const YAML::Node& n, const std::string& f) {
        const std::vector<YAML::Node> items = list_items(s, n, f);
        std::vector<int> out;
        for (size_t i = 0; i < items.size(); ++i) {
          out.push_back(static_cast<int>(s.reader.to_int(items[i], field_index(f, i), lo, hi)));
        }
        ref(c) = out;
      },
      [ref](const TrainConfig& c) { return Json(ref(const_cast<TrainConfig&>(c))); }};
}

#define PLACER_REF(member) [](TrainConfig& c) -> decltype(auto) { return (c.member); }

constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr double kMaxDouble = std::numeric_limits<double>::max();

const std::vector<Field>& fields() {
  static const std::vector<Field> f = [] {
    std::vector<Field> v;
    v.push_back(string_field("corpus", PLACER_REF(corpus), {}, true));
    v.push_back(string_list_field("tags", PLACER_REF(tags), ListKind::kTags));
    v.push_back(int_field("max_ops", PLACER_REF(max_ops), 1, kMaxInt64));
    v.push_back(string_list_field("clusters", PLACER_REF(clusters), ListKind::kPaths));
    v.push_back(int_list_field("device_counts", PLACER_REF(device_counts), 1, 4096));
    v.push_back(string_field("profile", PLACER_REF(profile), {}, true));
    v.push_back(string_field("optimizer", PLACER_REF(optimizer), {"sgd", "momentum", "adam"}, false,
                             "optimizer"));
    v.push_back(
        string_list_field("reference_methods", PLACER_REF(reference_methods), ListKind::kMethods));
    v.push_back(int_field("updates", PLACER_REF(updates), 0, kMaxInt64));
    v.push_back(int_field("imitation_updates", PLACER_REF(imitation_updates), 0, kMaxInt64));
    v.push_back(int_field("seed", PLACER_REF(seed), 0, kMaxInt64));
    v.push_back(string_field("output_dir", PLACER_REF(output_dir), {}, false));
    v.push_back(int_field("checkpoint_every", PLACER_REF(checkpoint_every), 1, kMaxInt));
    v.push_back(int_field("eval_every", PLACER_REF(eval_every), 0, kMaxInt));
    v.push_back(int_field("eval_instances", PLACER_REF(eval_instances), 0, kMaxInt));
    v.push_back(int_field("eval_samples", PLACER_REF(eval_samples), 0, kMaxInt));
    v.push_back(
        string_list_field("eval_baselines", PLACER_REF(eval_baselines), ListKind::kMethods));
    v.push_back(string_field("init_policy", PLACER_REF(init_policy), {}, true));

    v.push_back(int_field("net.hidden", PLACER_REF(net.hidden), 1, 1 << 16));
    v.push_back(int_field("net.sage_layers", PLACER_REF(net.sage_layers), 0, 64));
    v.push_back(int_field("net.op_embedding", PLACER_REF(net.op_embedding), 0, 1 << 16));
    v.push_back(int_field("net.txl_layers", PLACER_REF(net.txl_layers), 0, 64));
    v.push_back(int_field("net.heads", PLACER_REF(net.heads), 1, 1 << 12));
    v.push_back(int_field("net.ffn", PLACER_REF(net.ffn), 1, 1 << 20));
    v.push_back(int_field("net.segment", PLACER_REF(net.segment), 1, 1 << 20));
    v.push_back(int_field("net.mem_len", PLACER_REF(net.mem_len), 0, 1 << 20));
    v.push_back(int_field("net.max_devices", PLACER_REF(net.max_devices), 1, 4096));
    v.push_back(bool_field("net.superposition", PLACER_REF(net.superposition)));

    v.push_back(double_field("ppo.lr", PLACER_REF(ppo.lr), 0, kMaxDouble, true));
    v.push_back(double_field("ppo.clip", PLACER_REF(ppo.clip), 0, kMaxDouble, true));
    v.push_back(double_field("ppo.entropy", PLACER_REF(ppo.entropy), 0, kMaxDouble, false));
    v.push_back(int_field("ppo.epochs", PLACER_REF(ppo.epochs), 1, kMaxInt));
    v.push_back(int_field("ppo.samples", PLACER_REF(ppo.samples), 1, kMaxInt));
    v.push_back(int_field("ppo.graphs_per_update", PLACER_REF(ppo.graphs_per_update), 1, kMaxInt));
    v.push_back(
        string_field("ppo.baseline", PLACER_REF(ppo.baseline), {"mean", "ema"}, false, "baseline"));
    v.push_back(double_field("ppo.ema_decay", PLACER_REF(ppo.ema_decay), 0, 1, false));
    v.push_back(
        double_field("ppo.max_grad_norm", PLACER_REF(ppo.max_grad_norm), 0, kMaxDouble, false));
    v.push_back(double_field("ppo.oom_penalty", PLACER_REF(ppo.oom_penalty), -kMaxDouble,
                             kMaxDouble, false));
    v.push_back(bool_field("ppo.normalize_advantages", PLACER_REF(ppo.normalize_advantages)));

    // Distribution (docs/distributed.md). Only the shard count is configuration (it fixes
    // the global batch); ranks, rendezvous and timeout are flags of the launch.
    v.push_back(int_field("dist.shards", PLACER_REF(dist.shards), 0, kMaxInt));
    return v;
  }();
  return f;
}

#undef PLACER_REF

/// The keys of one level: top-level names (sections "net", "ppo" included) or a section's.
std::vector<std::string> level_keys(const std::string& section) {
  std::vector<std::string> out;
  for (const Field& f : fields()) {
    const size_t dot = f.key.find('.');
    const std::string sec = dot == std::string::npos ? "" : f.key.substr(0, dot);
    const std::string name = dot == std::string::npos ? f.key : f.key.substr(dot + 1);
    if (section.empty() && !sec.empty()) {
      bool have = false;
      for (const std::string& k : out) have = have || k == sec;
      if (!have) out.push_back(sec);
    } else if (sec == section) {
      out.push_back(name);
    }
  }
  return out;
}

[[noreturn]] void unknown_key(const YamlReader& r, const std::string& field, const std::string& key,
                              const std::vector<std::string>& allowed) {
  std::string all, best;
  size_t best_d = 3;  // suggest only close matches (typos)
  for (const std::string& a : allowed) {
    all += (all.empty() ? "" : ", ") + a;
    const size_t d = edit_distance(key, a);
    if (d < best_d) best_d = d, best = a;
  }
  r.fail(field,
         "unknown key '" + key + "' " +
             (best.empty() ? "(expected one of: " + all + ")" : "(did you mean '" + best + "'?)"));
}

const Field* find_field(const std::string& key) {
  for (const Field& f : fields()) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

/// Reads the keys of one map level (section "" = the root).
void read_level(TrainConfig* c, const Source& s, const YAML::Node& map,
                const std::string& section) {
  const std::vector<std::string> allowed = level_keys(section);
  s.reader.expect_map(map, section);
  std::vector<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
    const std::string dotted = field_join(section, key);
    for (const std::string& k : seen) {
      if (k == key) s.reader.fail(dotted, "key given twice");
    }
    seen.push_back(key);
    if (section.empty() && key == "format_version") continue;
    bool ok = false;
    for (const std::string& a : allowed) ok = ok || a == key;
    if (!ok) unknown_key(s.reader, section, key, allowed);
    if (section.empty() && (key == "net" || key == "ppo" || key == "dist")) {
      if (!it->second.IsNull()) read_level(c, s, it->second, key);
      continue;
    }
    find_field(dotted)->read(*c, s, it->second, dotted);
  }
}

}  // namespace

TrainConfig load_train_config(const std::string& path) {
  const std::string text = read_text_file(path, "training configuration");
  const YAML::Node root = parse_yaml_text(text, path);
  TrainConfig c;
  Source s{YamlReader(path), fs::path(path).parent_path().string()};
  if (root.IsNull()) return c;  // an empty file: every default
  s.reader.expect_map(root, "");
  if (root["format_version"]) s.reader.check_format_version(root, 1, 0);
  read_level(&c, s, root, "");
  if (!c.output_dir.empty()) c.output_dir = absolute_path(c.output_dir);
  return c;
}

void apply_train_override(TrainConfig* config, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  const YamlReader reader("--set");
  if (eq == std::string::npos || eq == 0) {
    reader.fail("", "expected KEY=VALUE, got '" + assignment + "'");
  }
  const std::string key = assignment.substr(0, eq);
  const Field* f = find_field(key);
  if (!f) unknown_key(reader, "", key, train_config_keys());
  const YAML::Node value = parse_yaml_text(assignment.substr(eq + 1), "--set " + key);
  Source s{reader, fs::current_path().string()};
  f->read(*config, s, value, key);
  if (key == "output_dir" && !config->output_dir.empty()) {
    config->output_dir = absolute_path(config->output_dir);
  }
}

std::vector<std::string> train_config_keys() {
  std::vector<std::string> out;
  for (const Field& f : fields()) out.push_back(f.key);
  return out;
}

std::string train_config_yaml(const TrainConfig& config, const std::string& header) {
  Json root = Json::object();
  root["format_version"] = "1.0";
  for (const Field& f : fields()) {
    const size_t dot = f.key.find('.');
    if (dot == std::string::npos) {
      root[f.key] = f.write(config);
    } else {
      root[f.key.substr(0, dot)][f.key.substr(dot + 1)] = f.write(config);
    }
  }
  return emit_yaml(root, header);
}

bool same_train_config(const TrainConfig& a, const TrainConfig& b) {
  for (const Field& f : fields()) {
    if (f.write(a) != f.write(b)) return false;
  }
  return true;
}

// ------------------------------------------------------------------ rainbow-pp config ----

namespace {

struct PPField {
  std::string key;
  std::function<void(RainbowPPTrainConfig&, const Source&, const YAML::Node&, const std::string&)>
      read;
  std::function<Json(const RainbowPPTrainConfig&)> write;
};

#define PP_INT(name, lo, hi)                                                                  \
  PPField{#name,                                                                              \
          [](RainbowPPTrainConfig& c, const Source& s, const YAML::Node& n,                   \
             const std::string& f) {                                                          \
            c.name = static_cast<std::decay_t<decltype(c.name)>>(s.reader.to_int(n, f, lo, hi)); \
          },                                                                                  \
          [](const RainbowPPTrainConfig& c) { return Json(c.name); }}

const std::vector<PPField>& pp_fields() {
  static const std::vector<PPField> f = [] {
    std::vector<PPField> v;
    v.push_back(PPField{"agent",
                        [](RainbowPPTrainConfig&, const Source& s, const YAML::Node& n,
                           const std::string& f) {
                          check_name(s, f, read_string(s, n, f), {"rainbow-pp"}, "agent");
                        },
                        [](const RainbowPPTrainConfig&) { return Json("rainbow-pp"); }});
    v.push_back(PP_INT(stages, 2, 64));
    v.push_back(PP_INT(max_devices, 2, 256));
    v.push_back(PP_INT(updates, 0, kMaxInt64));
    v.push_back(PP_INT(arrays_per_update, 1, kMaxInt));
    v.push_back(PP_INT(episodes_per_array, 1, kMaxInt));
    v.push_back(PP_INT(learn_every, 1, kMaxInt));
    v.push_back(PP_INT(threads, 1, 256));
    v.push_back(PP_INT(min_positions, 2, 1 << 24));
    v.push_back(PP_INT(max_positions, 2, 1 << 24));
    v.push_back(PPField{
        "distributions",
        [](RainbowPPTrainConfig& c, const Source& s, const YAML::Node& n, const std::string& f) {
          std::vector<std::string> out;
          const std::vector<YAML::Node> items = list_items(s, n, f);
          for (size_t i = 0; i < items.size(); ++i) {
            const std::string fi = field_index(f, i);
            const std::string d = s.reader.scalar(items[i], fi);
            check_name(s, fi, d, {"uniform", "normal", "binomial"}, "distribution");
            out.push_back(d);
          }
          if (out.empty()) s.reader.fail(f, "needs at least one distribution");
          c.distributions = out;
        },
        [](const RainbowPPTrainConfig& c) { return Json(c.distributions); }});
    v.push_back(PP_INT(eval_every, 0, kMaxInt));
    v.push_back(PP_INT(eval_arrays, 0, kMaxInt));
    v.push_back(PPField{
        "eval_graphs",
        [](RainbowPPTrainConfig& c, const Source& s, const YAML::Node& n, const std::string& f) {
          std::vector<std::string> out;
          const std::vector<YAML::Node> items = list_items(s, n, f);
          for (size_t i = 0; i < items.size(); ++i) {
            const std::string fi = field_index(f, i);
            const std::string p = s.reader.scalar(items[i], fi);
            if (p.empty()) s.reader.fail(fi, "empty path");
            out.push_back(resolve_input(p, s.base_dir));
          }
          c.eval_graphs = out;
        },
        [](const RainbowPPTrainConfig& c) { return Json(c.eval_graphs); }});
    v.push_back(PPField{
        "eval_cluster",
        [](RainbowPPTrainConfig& c, const Source& s, const YAML::Node& n, const std::string& f) {
          c.eval_cluster = resolve_input(read_string(s, n, f), s.base_dir);
        },
        [](const RainbowPPTrainConfig& c) { return Json(c.eval_cluster); }});
    v.push_back(PP_INT(checkpoint_every, 1, kMaxInt));
    v.push_back(PP_INT(seed, 0, kMaxInt64));
    v.push_back(PPField{
        "output_dir",
        [](RainbowPPTrainConfig& c, const Source& s, const YAML::Node& n, const std::string& f) {
          c.output_dir = read_string(s, n, f);
        },
        [](const RainbowPPTrainConfig& c) { return Json(c.output_dir); }});
    v.push_back(PPField{
        "rainbow",
        [](RainbowPPTrainConfig& c, const Source& s, const YAML::Node& n, const std::string& f) {
          if (n.IsNull()) return;
          s.reader.expect_map(n, f);
          YAML::Emitter e;
          e << n;
          try {
            rainbow_config_from_yaml(e.c_str(), &c.rainbow, s.reader.file() + ": " + f);
          } catch (const ValidationError& err) {
            throw FormatError(err.what());
          }
        },
        [](const RainbowPPTrainConfig& c) { return Json(rainbow_config_to_yaml(c.rainbow)); }});
    return v;
  }();
  return f;
}

#undef PP_INT

const PPField* find_pp_field(const std::string& key) {
  for (const PPField& f : pp_fields()) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

std::vector<std::string> pp_keys() {
  std::vector<std::string> out;
  for (const PPField& f : pp_fields()) out.push_back(f.key);
  return out;
}

void check_pp(const RainbowPPTrainConfig& c, const YamlReader& r) {
  const std::string bad = validate_rainbow_pp_train_config(c);
  if (!bad.empty()) {
    const size_t colon = bad.find(": ");
    r.fail(bad.substr(0, colon), colon == std::string::npos ? bad : bad.substr(colon + 2));
  }
}

}  // namespace

std::string train_config_agent(const std::string& path) {
  const std::string text = read_text_file(path, "training configuration");
  const YAML::Node root = parse_yaml_text(text, path);
  if (!root.IsMap() || !root["agent"]) return "";
  const YamlReader r(path);
  const std::string a = r.scalar(root["agent"], "agent");
  if (a != "gdp" && a != "rainbow-pp") r.fail("agent", "unknown agent '" + a + "' (known: gdp, rainbow-pp)");
  return a;
}

RainbowPPTrainConfig load_rainbow_pp_train_config(const std::string& path) {
  const std::string text = read_text_file(path, "training configuration");
  const YAML::Node root = parse_yaml_text(text, path);
  RainbowPPTrainConfig c;
  Source s{YamlReader(path), fs::path(path).parent_path().string()};
  if (!root.IsNull()) {
    s.reader.expect_map(root, "");
    if (root["format_version"]) s.reader.check_format_version(root, 1, 0);
    std::vector<std::string> seen;
    for (auto it = root.begin(); it != root.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
      for (const std::string& k : seen) {
        if (k == key) s.reader.fail(key, "key given twice");
      }
      seen.push_back(key);
      if (key == "format_version") continue;
      const PPField* f = find_pp_field(key);
      if (!f) unknown_key(s.reader, "", key, pp_keys());
      f->read(c, s, it->second, key);
    }
  }
  if (!c.output_dir.empty()) c.output_dir = absolute_path(c.output_dir);
  check_pp(c, s.reader);
  return c;
}

void apply_rainbow_pp_override(RainbowPPTrainConfig* config, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  const YamlReader reader("--set");
  if (eq == std::string::npos || eq == 0) {
    reader.fail("", "expected KEY=VALUE, got '" + assignment + "'");
  }
  const std::string key = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  if (key.rfind("rainbow.", 0) == 0) {
    try {
      set_rainbow_option(&config->rainbow, key.substr(8), value);
    } catch (const ValidationError& e) {
      reader.fail(key, e.what());
    }
  } else {
    const PPField* f = find_pp_field(key);
    if (!f || key == "rainbow") {
      std::vector<std::string> keys = pp_keys();
      keys.pop_back();
      for (const std::string& k : rainbow_option_names()) keys.push_back("rainbow." + k);
      unknown_key(reader, "", key, keys);
    }
    const YAML::Node node = parse_yaml_text(value, "--set " + key);
    Source s{reader, fs::current_path().string()};
    f->read(*config, s, node, key);
    if (key == "output_dir" && !config->output_dir.empty())
      config->output_dir = absolute_path(config->output_dir);
  }
  check_pp(*config, reader);
}

std::string rainbow_pp_train_config_yaml(const RainbowPPTrainConfig& config,
                                         const std::string& header) {
  Json root = Json::object();
  root["format_version"] = "1.0";
  for (const PPField& f : pp_fields()) {
    if (f.key != "rainbow") root[f.key] = f.write(config);
  }
  std::string out = emit_yaml(root, header);
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += "rainbow:\n";
  std::istringstream in(rainbow_config_to_yaml(config.rainbow));
  std::string line;
  while (std::getline(in, line)) out += "  " + line + "\n";
  return out;
}

bool same_rainbow_pp_train_config(const RainbowPPTrainConfig& a, const RainbowPPTrainConfig& b) {
  for (const PPField& f : pp_fields()) {
    if (f.write(a) != f.write(b)) return false;
  }
  return true;
}

}  // namespace placer::cli
