// The configuration of `placer train-policy --agent expert-rl`
// (agents/training/expert_rl_train_config.h).
#include "agents/training/expert_rl_train_config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "agents/common/option_table.h"
#include "agents/training/config_fields.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"

namespace placer {
namespace {

namespace fs = std::filesystem;
using C = ExpertRlTrainConfig;
using Field = ConfigField<C>;

#define ER_REF(member) PLACER_CONFIG_REF(C, member)

const std::vector<Field>& fields() {
  static const std::vector<Field> f = [] {
    std::vector<Field> v;
    v.push_back({"agent",
                 [](C&, const ConfigSource& s, const YAML::Node& n, const std::string& k) {
                   check_name(s.reader, k, read_string(s, n, k), {"expert-rl"}, "agent");
                 },
                 [](const C&) { return ConfigJson("expert-rl"); }});
    v.push_back(int_field<C>("updates", ER_REF(train.updates), 1, kConfigMaxInt64));
    v.push_back(int_field<C>("layers_per_update", ER_REF(train.layers_per_update), 1, 4096));
    v.push_back(int_field<C>("samples", ER_REF(train.samples), 2, 4096));
    v.push_back(int_field<C>("hidden", ER_REF(train.hidden), 1, 4096));
    v.push_back(double_field<C>("learning_rate", ER_REF(train.learning_rate), 0, 1, true));
    v.push_back(double_field<C>("entropy", ER_REF(train.entropy), 0, kConfigMaxDouble, false));
    v.push_back(int_field<C>("seed", ER_REF(train.seed), 0, kConfigMaxInt64));
    v.push_back(bool_field<C>("choose_replicas", ER_REF(train.choose_replicas)));
    v.push_back(int_field<C>("validate_every", ER_REF(train.validate_every), 0, kConfigMaxInt64));
    v.push_back(int_list_field<C>("ranks", ER_REF(ranks), 1, 4096));
    v.push_back(int_list_field<C>("experts", ER_REF(experts), 2, 65536));
    v.push_back(int_list_field<C>("top_k", ER_REF(top_k), 1, 64));
    v.push_back(int_field<C>("ranks_per_node", ER_REF(ranks_per_node), 1, 4096));
    v.push_back(int_field<C>("redundant_per_rank", ER_REF(redundant_per_rank), 0, 64));
    v.push_back(int_field<C>("distributions", ER_REF(distributions), 1, 100000));
    v.push_back(
        int_field<C>("validation_distributions", ER_REF(validation_distributions), 0, 100000));
    v.push_back(string_field<C>("init_policy", ER_REF(init_policy), {}, true));
    v.push_back(string_field<C>("baseline_policy", ER_REF(baseline_policy), {}, true));
    v.push_back(string_field<C>("output_dir", ER_REF(output_dir), {}, false));
    return v;
  }();
  return f;
}

#undef ER_REF

/// What single keys cannot check: non-empty shape lists, top_k below the experts, and
/// experts + redundant copies filling every rank's slots evenly.
void check_config(const C& c, const YamlReader& r) {
  for (const char* key : {"ranks", "experts", "top_k"}) {
    const std::vector<int>& list = std::string(key) == "ranks"     ? c.ranks
                                   : std::string(key) == "experts" ? c.experts
                                                                   : c.top_k;
    if (list.empty()) r.fail(key, "expected at least one value");
  }
  for (int e : c.experts) {
    for (int k : c.top_k) {
      if (k > e)
        r.fail("top_k", std::to_string(k) + " is more than " + std::to_string(e) + " experts");
    }
    for (int ranks : c.ranks) {
      if ((e + ranks * c.redundant_per_rank) % ranks != 0 ||
          ranks > e + ranks * c.redundant_per_rank) {
        r.fail("experts", std::to_string(e) + " experts do not fill " + std::to_string(ranks) +
                              " ranks evenly (with redundant_per_rank " +
                              std::to_string(c.redundant_per_rank) + ")");
      }
    }
  }
}

void finish_paths(C* c) {
  if (!c->output_dir.empty()) c->output_dir = absolute_path(c->output_dir);
}

}  // namespace

ExpertRlTrainConfig load_expert_rl_train_config(const std::string& path) {
  return parse_expert_rl_train_config(read_text_file(path, "training configuration"), path);
}

ExpertRlTrainConfig parse_expert_rl_train_config(const std::string& text, const std::string& file) {
  const YAML::Node root = parse_yaml_text(text, file);
  return with_yaml_errors(file, [&] {
    C c;
    const ConfigSource s{YamlReader(file), fs::path(file).parent_path().string()};
    if (!root.IsNull()) {
      s.reader.expect_map(root, "");
      if (root["format_version"]) {
        YamlReader r(file);
        r.check_format_version(root, 1, 0);
      }
      read_level(fields(), &c, s, root, "");
    }
    finish_paths(&c);
    check_config(c, s.reader);
    return c;
  });
}

void apply_expert_rl_override(ExpertRlTrainConfig* c, const std::string& assignment) {
  const YamlReader reader("--set");
  const auto [key, text] = split_option(assignment, "--set");
  const YAML::Node value = parse_yaml_text(text, "--set " + key);
  const ConfigSource s{reader, fs::current_path().string()};
  const Field* f = find_field(fields(), key);
  if (!f || key == "agent") {
    std::vector<std::string> keys = field_keys(fields());
    keys.erase(keys.begin());  // "agent": a key of the file only
    unknown_key(reader, "", key, keys);
  }
  f->read(*c, s, value, key);
  finish_paths(c);
  check_config(*c, reader);
}

std::string expert_rl_train_config_yaml(const ExpertRlTrainConfig& c, const std::string& header) {
  return fields_yaml(fields(), c, header);
}

bool same_expert_rl_train_config(const ExpertRlTrainConfig& a, const ExpertRlTrainConfig& b) {
  return same_fields(fields(), a, b);
}

}  // namespace placer
