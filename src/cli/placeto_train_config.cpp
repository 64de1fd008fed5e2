#include "src/cli/placeto_train_config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "datasets/family_registry.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"

namespace placer::cli {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// The generic helpers of train_config.cpp (Source, the Field builders, read_double,
// check_name, unknown_key) are file-local there; these few lines stand in for them until they
// are exported (see the report of issue 8).

struct Source {
  YamlReader reader;
  std::string base_dir;  ///< relative input paths are resolved against it
};

struct Field {
  std::string key;  ///< dotted
  std::function<void(PlacetoCliConfig&, const Source&, const YAML::Node&, const std::string&)>
      read;
  std::function<Json(const PlacetoCliConfig&)> write;
};

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

/// "(did you mean 'x'?)" for a close name, else "(<lead>: a, b, c)".
std::string suggestion(const std::string& v, const std::vector<std::string>& known,
                       const std::string& lead) {
  std::string all, best;
  size_t best_d = 3;  // typos only
  for (const std::string& k : known) {
    all += (all.empty() ? "" : ", ") + k;
    const size_t d = edit_distance(v, k, 3);
    if (d < best_d) best_d = d, best = k;
  }
  return best.empty() ? "(" + lead + ": " + all + ")" : "(did you mean '" + best + "'?)";
}

void check_choice(const YamlReader& r, const std::string& f, const std::string& v,
                  const std::vector<std::string>& known, const std::string& what) {
  for (const std::string& k : known) {
    if (k == v) return;
  }
  r.fail(f, "unknown " + what + " '" + v + "' " + suggestion(v, known, "known"));
}

std::string read_string(const Source& s, const YAML::Node& n, const std::string& f) {
  return n.IsNull() ? std::string() : s.reader.scalar(n, f);
}

#define PT_REF(member) [](PlacetoCliConfig& c) -> decltype(auto) { return (c.member); }

template <class Ref>
Field int_field(const char* key, Ref ref, int64_t lo, int64_t hi) {
  return Field{key,
               [ref, lo, hi](PlacetoCliConfig& c, const Source& s, const YAML::Node& n,
                             const std::string& f) {
                 using T = std::decay_t<decltype(ref(c))>;
                 ref(c) = static_cast<T>(s.reader.to_int(n, f, lo, hi));
               },
               [ref](const PlacetoCliConfig& c) {
                 return Json(ref(const_cast<PlacetoCliConfig&>(c)));
               }};
}

/// A double in [lo, hi] (lo excluded when lo_open).
template <class Ref>
Field double_field(const char* key, Ref ref, double lo, double hi, bool lo_open) {
  return Field{key,
               [ref, lo, hi, lo_open](PlacetoCliConfig& c, const Source& s, const YAML::Node& n,
                                      const std::string& f) {
                 const double v = s.reader.to_double(n, f);
                 if (!std::isfinite(v) || v < lo || v > hi || (lo_open && v == lo)) {
                   std::string range = (lo_open ? "> " : ">= ") + Json(lo).dump();
                   if (hi < std::numeric_limits<double>::max())
                     range += " and <= " + Json(hi).dump();
                   s.reader.fail(f, "must be " + range + " (got '" + n.Scalar() + "')");
                 }
                 ref(c) = v;
               },
               [ref](const PlacetoCliConfig& c) {
                 return Json(ref(const_cast<PlacetoCliConfig&>(c)));
               }};
}

template <class Ref>
Field bool_field(const char* key, Ref ref) {
  return Field{key,
               [ref](PlacetoCliConfig& c, const Source& s, const YAML::Node& n,
                     const std::string& f) { ref(c) = s.reader.to_bool(n, f); },
               [ref](const PlacetoCliConfig& c) {
                 return Json(ref(const_cast<PlacetoCliConfig&>(c)));
               }};
}

/// An input path (relative to the config file), or output_dir (relative to the current
/// directory: resolved by the loader).
template <class Ref>
Field path_field(const char* key, Ref ref, bool input) {
  return Field{key,
               [ref, input](PlacetoCliConfig& c, const Source& s, const YAML::Node& n,
                            const std::string& f) {
                 const std::string v = read_string(s, n, f);
                 ref(c) = input ? resolve_input(v, s.base_dir) : v;
               },
               [ref](const PlacetoCliConfig& c) {
                 return Json(ref(const_cast<PlacetoCliConfig&>(c)));
               }};
}

/// An enum read through parse(name, &value) with the names `known`.
template <class Ref, class E>
Field enum_field(const char* key, Ref ref, bool (*parse)(const std::string&, E*),
                 std::vector<std::string> known, const char* what) {
  return Field{key,
               [ref, parse, known, what](PlacetoCliConfig& c, const Source& s,
                                         const YAML::Node& n, const std::string& f) {
                 const std::string v = read_string(s, n, f);
                 E e{};
                 if (!parse(v, &e)) check_choice(s.reader, f, v, known, what);
                 ref(c) = e;
               },
               [ref](const PlacetoCliConfig& c) {
                 return Json(to_string(ref(const_cast<PlacetoCliConfig&>(c))));
               }};
}

bool parse_size(const std::string& s, FamilySize* out) { return parse_family_size(s, out); }

/// One family parameter range: VALUE (fixed) or [LO, HI] (uniform).
ParamRange read_range(const Source& s, const YAML::Node& n, const std::string& f) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (n.IsSequence()) {
    if (n.size() != 2) s.reader.fail(f, "expected VALUE or [LO, HI]");
    const int64_t lo = s.reader.to_int(n[0], field_index(f, 0), 0, kMax);
    const int64_t hi = s.reader.to_int(n[1], field_index(f, 1), 0, kMax);
    if (lo > hi) s.reader.fail(f, "LO > HI in [" + n[0].Scalar() + ", " + n[1].Scalar() + "]");
    return ParamRange::uniform(lo, hi);
  }
  return ParamRange::fixed(s.reader.to_int(n, f, 0, kMax));
}

