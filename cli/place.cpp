// `placer place`: run one placement method (or a portfolio of them), simulate its plan,
// report it and write the plan with its prediction plus the effective configuration. A
// method's options are its option table's (agents/<family>/<method>_options.cpp), given as
// `--set KEY=VALUE`; --policy, --samples, --finetune, --finetune-lr, --finetune-samples and
// --stages are shorthands for `--set` of the keys they name (kSugar).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <sstream>

#include "agents/portfolio/method_portfolio.h"
#include "cli/command_options.h"
#include "cli/common.h"
#include "cli/placing.h"
#include "cli/profile_choice.h"
#include "simulator/trace.h"
#include "src/io/plan_io.h"
#include "src/plan/plan_notes.h"
#include "src/util/error.h"
#include "src/util/files.h"
#include "src/util/format.h"
#include "src/util/progress.h"

namespace placer::cli {
namespace {

/// --method when none is given (and no --policy): every fast method and the learned placers
/// zero-shot, the best plan kept (agents/portfolio/method_portfolio.h).
constexpr const char* kDefaultMethod = "auto";
/// --method when only --policy is given: the learned placer.
constexpr const char* kPolicyMethod = "gdp";

struct PlaceArgs {
  ProblemArgs problem;
  std::string method, output, trace;
  int64_t budget_evals = 0;
  double budget_seconds = 0;
  uint64_t seed = 1;
  // The shorthands for `--set KEY=VALUE` (kSugar), as given.
  std::string policy, samples, finetune, finetune_lr, finetune_samples, stages;
  std::vector<std::string> set;        ///< --set KEY=VALUE: the method's options
  std::vector<std::string> agent_set;  ///< --agent-set KEY=VALUE: deprecated alias of --set
  bool allow_compression = false;  ///< sync methods may compress gradients (docs/sync.md)
  int max_staleness = 0;           ///< ... and let syncs run this many steps late
  /// The shorthand flags given, as (flag, "KEY=VALUE"), in kSugar order.
  std::vector<std::pair<std::string, std::string>> sugar;
};

/// A flag that stands for `--set KEY=VALUE` of the chosen method's options.
struct Sugar {
  const char* flag;
  const char* key;
  std::string PlaceArgs::*value;
};
const Sugar kSugar[] = {{"--policy", "policy", &PlaceArgs::policy},
                        {"--samples", "samples", &PlaceArgs::samples},
                        {"--finetune", "finetune", &PlaceArgs::finetune},
                        {"--finetune-lr", "lr", &PlaceArgs::finetune_lr},
                        {"--finetune-samples", "ppo_samples", &PlaceArgs::finetune_samples},
                        {"--stages", "stages", &PlaceArgs::stages}};

/// The method's options as given: the shorthands, then --set, then its deprecated alias
/// --agent-set, in order (a later value of a key wins).
MethodSettings method_settings(const PlaceArgs& a) {
  MethodSettings s;
  s.flag = a.agent_set.empty() ? "--set" : "--agent-set";
  // --routing also reaches a method that reads the routing itself (the expert placers).
  if (!a.problem.routing.empty() && !is_portfolio(a.method)) {
    for (const OptionSpec& o : method_info(a.method).options) {
      if (o.key == "routing") s.sets.push_back("routing=" + a.problem.routing);
    }
  }
  for (const auto& [flag, kv] : a.sugar) s.sets.push_back(kv);
  s.sets.insert(s.sets.end(), a.set.begin(), a.set.end());
  s.sets.insert(s.sets.end(), a.agent_set.begin(), a.agent_set.end());
  return s;
}

/// The registered methods whose options include `key`, comma separated.
std::string methods_with_option(const std::string& key) {
  std::string out;
  for (const MethodInfo& m : placer_methods()) {
    for (const OptionSpec& o : m.options) {
      if (o.key == key) out += (out.empty() ? "" : ", ") + m.name;
    }
  }
  return out.empty() ? "none in this build" : out;
}

/// Whether --method takes the option `key`: a key of its schema or, for a composite, of the
/// inner method the settings choose (`--method hybrid --set inner=gdp --samples 4`).
bool method_takes(const PlaceArgs& a, const std::string& key) {
  if (is_portfolio(a.method)) return false;
  const MethodInfo& m = method_info(a.method);
  auto has_key = [&key](const std::vector<OptionSpec>& options) {
    for (const OptionSpec& o : options) {
      if (o.key == key) return true;
    }
    return false;
  };
  if (has_key(m.options)) return true;
  if (!m.effective_options) return false;
  try {
    return has_key(m.effective_options(method_settings(a)));
  } catch (const ValidationError&) {
    return false;  // a bad --set: make_placer names it
  }
}

/// A shorthand flag whose key the method does not take: named by the flag, not the key.
void check_sugar(const PlaceArgs& a) {
  for (const auto& [flag, kv] : a.sugar) {
    const std::string key = kv.substr(0, kv.find('='));
    if (!method_takes(a, key)) {
      throw ValidationError(flag + " is `--set " + key + "=...`, an option --method " + a.method +
                            " does not take (methods with it: " + methods_with_option(key) + ")");
    }
  }
}

/// --method with its options, read once: the placer, or for a portfolio its options.
struct ConfiguredMethod {
  std::unique_ptr<Placer> placer;  ///< null for a portfolio
  PortfolioOptions portfolio;      ///< a portfolio's options (`objective`)
};

/// The method with its options (checked, and a policy file found) before anything is loaded.
ConfiguredMethod configured_method(const PlaceArgs& a) {
  check_sugar(a);
  const MethodSettings settings = method_settings(a);
  ConfiguredMethod m;
  if (is_portfolio(a.method)) {
    m.portfolio = portfolio_options(a.method, settings);
  } else {
    m.placer = make_placer(a.method, settings);
  }
  return m;
}

SearchBudget budget_of(const PlaceArgs& a) {
  SearchBudget budget;
  budget.max_evaluations = a.budget_evals;
  budget.max_seconds = a.budget_seconds;
  budget.seed = a.seed;
  budget.allow_compression = a.allow_compression;
  budget.max_staleness = a.max_staleness;
  return budget;
}

/// Runs the method (or the portfolio) on the problem; a failing method is an error.
MethodRun run_chosen(const PlaceArgs& a, const ConfiguredMethod& method, const ProblemSetup& s,
                     const SearchBudget& budget) {
  if (!method.placer) return run_portfolio(a.method, s, budget, std::cerr, method.portfolio);
  MethodRun chosen = run_placer(*method.placer, s, budget);
  if (!chosen.ok) {
    // Methods usually name themselves in their messages; don't say it twice.
    const std::string prefix = a.method + ":";
    if (chosen.error.compare(0, prefix.size(), prefix) == 0) throw Error(chosen.error);
    throw Error("method " + a.method + ": " + chosen.error);
  }
  return chosen;
}

/// out.plan.yaml -> out.place.yaml (also for .plan.json, .yaml, .json and other names).
std::string config_path_for(const std::string& output) {
  for (const char* ext : {".plan.yaml", ".plan.yml", ".plan.json", ".yaml", ".yml", ".json"}) {
    if (ends_with(output, ext) && output.size() > std::string(ext).size()) {
      return output.substr(0, output.size() - std::string(ext).size()) + ".place.yaml";
    }
  }
  return output + ".place.yaml";
}

std::string yaml_quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

/// The method's options with the values this run used, as "  key: value" lines (paths and
/// text quoted; a portfolio's from `portfolio`); nothing for a method without options.
std::string options_yaml(const PlaceArgs& a, const PortfolioOptions& portfolio) {
  if (is_portfolio(a.method)) {
    // Written when given: a portfolio has one option, `objective` (step by default).
    const Objective objective = portfolio.objective;
    if (objective == Objective::kStepTime) return "";
    return std::string("options:  # the portfolio's (docs/cli.md)\n  objective: ") +
           to_string(objective) + "\n";
  }
  const MethodInfo& m = method_info(a.method);
  if (!m.effective_options) return "";
  std::string out =
      "options:  # the method's, with the values used (`placer methods " + a.method + "`)\n";
  for (const OptionSpec& o : m.effective_options(method_settings(a))) {
    const bool quote = o.type == "path" || o.type == "text";
    out += "  " + o.key + ": " + (quote ? yaml_quote(o.default_value) : o.default_value) + "\n";
  }
  return out;
}

void write_list(std::ostream& f, const char* key, const std::vector<std::string>& values) {
  if (values.empty()) return;
  f << key << ": [";
  for (size_t i = 0; i < values.size(); ++i) f << (i ? ", " : "") << yaml_quote(values[i]);
  f << "]\n";
}

// Written atomically (write_text_atomic): a failed write leaves no partial file.
void write_config(const PlaceArgs& a, const ProblemSetup& s, const MethodRun& run,
                  const PortfolioOptions& portfolio, const std::string& path) {
  std::ostringstream f;
  f << "# Effective configuration of the `placer place` run that wrote " << a.output << "\n";
  f << "format_version: \"1.0\"\n";
  f << "command: place\n";
  const std::string model = onnx_model_of(a.problem);
  if (model.empty()) {
    f << "graph: " << yaml_quote(a.problem.graph) << "\n";
  } else {
    f << "model: " << yaml_quote(model) << "\n";
    f << "import: {batch_size: " << a.problem.batch_size << ", seq_len: " << a.problem.seq_len
      << "}  # 0 = the model's\n";
  }
  f << "cluster: " << yaml_quote(a.problem.cluster) << "\n";
  const std::string profile = profile_path_for(a.problem.profile, s.cluster);
  f << "profile: " << (profile.empty() ? "default" : yaml_quote(profile)) << "\n";
  f << "expand: " << (a.problem.no_expand ? "false" : "true") << "\n";
  f << "optimizer: " << a.problem.optimizer << "\n";
  f << "devices: [";
  for (size_t i = 0; i < s.devices.size(); ++i) f << (i ? ", " : "") << s.devices[i];
  f << "]  # empty = all " << s.cluster.num_devices() << " devices\n";
  f << "method: " << a.method << "\n";
  f << "chosen_method: " << run.method << "\n";
  f << options_yaml(a, portfolio);
  write_list(f, "set", a.set);
  write_list(f, "agent_set", a.agent_set);
  f << "budget: {evaluations: " << a.budget_evals << ", seconds: " << a.budget_seconds
    << ", seed: " << a.seed << "}  # 0 = the method's default\n";
  f << "plan: " << yaml_quote(a.output) << "\n";
  f << "result: {step_time_s: " << run.result.step_time
    << ", oom: " << (run.result.oom ? "true" : "false")
    << ", search_seconds: " << run.search_seconds << "}\n";
  write_text_atomic(path, f.str(), "configuration");
}

void report(const ProblemSetup& s, const MethodRun& run, const SimResult& single,
            const std::string& profile) {
  const Graph& g = s.graph;
  const Cluster& c = s.cluster;
  std::ostream& out = std::cout;
  out << "graph        " << g.name() << " (" << (g.is_training_step() ? "training step" : "forward")
      << ", " << g.num_ops() << " ops)\n";
  out << "cluster      " << c.name << " (" << c.num_devices() << " devices"
      << (s.devices.empty() ? "" : ", " + std::to_string(s.devices.size()) + " used") << ")\n";
  out << "profile      " << profile << "\n";
  out << "method       " << run.method << "\n\n";
  const SimResult& r = run.result;
  out << "step time    " << human_time(r.step_time) << "\n";
  const int single_dev = s.devices.empty() ? 0 : s.devices.front();
  out << "speed-up     "
      << (r.step_time > 0 ? fixed(single.step_time / r.step_time, 2) + "x" : std::string("-"))
      << " over a single device (" << human_time(single.step_time) << " on "
      << c.device(single_dev).name << (single.oom ? ", which runs out of memory" : "") << ")\n";
  const int peak = max_peak_device(r);
  out << "peak memory  " << human_bytes(double(r.peak_memory[peak])) << " on "
      << c.device(peak).name << " (of " << human_bytes(double(c.device(peak).spec.memory_bytes))
      << ")";
  if (r.oom) {
    out << "; OUT OF MEMORY on";
    for (int d : r.oom_devices) out << " " << c.device(d).name;
  } else {
    out << "; fits";
  }
  out << "\n";
  int used = 0;
  for (double t : r.compute_time) used += t > 0 ? 1 : 0;
  out << "devices      " << used << " of " << c.num_devices() << " compute\n";
  out << "search time  " << human_time(run.search_seconds) << "\n";
  for (const std::string& note : plan_notes(run.plan)) out << "note         " << note << "\n";
  if (run.plan.synchronization.enabled) {  // lossy choices change the steps training needs
    const std::vector<std::string> lossy = lossy_choices(run.plan.synchronization, g);
    out << "lossy sync   " << (lossy.empty() ? std::string("none") : lossy.front());
    for (size_t i = 1; i < lossy.size(); ++i) out << "; " << lossy[i];
    out << "\n";
  }
}

/// The trace, the plan and the effective configuration, each path printed.
void write_outputs(const PlaceArgs& a, const ProblemSetup& s, const MethodRun& chosen,
                   const PortfolioOptions& portfolio) {
  if (!a.trace.empty()) {
    SimOptions opts = s.sim_options();
    opts.critical_path = true;
    opts.record_events = true;
    const SimResult traced = s.simulator->run(chosen.plan, opts);
    ensure_parent_dir(a.trace);
    write_chrome_trace(traced, s.graph, s.cluster, a.trace);
    std::cout << "trace        " << a.trace << "\n";
  }
  ensure_parent_dir(a.output);
  save_plan(chosen.plan, s.graph, s.cluster, a.output);
  std::cout << "plan         " << a.output << " (with the predicted step time and memory)\n";
  const std::string config = config_path_for(a.output);
  write_config(a, s, chosen, portfolio, config);
  std::cout << "config       " << config << "\n";
}

void run_place(PlaceArgs a) {
  if (a.method.empty()) a.method = a.policy.empty() ? kDefaultMethod : kPolicyMethod;
  onnx_model_of(a.problem);  // a model is named, once (before any policy is loaded)
  // The method name, its options and its policy file are checked before loading anything.
  const ConfiguredMethod method = configured_method(a);
  const std::unique_ptr<ProblemSetup> s = load_problem(a.problem);
  const MethodRun chosen = run_chosen(a, method, *s, budget_of(a));
  report(*s, chosen, simulate_single_device(*s), profile_label(a.problem.profile, s->cluster));
  warn_unexportable(chosen.plan, s->graph, a.output);
  write_outputs(a, *s, chosen, method.portfolio);
}

void place_options(CLI::App* sub, PlaceArgs& a) {
  add_problem_options(sub, &a.problem);
  sub->add_option("-m,--method", a.method,
                  std::string("Placement method (`placer methods` lists them), or 'best': "
                              "every fast method, keeping the fastest plan that fits, or 'auto': "
                              "best and the learned placers zero-shot within --budget-seconds "
                              "(default 60 s for them); 'gdp' is the learned placer; the "
                              "composites 'hybrid' and 'stages' take their inner method as "
                              "--set inner=M (M+hybrid and gdp+stages are aliases). Default: ") +
                      kDefaultMethod + " ('gdp' with --policy)");
  add_budget_options(sub, a.budget_evals,
                     "Search budget in simulator evaluations (0 = the method's default)",
                     a.budget_seconds, "Search budget in wall-clock seconds (0 = none)");
  add_seed_option(sub, a.seed);
  add_output_option(sub, a.output,
                    "Plan to write (.yaml or .json); the effective configuration goes next to "
                    "it as <name>.place.yaml")
      ->required();
  sub->add_option("--trace", a.trace, "Write a Chrome/Perfetto trace (JSON) of the step");
  sub->add_option("--policy", a.policy,
                  "--set policy=P: a learned policy file (implies --method gdp; gdp, gdp+stages, "
                  "rainbow-pp zero-shot, placeto, autosync take it)");
  sub->add_option("--samples", a.samples,
                  "--set samples=N: placements / cut sets sampled besides the greedy one (gdp; "
                  "rainbow-pp and placeto with a policy)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--finetune", a.finetune,
                  "--set finetune=N: gdp's PPO fine-tuning updates on this graph; placeto with a "
                  "policy: N > 0 fine-tunes while the budget lasts")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--finetune-lr", a.finetune_lr, "--set lr=LR: gdp's fine-tuning learning rate")
      ->check(CLI::PositiveNumber);
  sub->add_option("--finetune-samples", a.finetune_samples,
                  "--set ppo_samples=K: gdp's sampled placements per fine-tuning update")
      ->check(CLI::PositiveNumber);
  sub->add_option("--set", a.set,
                  "KEY=VALUE option of the method (repeatable; `placer methods M` lists a "
                  "method's options with their defaults; e.g. rainbow-opp episodes=600, "
                  "reward=paper, lr=5e-4; colocrl samples=8, save_policy=p.pt)");
  sub->add_option("--agent-set", a.agent_set,
                  "Deprecated alias of --set (kept for one release)");
  sub->add_flag("--allow-compression", a.allow_compression,
                "autosync, autosync-search: may compress gradients (fp16, PowerSGD, top-k); "
                "off by default");
  sub->add_option("--max-staleness", a.max_staleness,
                  "autosync, autosync-search: may let a variable's sync finish up to S steps "
                  "late (0 = off)")
      ->check(CLI::Range(0, 64));
  sub->add_option("--stages", a.stages, "--set stages=N: rainbow-pp's pipeline stages")
      ->check(CLI::Range(2, 1 << 20));
}

/// run_place with the shorthands given on the command line.
void run_place_given(const PlaceArgs& args, const CLI::App& sub) {
  PlaceArgs a = args;
  if (!a.agent_set.empty()) {
    std::cerr << "placer: warning: --agent-set is deprecated; use --set KEY=VALUE\n";
  }
  for (const Sugar& s : kSugar) {
    if (sub.count(s.flag) > 0) a.sugar.emplace_back(s.flag, std::string(s.key) + "=" + a.*s.value);
  }
  run_place(std::move(a));
}

}  // namespace

static CommandRegistrar place_registrar = define_command<PlaceArgs>(
    15, "place",
    "Place a model (an ONNX model, imported here, or a graph file) on a cluster with one\n"
    "method (default: the best of the fast ones), simulate the plan and write it with its\n"
    "predicted step time and memory:\n"
    "  placer place --model M.onnx --batch-size 16 --cluster C.cluster.yaml -o out.plan.yaml",
    place_options, run_place_given);

}  // namespace placer::cli
