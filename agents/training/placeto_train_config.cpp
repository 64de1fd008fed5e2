#include "agents/training/placeto_train_config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <limits>

#include "agents/common/option_table.h"
#include "agents/training/config_fields.h"
#include "datasets/family_registry.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"

namespace placer {
namespace {

namespace fs = std::filesystem;
using Json = ConfigJson;
using Source = ConfigSource;
using Field = ConfigField<PlacetoCliConfig>;

#define PT_REF(member) PLACER_CONFIG_REF(PlacetoCliConfig, member)

/// An input path (relative to the config file), or output_dir (relative to the current
/// directory: resolved by the loader).
template <class Ref>
Field path_field(const char* key, Ref ref, bool input) {
  return string_field<PlacetoCliConfig>(key, ref, {}, input);
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
                 if (!parse(v, &e)) check_name(s.reader, f, v, known, what);
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

constexpr int64_t kMaxInt = kConfigMaxInt;
constexpr int64_t kMaxInt64 = kConfigMaxInt64;
constexpr double kMaxDouble = kConfigMaxDouble;

const std::vector<Field>& fields() {
  static const std::vector<Field> f = [] {
    std::vector<Field> v;
    v.push_back(
        Field{"agent",
              [](PlacetoCliConfig&, const Source& s, const YAML::Node& n, const std::string& f) {
                check_name(s.reader, f, read_string(s, n, f), {"placeto"}, "agent");
              },
              [](const PlacetoCliConfig&) { return Json("placeto"); }});
    v.push_back(
        Field{"family",
              [](PlacetoCliConfig& c, const Source& s, const YAML::Node& n, const std::string& f) {
                const std::string name = read_string(s, n, f);
                check_name(s.reader, f, name, family_names(), "family");
                c.train.family = name;
              },
              [](const PlacetoCliConfig& c) { return Json(c.train.family); }});
    v.push_back(
        enum_field("size", PT_REF(train.ranges.size), &parse_size, {"default", "large"}, "size"));
    v.push_back(
        Field{"ranges",
              [](PlacetoCliConfig& c, const Source& s, const YAML::Node& n, const std::string& f) {
                c.train.ranges.overrides.clear();
                if (n.IsNull()) return;
                s.reader.expect_map(n, f);
                for (auto it = n.begin(); it != n.end(); ++it) {
                  const std::string name = s.reader.scalar(it->first, f);
                  c.train.ranges.overrides[name] = read_range(s, it->second, field_join(f, name));
                }
              },
              [](const PlacetoCliConfig& c) {
                Json j = Json::object();
                for (const auto& [name, r] : c.train.ranges.overrides) j[name] = range_json(r);
                return j;
              }});
    v.push_back(int_field<PlacetoCliConfig>("graphs", PT_REF(train.graphs), 1, 1 << 20));
    v.push_back(int_field<PlacetoCliConfig>("first_seed", PT_REF(train.first_seed), 0, kMaxInt64));
    v.push_back(path_field("cluster", PT_REF(cluster), true));
    v.push_back(path_field("profile", PT_REF(profile), true));
    v.push_back(
        Field{"devices",
              [](PlacetoCliConfig& c, const Source& s, const YAML::Node& n, const std::string& f) {
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
    v.push_back(int_field<PlacetoCliConfig>("updates", PT_REF(train.updates), 0, kMaxInt));
    v.push_back(int_field<PlacetoCliConfig>("seed", PT_REF(train.seed), 0, kMaxInt64));
    v.push_back(path_field("output_dir", PT_REF(train.output_dir), false));
    v.push_back(int_field<PlacetoCliConfig>("checkpoint_every", PT_REF(train.checkpoint_every), 1,
                                            kMaxInt));

    v.push_back(int_field<PlacetoCliConfig>("net.hidden", PT_REF(train.net.hidden), 1, 1 << 16));
    v.push_back(int_field<PlacetoCliConfig>("net.rounds", PT_REF(train.net.rounds), 0, 64));
    v.push_back(int_field<PlacetoCliConfig>("net.pool", PT_REF(train.net.pool), 1, 1 << 16));
    v.push_back(int_field<PlacetoCliConfig>("net.policy_hidden", PT_REF(train.net.policy_hidden), 1,
                                            1 << 16));
    v.push_back(
        int_field<PlacetoCliConfig>("net.max_devices", PT_REF(train.net.max_devices), 1, 64));
    v.push_back(double_field<PlacetoCliConfig>("net.logit_clip", PT_REF(train.net.logit_clip), 0,
                                               kMaxDouble, false));

    v.push_back(int_field<PlacetoCliConfig>("rl.episodes", PT_REF(train.rl.episodes), 1, 1 << 16));
    v.push_back(double_field<PlacetoCliConfig>("rl.lr", PT_REF(train.rl.lr), 0, kMaxDouble, true));
    v.push_back(double_field<PlacetoCliConfig>("rl.entropy", PT_REF(train.rl.entropy), 0,
                                               kMaxDouble, false));
    v.push_back(double_field<PlacetoCliConfig>("rl.gamma", PT_REF(train.rl.gamma), 0, 1, true));
    v.push_back(double_field<PlacetoCliConfig>("rl.max_grad_norm", PT_REF(train.rl.max_grad_norm),
                                               0, kMaxDouble, false));
    v.push_back(bool_field<PlacetoCliConfig>("rl.normalize_advantages",
                                             PT_REF(train.rl.normalize_advantages)));

    v.push_back(int_field<PlacetoCliConfig>("mdp.groups", PT_REF(train.mdp.groups), 0, kMaxInt));
    v.push_back(
        bool_field<PlacetoCliConfig>("mdp.simulate_coarse", PT_REF(train.mdp.simulate_coarse)));
    v.push_back(enum_field("mdp.reward", PT_REF(train.mdp.reward), &parse_placeto_reward,
                           {"intermediate", "final"}, "reward"));
    v.push_back(enum_field("mdp.start", PT_REF(train.mdp.start), &parse_placeto_start,
                           {"single", "random"}, "start"));
    v.push_back(double_field<PlacetoCliConfig>(
        "mdp.memory_threshold", PT_REF(train.mdp.memory_threshold), 0, kMaxDouble, true));
    v.push_back(double_field<PlacetoCliConfig>(
        "mdp.memory_penalty", PT_REF(train.mdp.memory_penalty), 0, kMaxDouble, false));
    return v;
  }();
  return f;
}

#undef PT_REF

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

PlacetoCliConfig load_placeto_train_config(const std::string& path) {
  return parse_placeto_train_config(read_text_file(path, "training configuration"), path);
}

PlacetoCliConfig parse_placeto_train_config(const std::string& text, const std::string& file) {
  const YAML::Node root = parse_yaml_text(text, file);
  // yaml-cpp exceptions the checks miss still name the file.
  return with_yaml_errors(file, [&] {
    PlacetoCliConfig c;
    Source s{YamlReader(file), fs::path(file).parent_path().string()};
    if (!root.IsNull()) {
      s.reader.expect_map(root, "");
      if (root["format_version"]) s.reader.check_format_version(root, 1, 0);
      read_level(fields(), &c, s, root, "");
    }
    if (!c.train.output_dir.empty()) c.train.output_dir = absolute_path(c.train.output_dir);
    check_config(c, s.reader);
    return c;
  });
}

void apply_placeto_override(PlacetoCliConfig* config, const std::string& assignment) {
  const YamlReader reader("--set");
  const auto [key, text] = split_option(assignment, "--set");
  const YAML::Node value = parse_yaml_text(text, "--set " + key);
  Source s{reader, fs::current_path().string()};
  if (key.rfind("ranges.", 0) == 0 && key.size() > 7) {  // one family parameter
    config->train.ranges.overrides[key.substr(7)] = read_range(s, value, key);
  } else {
    const Field* f = find_field(fields(), key);
    if (!f || key == "agent") {
      std::vector<std::string> keys = placeto_train_config_keys();
      keys.erase(keys.begin());  // "agent": a key of the file only
      unknown_key(reader, "", key, keys);
    }
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
  return fields_yaml(fields(), config, header);
}

bool same_placeto_train_config(const PlacetoCliConfig& a, const PlacetoCliConfig& b) {
  return same_fields(fields(), a, b);
}

}  // namespace placer