Json range_json(const ParamRange& r) {
  if (r.one_of.empty() && r.step == 1 && !r.log_scale) {
    return r.lo == r.hi ? Json(r.lo) : Json::array({r.lo, r.hi});
  }
  // Only the library builds other ranges; written in full, read back by no config.
  return Json{{"lo", r.lo}, {"hi", r.hi}, {"step", r.step}, {"log", r.log_scale},
              {"one_of", r.one_of}};
}

constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr double kMaxDouble = std::numeric_limits<double>::max();

const std::vector<Field>& fields() {
  static const std::vector<Field> f = [] {
    std::vector<Field> v;
    v.push_back(Field{"agent",
                      [](PlacetoCliConfig&, const Source& s, const YAML::Node& n,
                         const std::string& f) {
                        check_choice(s.reader, f, read_string(s, n, f), {"placeto"}, "agent");
                      },
                      [](const PlacetoCliConfig&) { return Json("placeto"); }});
    v.push_back(Field{"family",
                      [](PlacetoCliConfig& c, const Source& s, const YAML::Node& n,
                         const std::string& f) {
                        const std::string name = read_string(s, n, f);
                        check_choice(s.reader, f, name, family_names(), "family");
                        c.train.family = name;
                      },
                      [](const PlacetoCliConfig& c) { return Json(c.train.family); }});
    v.push_back(enum_field("size", PT_REF(train.ranges.size), &parse_size,
                           {"default", "large"}, "size"));
    v.push_back(Field{"ranges",
                      [](PlacetoCliConfig& c, const Source& s, const YAML::Node& n,
                         const std::string& f) {
                        c.train.ranges.overrides.clear();
                        if (n.IsNull()) return;
                        s.reader.expect_map(n, f);
                        for (auto it = n.begin(); it != n.end(); ++it) {
                          const std::string name = s.reader.scalar(it->first, f);
                          c.train.ranges.overrides[name] =
                              read_range(s, it->second, field_join(f, name));
                        }
                      },
                      [](const PlacetoCliConfig& c) {
                        Json j = Json::object();
                        for (const auto& [name, r] : c.train.ranges.overrides)
                          j[name] = range_json(r);
                        return j;
                      }});
    v.push_back(int_field("graphs", PT_REF(train.graphs), 1, 1 << 20));
    v.push_back(int_field("first_seed", PT_REF(train.first_seed), 0, kMaxInt64));
    v.push_back(path_field("cluster", PT_REF(cluster), true));
    v.push_back(path_field("profile", PT_REF(profile), true));
    v.push_back(Field{"devices",
                      [](PlacetoCliConfig& c, const Source& s, const YAML::Node& n,
                         const std::string& f) {
                        std::vector<int> out;
                        if (n.IsScalar()) {
                          out.push_back(int(s.reader.to_int(n, f, 0, 4095)));
                        } else if (!n.IsNull()) {
                          s.reader.expect_sequence(n, f);
                          for (size_t i = 0; i < n.size(); ++i) {
                            const int d = int(s.reader.to_int(n[i], field_index(f, i), 0, 4095));
                            for (int e : out) {
                              if (e == d) s.reader.fail(field_index(f, i), "device given twice");
                            }
                            out.push_back(d);
                          }
                        }
                        if (out.empty()) s.reader.fail(f, "needs at least one device");
                        c.train.devices = out;
                      },
                      [](const PlacetoCliConfig& c) { return Json(c.train.devices); }});
    v.push_back(int_field("updates", PT_REF(train.updates), 0, kMaxInt));
    v.push_back(int_field("seed", PT_REF(train.seed), 0, kMaxInt64));
    v.push_back(path_field("output_dir", PT_REF(train.output_dir), false));
    v.push_back(int_field("checkpoint_every", PT_REF(train.checkpoint_every), 1, kMaxInt));

    v.push_back(int_field("net.hidden", PT_REF(train.net.hidden), 1, 1 << 16));
    v.push_back(int_field("net.rounds", PT_REF(train.net.rounds), 0, 64));
    v.push_back(int_field("net.pool", PT_REF(train.net.pool), 1, 1 << 16));
    v.push_back(int_field("net.policy_hidden", PT_REF(train.net.policy_hidden), 1, 1 << 16));
    v.push_back(int_field("net.max_devices", PT_REF(train.net.max_devices), 1, 64));

    v.push_back(int_field("rl.episodes", PT_REF(train.rl.episodes), 1, 1 << 16));
    v.push_back(double_field("rl.lr", PT_REF(train.rl.lr), 0, kMaxDouble, true));
    v.push_back(double_field("rl.entropy", PT_REF(train.rl.entropy), 0, kMaxDouble, false));
    v.push_back(double_field("rl.gamma", PT_REF(train.rl.gamma), 0, 1, true));
    v.push_back(
        double_field("rl.max_grad_norm", PT_REF(train.rl.max_grad_norm), 0, kMaxDouble, false));
    v.push_back(bool_field("rl.normalize_advantages", PT_REF(train.rl.normalize_advantages)));

    v.push_back(int_field("mdp.groups", PT_REF(train.mdp.groups), 0, kMaxInt));
    v.push_back(bool_field("mdp.simulate_coarse", PT_REF(train.mdp.simulate_coarse)));
    v.push_back(enum_field("mdp.reward", PT_REF(train.mdp.reward), &parse_placeto_reward,
                           {"intermediate", "final"}, "reward"));
    v.push_back(enum_field("mdp.start", PT_REF(train.mdp.start), &parse_placeto_start,
                           {"single", "random"}, "start"));
    v.push_back(double_field("mdp.memory_threshold", PT_REF(train.mdp.memory_threshold), 0,
                             kMaxDouble, true));
    v.push_back(double_field("mdp.memory_penalty", PT_REF(train.mdp.memory_penalty), 0,
                             kMaxDouble, false));
    return v;
  }();
  return f;
}

