#pragma once
// The pieces shared by the configuration files of `placer train-policy` (train_config.cpp:
// gdp and rainbow-pp; placeto_train_config.cpp): a table of keys (ConfigField), each knowing
// how to read its YAML value into the config struct and how to write it back as JSON (emitted
// as YAML), the field builders for the usual value kinds, and the readers of a nested key
// table (sections = the part before the dot: `net.hidden` is `hidden` under `net:`).
//
// Errors are FormatError "<file>: <key>: ..." through YamlReader::fail; the file is "--set"
// for command-line overrides (split by split_option, agents/common/option_table.h). Values
// are read in the one vocabulary of options (bools: src/util/option_text.h). Unknown keys
// and names get a "did you mean" suggestion for a close match (closest_name), else the list
// of the known ones.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "src/io/yaml_util.h"

namespace placer {

using ConfigJson = nlohmann::ordered_json;

/// Where a value comes from: the reader names the file (or "--set") in errors; relative
/// input paths are resolved against base_dir.
struct ConfigSource {
  YamlReader reader;
  std::string base_dir;
  /// The placement methods a list of method names may name (ListKind::kMethods): the
  /// registry's, passed in by the loaders so that the parsers link without it.
  std::vector<std::string> methods = {};
};

/// One key of a config file: how to read it into a Config and how to write it out.
template <class Config>
struct ConfigField {
  std::string key;  ///< dotted ("net.hidden")
  std::function<void(Config&, const ConfigSource&, const YAML::Node&, const std::string&)> read;
  std::function<ConfigJson(const Config&)> write;
};

constexpr int64_t kConfigMaxInt = std::numeric_limits<int>::max();
constexpr int64_t kConfigMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr double kConfigMaxDouble = std::numeric_limits<double>::max();

// ------------------------------------------------------------------ plain helpers ----

/// Absolute, normalised, without a trailing separator.
std::string absolute_path(const std::string& p);

/// `p` relative to `base` unless absolute, made absolute; "" stays "".
std::string resolve_input(const std::string& p, const std::string& base);

/// A scalar string; null (`key:` with nothing) is the empty string.
std::string read_string(const ConfigSource& s, const YAML::Node& n, const std::string& f);

/// A list of scalars; a single scalar is a one-element list, null the empty list.
std::vector<YAML::Node> list_items(const ConfigSource& s, const YAML::Node& n,
                                   const std::string& f);

/// A finite double in [lo, hi] (lo excluded when lo_open): "must be > 0 (got 'x')",
/// "must be >= 0 and <= 1 (got 'x')".
double read_double(const ConfigSource& s, const YAML::Node& n, const std::string& f, double lo,
                   double hi, bool lo_open);

/// "(did you mean 'x'?)" for a close name, else "(<lead>: a, b, c)".
std::string name_suggestion(const std::string& v, const std::vector<std::string>& known,
                            const std::string& lead);

/// Rejects a name outside `known`: "unknown <what> 'v' (did you mean 'x'?)" or
/// "unknown <what> 'v' (known: a, b)".
void check_name(const YamlReader& r, const std::string& f, const std::string& v,
                const std::vector<std::string>& known, const std::string& what);

/// "unknown key 'k' (did you mean 'x'?)" or "unknown key 'k' (expected one of: a, b)".
[[noreturn]] void unknown_key(const YamlReader& r, const std::string& field, const std::string& key,
                              const std::vector<std::string>& allowed);

// ----------------------------------------------------------------- field builders ----
// `ref` is a lambda giving a reference to the member inside a Config (PLACER_CONFIG_REF).

#define PLACER_CONFIG_REF(Config, member) [](Config& c) -> decltype(auto) { return (c.member); }

template <class Config, class Ref>
ConfigJson write_ref(Ref ref, const Config& c) {
  return ConfigJson(ref(const_cast<Config&>(c)));
}

/// An integer in [lo, hi].
template <class Config, class Ref>
ConfigField<Config> int_field(const char* key, Ref ref, int64_t lo, int64_t hi) {
  return {
      key,
      [ref, lo, hi](Config& c, const ConfigSource& s, const YAML::Node& n, const std::string& f) {
        using T = std::decay_t<decltype(ref(c))>;
        ref(c) = static_cast<T>(s.reader.to_int(n, f, lo, hi));
      },
      [ref](const Config& c) { return write_ref(ref, c); }};
}

/// A double in [lo, hi] (lo excluded when lo_open).
template <class Config, class Ref>
ConfigField<Config> double_field(const char* key, Ref ref, double lo, double hi, bool lo_open) {
  return {key,
          [ref, lo, hi, lo_open](Config& c, const ConfigSource& s, const YAML::Node& n,
                                 const std::string& f) {
            ref(c) = read_double(s, n, f, lo, hi, lo_open);
          },
          [ref](const Config& c) { return write_ref(ref, c); }};
}

template <class Config, class Ref>
ConfigField<Config> bool_field(const char* key, Ref ref) {
  return {key,
          [ref](Config& c, const ConfigSource& s, const YAML::Node& n, const std::string& f) {
            ref(c) = s.reader.to_bool(n, f);
          },
          [ref](const Config& c) { return write_ref(ref, c); }};
}

/// A string, optionally one of `choices` and optionally an input path (relative to the
/// source's base_dir; output paths are resolved by the loader).
template <class Config, class Ref>
ConfigField<Config> string_field(const char* key, Ref ref, std::vector<std::string> choices,
                                 bool path, const char* what = "value") {
  return {key,
          [ref, choices, path, what](Config& c, const ConfigSource& s, const YAML::Node& n,
                                     const std::string& f) {
            std::string v = read_string(s, n, f);
            if (!choices.empty()) check_name(s.reader, f, v, choices, what);
            ref(c) = path ? resolve_input(v, s.base_dir) : v;
          },
          [ref](const Config& c) { return write_ref(ref, c); }};
}

/// A list of strings: free tags, input paths (non-empty), names out of `names()` or method
/// names out of the source's `methods` (checked one by one, `what` in the message).
enum class ListKind { kTags, kPaths, kNames, kMethods };
template <class Config, class Ref>
ConfigField<Config> string_list_field(const char* key, Ref ref, ListKind kind,
                                      std::vector<std::string> (*names)() = nullptr,
                                      const char* what = "value") {
  return {key,
          [ref, kind, names, what](Config& c, const ConfigSource& s, const YAML::Node& n,
                                   const std::string& f) {
            const std::vector<YAML::Node> items = list_items(s, n, f);
            std::vector<std::string> out;
            const std::vector<std::string> known = kind == ListKind::kMethods ? s.methods
                                                   : kind == ListKind::kNames && names
                                                       ? names()
                                                       : std::vector<std::string>{};
            for (size_t i = 0; i < items.size(); ++i) {
              const std::string fi = field_index(f, i);
              std::string v = s.reader.scalar(items[i], fi);
              if (kind == ListKind::kPaths) {
                if (v.empty()) s.reader.fail(fi, "empty path");
                v = resolve_input(v, s.base_dir);
              }
              if (kind == ListKind::kNames || kind == ListKind::kMethods) {
                check_name(s.reader, fi, v, known, what);
              }
              out.push_back(v);
            }
            ref(c) = out;
          },
          [ref](const Config& c) { return write_ref(ref, c); }};
}

/// A list of integers in [lo, hi]; a single value is a one-element list.
template <class Config, class Ref>
ConfigField<Config> int_list_field(const char* key, Ref ref, int64_t lo, int64_t hi) {
  return {
      key,
      [ref, lo, hi](Config& c, const ConfigSource& s, const YAML::Node& n, const std::string& f) {
        const std::vector<YAML::Node> items = list_items(s, n, f);
        std::vector<int> out;
        for (size_t i = 0; i < items.size(); ++i) {
          out.push_back(static_cast<int>(s.reader.to_int(items[i], field_index(f, i), lo, hi)));
        }
        ref(c) = out;
      },
      [ref](const Config& c) { return write_ref(ref, c); }};
}

// -------------------------------------------------------------------- key tables ----

template <class Config>
const ConfigField<Config>* find_field(const std::vector<ConfigField<Config>>& fields,
                                      const std::string& key) {
  for (const ConfigField<Config>& f : fields) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

/// Every key, dotted, in table order.
template <class Config>
std::vector<std::string> field_keys(const std::vector<ConfigField<Config>>& fields) {
  std::vector<std::string> out;
  for (const ConfigField<Config>& f : fields) out.push_back(f.key);
  return out;
}

/// The keys of one level: top-level names (sections included, once each) or a section's.
template <class Config>
std::vector<std::string> level_keys(const std::vector<ConfigField<Config>>& fields,
                                    const std::string& section) {
  std::vector<std::string> out;
  for (const ConfigField<Config>& f : fields) {
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

/// Whether `key` (top level) is a section: some field is "<key>.<name>".
template <class Config>
bool is_section(const std::vector<ConfigField<Config>>& fields, const std::string& key) {
  for (const ConfigField<Config>& f : fields) {
    if (f.key.size() > key.size() && f.key.compare(0, key.size(), key) == 0 &&
        f.key[key.size()] == '.') {
      return true;
    }
  }
  return false;
}

/// Reads the keys of one map level (section "" = the root, whose format_version and
/// `root_skip` keys are skipped: the caller reads those): a key given twice, an unknown key
/// (with a suggestion) are errors.
template <class Config>
void read_level(const std::vector<ConfigField<Config>>& fields, Config* c, const ConfigSource& s,
                const YAML::Node& map, const std::string& section,
                const std::vector<std::string>& root_skip = {}) {
  const std::vector<std::string> allowed = level_keys(fields, section);
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
    for (const std::string& k : root_skip) ok = ok || (section.empty() && k == key);
    if (ok) continue;
    for (const std::string& a : allowed) ok = ok || a == key;
    if (!ok) unknown_key(s.reader, section, key, allowed);
    if (section.empty() && is_section(fields, key)) {
      if (!it->second.IsNull()) read_level(fields, c, s, it->second, key);
      continue;
    }
    find_field(fields, dotted)->read(*c, s, it->second, dotted);
  }
}

/// The configuration as YAML: `format_version: "1.0"`, then every key (sections as nested
/// maps), `header` as leading comment lines.
template <class Config>
std::string fields_yaml(const std::vector<ConfigField<Config>>& fields, const Config& config,
                        const std::string& header) {
  ConfigJson root = ConfigJson::object();
  root["format_version"] = "1.0";
  for (const ConfigField<Config>& f : fields) {
    const size_t dot = f.key.find('.');
    if (dot == std::string::npos) {
      root[f.key] = f.write(config);
    } else {
      root[f.key.substr(0, dot)][f.key.substr(dot + 1)] = f.write(config);
    }
  }
  return emit_yaml(root, header);
}

/// Equality of every key's written value.
template <class Config>
bool same_fields(const std::vector<ConfigField<Config>>& fields, const Config& a, const Config& b) {
  for (const ConfigField<Config>& f : fields) {
    if (f.write(a) != f.write(b)) return false;
  }
  return true;
}

}  // namespace placer
