#include "agents/training/train_config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <sstream>

#include "agents/common/option_table.h"
#include "agents/common/rainbow_config.h"
#include "agents/training/config_fields.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"

namespace placer {
namespace {

namespace fs = std::filesystem;
using Json = ConfigJson;
using Source = ConfigSource;
using Field = ConfigField<TrainConfig>;

#define PLACER_REF(member) PLACER_CONFIG_REF(TrainConfig, member)

constexpr int64_t kMaxInt = kConfigMaxInt;
constexpr int64_t kMaxInt64 = kConfigMaxInt64;
constexpr double kMaxDouble = kConfigMaxDouble;

const std::vector<Field>& fields() {
  static const std::vector<Field> f = [] {
    std::vector<Field> v;
    v.push_back(string_field<TrainConfig>("corpus", PLACER_REF(corpus), {}, true));
    v.push_back(string_list_field<TrainConfig>("tags", PLACER_REF(tags), ListKind::kTags));
    v.push_back(int_field<TrainConfig>("max_ops", PLACER_REF(max_ops), 1, kMaxInt64));
    v.push_back(string_list_field<TrainConfig>("clusters", PLACER_REF(clusters), ListKind::kPaths));
    v.push_back(int_list_field<TrainConfig>("device_counts", PLACER_REF(device_counts), 1, 4096));
    v.push_back(int_list_field<TrainConfig>("micro_batches", PLACER_REF(micro_batches), 1, 4096));
    v.push_back(bool_field<TrainConfig>("stages", PLACER_REF(stages)));
    v.push_back(string_field<TrainConfig>("profile", PLACER_REF(profile), {}, true));
    v.push_back(string_field<TrainConfig>("optimizer", PLACER_REF(optimizer),
                                          {"sgd", "momentum", "adam"}, false, "optimizer"));
    v.push_back(string_list_field<TrainConfig>("reference_methods", PLACER_REF(reference_methods),
                                               ListKind::kMethods, nullptr, "method"));
    v.push_back(int_field<TrainConfig>("updates", PLACER_REF(updates), 0, kMaxInt64));
    v.push_back(
        int_field<TrainConfig>("imitation_updates", PLACER_REF(imitation_updates), 0, kMaxInt64));
    v.push_back(int_field<TrainConfig>("seed", PLACER_REF(seed), 0, kMaxInt64));
    v.push_back(string_field<TrainConfig>("output_dir", PLACER_REF(output_dir), {}, false));
    v.push_back(
        int_field<TrainConfig>("checkpoint_every", PLACER_REF(checkpoint_every), 1, kMaxInt));
    v.push_back(int_field<TrainConfig>("eval_every", PLACER_REF(eval_every), 0, kMaxInt));
    v.push_back(int_field<TrainConfig>("eval_instances", PLACER_REF(eval_instances), 0, kMaxInt));
    v.push_back(int_field<TrainConfig>("eval_samples", PLACER_REF(eval_samples), 0, kMaxInt));
    v.push_back(string_list_field<TrainConfig>("eval_baselines", PLACER_REF(eval_baselines),
                                               ListKind::kMethods, nullptr, "method"));
    v.push_back(string_field<TrainConfig>("init_policy", PLACER_REF(init_policy), {}, true));

    v.push_back(int_field<TrainConfig>("net.hidden", PLACER_REF(net.hidden), 1, 1 << 16));
    v.push_back(int_field<TrainConfig>("net.sage_layers", PLACER_REF(net.sage_layers), 0, 64));
    v.push_back(
        int_field<TrainConfig>("net.op_embedding", PLACER_REF(net.op_embedding), 0, 1 << 16));
    v.push_back(int_field<TrainConfig>("net.txl_layers", PLACER_REF(net.txl_layers), 0, 64));
    v.push_back(int_field<TrainConfig>("net.heads", PLACER_REF(net.heads), 1, 1 << 12));
    v.push_back(int_field<TrainConfig>("net.ffn", PLACER_REF(net.ffn), 1, 1 << 20));
    v.push_back(int_field<TrainConfig>("net.segment", PLACER_REF(net.segment), 1, 1 << 20));
    v.push_back(int_field<TrainConfig>("net.mem_len", PLACER_REF(net.mem_len), 0, 1 << 20));
    v.push_back(int_field<TrainConfig>("net.max_devices", PLACER_REF(net.max_devices), 1, 4096));
    v.push_back(bool_field<TrainConfig>("net.superposition", PLACER_REF(net.superposition)));

    // Adam diverges far below a learning rate of 1 (1e308 ended in a NaN policy); PPO's
    // clip is a ratio bound, tens of percent.
    v.push_back(double_field<TrainConfig>("ppo.lr", PLACER_REF(ppo.lr), 0, 1, true));
    v.push_back(double_field<TrainConfig>("ppo.clip", PLACER_REF(ppo.clip), 0, 1, true));
    v.push_back(
        double_field<TrainConfig>("ppo.entropy", PLACER_REF(ppo.entropy), 0, kMaxDouble, false));
    v.push_back(int_field<TrainConfig>("ppo.epochs", PLACER_REF(ppo.epochs), 1, kMaxInt));
    v.push_back(int_field<TrainConfig>("ppo.samples", PLACER_REF(ppo.samples), 1, kMaxInt));
    v.push_back(int_field<TrainConfig>("ppo.graphs_per_update", PLACER_REF(ppo.graphs_per_update),
                                       1, kMaxInt));
    v.push_back(string_field<TrainConfig>("ppo.baseline", PLACER_REF(ppo.baseline), {"mean", "ema"},
                                          false, "baseline"));
    v.push_back(double_field<TrainConfig>("ppo.ema_decay", PLACER_REF(ppo.ema_decay), 0, 1, false));
    v.push_back(double_field<TrainConfig>("ppo.max_grad_norm", PLACER_REF(ppo.max_grad_norm), 0,
                                          kMaxDouble, false));
    v.push_back(double_field<TrainConfig>("ppo.oom_penalty", PLACER_REF(ppo.oom_penalty),
                                          -kMaxDouble, kMaxDouble, false));
    v.push_back(
        bool_field<TrainConfig>("ppo.normalize_advantages", PLACER_REF(ppo.normalize_advantages)));

    // Distribution (docs/distributed.md). The shard count (it fixes the global batch) and
    // the timeout are configuration (--dist-timeout overrides the latter); ranks and the
    // rendezvous are flags of the launch.
    v.push_back(int_field<TrainConfig>("dist.shards", PLACER_REF(dist.shards), 0, kMaxInt));
    v.push_back(double_field<TrainConfig>("dist.timeout", PLACER_REF(dist.timeout_seconds), 0,
                                          kMaxDouble, true));
    return v;
  }();
  return f;
}

#undef PLACER_REF

}  // namespace

TrainConfig parse_train_config(const std::string& text, const std::string& file,
                               const std::vector<std::string>& methods) {
  const YAML::Node root = parse_yaml_text(text, file);
  // yaml-cpp exceptions the checks miss still name the file.
  return with_yaml_errors(file, [&] {
    TrainConfig c;
    Source s{YamlReader(file), fs::path(file).parent_path().string(), methods};
    if (root.IsNull()) return c;  // an empty file: every default
    s.reader.expect_map(root, "");
    if (root["format_version"]) s.reader.check_format_version(root, 1, 0);
    read_level(fields(), &c, s, root, "", {"agent"});
    if (const YAML::Node agent = root["agent"]) {
      // Optional (train_config_file_agent chose this reader); not written back.
      check_name(s.reader, "agent", read_string(s, agent, "agent"), {"gdp"}, "agent");
    }
    if (!c.output_dir.empty()) c.output_dir = absolute_path(c.output_dir);
    return c;
  });
}

void apply_train_override(TrainConfig* config, const std::string& assignment,
                          const std::vector<std::string>& methods) {
  const YamlReader reader("--set");
  const auto [key, text] = split_option(assignment, "--set");
  const Field* f = find_field(fields(), key);
  if (!f) unknown_key(reader, "", key, train_config_keys());
  const YAML::Node value = parse_yaml_text(text, "--set " + key);
  Source s{reader, fs::current_path().string(), methods};
  f->read(*config, s, value, key);
  if (key == "output_dir" && !config->output_dir.empty()) {
    config->output_dir = absolute_path(config->output_dir);
  }
}

std::vector<std::string> train_config_keys() { return field_keys(fields()); }

std::string train_config_yaml(const TrainConfig& config, const std::string& header) {
  return fields_yaml(fields(), config, header);
}

bool same_train_config(const TrainConfig& a, const TrainConfig& b) {
  return same_fields(fields(), a, b);
}

// ------------------------------------------------------------------ rainbow-pp config ----

namespace {

using PPField = ConfigField<RainbowPPTrainConfig>;

#define PP_REF(member) PLACER_CONFIG_REF(RainbowPPTrainConfig, member)
#define PP_INT(name, lo, hi) int_field<RainbowPPTrainConfig>(#name, PP_REF(name), lo, hi)

std::vector<std::string> distribution_names() { return {"uniform", "normal", "binomial"}; }

const std::vector<PPField>& pp_fields() {
  static const std::vector<PPField> f = [] {
    std::vector<PPField> v;
    v.push_back(PPField{
        "agent",
        [](RainbowPPTrainConfig&, const Source& s, const YAML::Node& n, const std::string& f) {
          check_name(s.reader, f, read_string(s, n, f), {"rainbow-pp"}, "agent");
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
    PPField distributions = string_list_field<RainbowPPTrainConfig>(
        "distributions", PP_REF(distributions), ListKind::kNames, &distribution_names,
        "distribution");
    distributions.read = [list = distributions.read](RainbowPPTrainConfig& c, const Source& s,
                                                     const YAML::Node& n, const std::string& f) {
      list(c, s, n, f);  // an error ends the command: c is not used after it
      if (c.distributions.empty()) s.reader.fail(f, "needs at least one distribution");
    };
    v.push_back(distributions);
    v.push_back(PP_INT(eval_every, 0, kMaxInt));
    v.push_back(PP_INT(eval_arrays, 0, kMaxInt));
    v.push_back(string_list_field<RainbowPPTrainConfig>("eval_graphs", PP_REF(eval_graphs),
                                                        ListKind::kPaths));
    v.push_back(string_field<RainbowPPTrainConfig>("eval_cluster", PP_REF(eval_cluster), {}, true));
    v.push_back(PP_INT(checkpoint_every, 1, kMaxInt));
    v.push_back(PP_INT(seed, 0, kMaxInt64));
    v.push_back(string_field<RainbowPPTrainConfig>("output_dir", PP_REF(output_dir), {}, false));
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
#undef PP_REF

}  // namespace

std::string train_config_file_agent(const std::string& path) {
  const std::string text = read_text_file(path, "training configuration");
  const YAML::Node root = parse_yaml_text(text, path);
  if (!root.IsMap() || !root["agent"]) return "";
  const YamlReader r(path);
  const std::string a = r.scalar(root["agent"], "agent");
  check_name(r, "agent", a, {"gdp", "rainbow-pp", "placeto", "expert-rl"}, "agent");
  return a;
}

RainbowPPTrainConfig parse_rainbow_pp_train_config(const std::string& text,
                                                   const std::string& file) {
  const YAML::Node root = parse_yaml_text(text, file);
  return with_yaml_errors(file, [&] {
    RainbowPPTrainConfig c;
    Source s{YamlReader(file), fs::path(file).parent_path().string()};
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
        const PPField* f = find_field(pp_fields(), key);
        if (!f) unknown_key(s.reader, "", key, field_keys(pp_fields()));
        f->read(c, s, it->second, key);
      }
    }
    if (!c.output_dir.empty()) c.output_dir = absolute_path(c.output_dir);
    return c;
  });
}

void apply_rainbow_pp_key(RainbowPPTrainConfig* config, const std::string& assignment) {
  const YamlReader reader("--set");
  const auto [key, value] = split_option(assignment, "--set");
  if (key.rfind("rainbow.", 0) == 0) {
    static const OptionTable<RainbowPPTrainConfig> agent_keys =
        OptionTable<RainbowPPTrainConfig>("rainbow-pp training")
            .nest(rainbow_config_table(), [](auto& c) -> auto& { return c.rainbow; }, "rainbow.");
    agent_keys.set(config, key, value, "--set");
    return;
  }
  const PPField* f = find_field(pp_fields(), key);
  if (!f || key == "rainbow") {
    std::vector<std::string> keys = field_keys(pp_fields());
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
  return same_fields(pp_fields(), a, b);
}

}  // namespace placer