#undef PT_REF

bool is_section(const std::string& key) { return key == "net" || key == "rl" || key == "mdp"; }

/// The keys of one level: top-level names (sections included) or a section's.
std::vector<std::string> level_keys(const std::string& section) {
  std::vector<std::string> out;
  for (const Field& f : fields()) {
    const size_t dot = f.key.find('.');
    const std::string sec = dot == std::string::npos ? "" : f.key.substr(0, dot);
    const std::string name = dot == std::string::npos ? f.key : f.key.substr(dot + 1);
    if (section.empty() && !sec.empty()) {
      if (out.empty() || out.back() != sec) out.push_back(sec);
    } else if (sec == section) {
      out.push_back(name);
    }
  }
  return out;
}

[[noreturn]] void unknown_key(const YamlReader& r, const std::string& field, const std::string& key,
                              const std::vector<std::string>& allowed) {
  r.fail(field, "unknown key '" + key + "' " + suggestion(key, allowed, "expected one of"));
}

const Field* find_field(const std::string& key) {
  for (const Field& f : fields()) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

void read_level(PlacetoCliConfig* c, const Source& s, const YAML::Node& map,
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
    if (section.empty() && is_section(key)) {
      if (!it->second.IsNull()) read_level(c, s, it->second, key);
      continue;
    }
    find_field(dotted)->read(*c, s, it->second, dotted);
  }
}

/// What single keys cannot check: the family's parameters, devices within the network.
void check_config(const PlacetoCliConfig& c, const YamlReader& r) {
  try {
    check_family_ranges(c.train.family, c.train.ranges);
  } catch (const FormatError&) {
    throw;
  } catch (const Error& e) {
    r.fail("ranges", e.what());
  }
  for (size_t i = 0; i < c.train.devices.size(); ++i) {
    if (c.train.devices[i] >= c.train.net.max_devices) {
      r.fail(field_index("devices", i),
             "device " + std::to_string(c.train.devices[i]) + " is beyond net.max_devices (" +
                 std::to_string(c.train.net.max_devices) + ")");
    }
  }
}

}  // namespace

PlacetoCliConfig::PlacetoCliConfig() { train.output_dir = "runs/placeto"; }

std::string train_config_file_agent(const std::string& path) {
  const std::string text = read_text_file(path, "training configuration");
  const YAML::Node root = parse_yaml_text(text, path);
  if (!root.IsMap() || !root["agent"]) return "";
  const YamlReader r(path);
  const std::string a = r.scalar(root["agent"], "agent");
  check_choice(r, "agent", a, {"gdp", "rainbow-pp", "placeto"}, "agent");
  return a;
}

PlacetoCliConfig load_placeto_train_config(const std::string& path) {
  const std::string text = read_text_file(path, "training configuration");
  const YAML::Node root = parse_yaml_text(text, path);
  PlacetoCliConfig c;
  Source s{YamlReader(path), fs::path(path).parent_path().string()};
  if (!root.IsNull()) {
    s.reader.expect_map(root, "");
    if (root["format_version"]) s.reader.check_format_version(root, 1, 0);
    read_level(&c, s, root, "");
  }
  if (!c.train.output_dir.empty()) c.train.output_dir = absolute_path(c.train.output_dir);
  check_config(c, s.reader);
  return c;
}

void apply_placeto_override(PlacetoCliConfig* config, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  const YamlReader reader("--set");
  if (eq == std::string::npos || eq == 0) {
    reader.fail("", "expected KEY=VALUE, got '" + assignment + "'");
  }
  const std::string key = assignment.substr(0, eq);
  const YAML::Node value = parse_yaml_text(assignment.substr(eq + 1), "--set " + key);
  Source s{reader, fs::current_path().string()};
  if (key.rfind("ranges.", 0) == 0 && key.size() > 7) {  // one family parameter
    config->train.ranges.overrides[key.substr(7)] = read_range(s, value, key);
  } else {
    const Field* f = find_field(key);
    if (!f || key == "agent") unknown_key(reader, "", key, placeto_train_config_keys());
    f->read(*config, s, value, key);
    if (key == "output_dir" && !config->train.output_dir.empty())
      config->train.output_dir = absolute_path(config->train.output_dir);
  }
  check_config(*config, reader);
}

std::vector<std::string> placeto_train_config_keys() {
  std::vector<std::string> out;
  for (const Field& f : fields()) out.push_back(f.key == "ranges" ? "ranges.NAME" : f.key);
  return out;
}

std::string placeto_train_config_yaml(const PlacetoCliConfig& config, const std::string& header) {
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

bool same_placeto_train_config(const PlacetoCliConfig& a, const PlacetoCliConfig& b) {
  for (const Field& f : fields()) {
    if (f.write(a) != f.write(b)) return false;
  }
  return true;
}

}  // namespace placer::cli
