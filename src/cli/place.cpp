// `placer place`: run one placement method (or the best of the fast ones), simulate its
// plan, report it and write the plan with its prediction plus the effective configuration.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "agents/common/option_table.h"
#include "agents/gdp/gdp.h"
#include "agents/placeto/placeto.h"
#include "agents/rainbow/rainbow_pp_policy.h"
#include "agents/sync/autosync_rl.h"
#include "simulator/trace.h"
#include "src/cli/command_options.h"
#include "src/cli/common.h"
#include "src/cli/method_portfolio.h"
#include "src/cli/placing.h"
#include "src/io/plan_io.h"
#include "src/plan/plan_notes.h"
#include "src/util/error.h"
#include "src/util/files.h"
#include "src/util/format.h"
#include "src/util/progress.h"

namespace placer::cli {
namespace {

/// --method when none is given (and no --policy): every fast method and the learned placers
/// zero-shot, the best plan kept (src/cli/method_portfolio.h).
constexpr const char* kDefaultMethod = "auto";
/// auto's wall-clock budget when --budget-seconds is not given.
constexpr double kAutoSeconds = 60;

struct PlaceArgs {
  ProblemArgs problem;
  std::string method, output, trace;
  int64_t budget_evals = 0;
  double budget_seconds = 0;
  uint64_t seed = 1;
  // The learned placer (--method gdp).
  std::string policy;           ///< "" = default_policy_path()
  int samples = 16;             ///< sampled placements besides the greedy one
  int finetune = 0;             ///< PPO fine-tuning updates on this graph
  double finetune_lr = 0;       ///< 0 = PpoConfig's default
  int finetune_samples = 0;     ///< 0 = PpoConfig's default
  int stages = 0;               ///< --method rainbow-pp: pipeline stages (0 = default)
  std::vector<std::string> set;        ///< --set KEY=VALUE: the method's options
  std::vector<std::string> agent_set;  ///< --agent-set KEY=VALUE: deprecated alias of --set
  bool allow_compression = false;  ///< sync methods may compress gradients (docs/sync.md)
  int max_staleness = 0;           ///< ... and let syncs run this many steps late
  std::set<std::string> given;  ///< the gdp / rainbow-pp options given on the command line
};

bool is_gdp(const PlaceArgs& a) { return a.method == "gdp"; }
bool is_rainbow_pp(const PlaceArgs& a) { return a.method == "rainbow-pp"; }
bool is_placeto(const PlaceArgs& a) { return a.method == "placeto"; }
bool is_autosync(const PlaceArgs& a) { return a.method == "autosync"; }
/// rainbow-pp with --policy: zero-shot inference with a pretrained pipeline-cut policy.
bool is_rainbow_pp_policy(const PlaceArgs& a) { return is_rainbow_pp(a) && !a.policy.empty(); }

/// The method's options as given: --set, then its deprecated alias --agent-set, in order.
MethodSettings method_settings(const PlaceArgs& a) {
  MethodSettings s;
  s.flag = a.agent_set.empty() ? "--set" : "--agent-set";
  s.sets = a.set;
  s.sets.insert(s.sets.end(), a.agent_set.begin(), a.agent_set.end());
  return s;
}

/// --method gdp: its flags as the options they stand for, then the --set ones (later wins).
MethodSettings gdp_settings(const PlaceArgs& a, MethodSettings s) {
  std::vector<std::string> sets = {"policy=" + a.policy, "samples=" + std::to_string(a.samples),
                                   "finetune=" + std::to_string(a.finetune)};
  if (a.finetune_lr > 0) sets.push_back("lr=" + print_option_number(a.finetune_lr));
  if (a.finetune_samples > 0) sets.push_back("ppo_samples=" + std::to_string(a.finetune_samples));
  s.sets.insert(s.sets.begin(), sets.begin(), sets.end());
  return s;
}

/// --method gdp: the policy file to use (--policy, else default_policy_path()), checked to
/// exist before anything is loaded.
std::string gdp_policy_path(const PlaceArgs& a) {
  if (!gdp_available()) {
    throw Error("--method gdp needs LibTorch, and this placer was built without it; install "
                "libtorch-dev (scripts/setup.sh) and rebuild");
  }
  if (!a.policy.empty()) {
    if (!std::filesystem::is_regular_file(a.policy)) {
      throw FileError("--policy: '" + a.policy + "' not found (train one with `placer "
                      "train-policy`; it writes <output-dir>/policy.pt)");
    }
    return a.policy;
  }
  const std::string p = default_policy_path();
  if (!std::filesystem::is_regular_file(p)) {
    throw FileError("--method gdp: no default policy at '" + p + "' (pass --policy P.pt, "
                    "set $PLACER_POLICY, or train one with `placer train-policy`)");
  }
  return p;
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

// Written atomically (write_text_atomic): a failed write leaves no partial file.
void write_config(const PlaceArgs& a, const ProblemSetup& s, const MethodRun& run,
                  const std::string& path) {
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
  f << "profile: " << (a.problem.profile.empty() ? "default" : yaml_quote(a.problem.profile))
    << "\n";
  f << "expand: " << (a.problem.no_expand ? "false" : "true") << "\n";
  f << "optimizer: " << a.problem.optimizer << "\n";
  f << "devices: [";
  for (size_t i = 0; i < s.devices.size(); ++i) f << (i ? ", " : "") << s.devices[i];
  f << "]  # empty = all " << s.cluster.num_devices() << " devices\n";
  f << "method: " << a.method << "\n";
  f << "chosen_method: " << run.method << "\n";
  if (is_gdp(a)) {
    GdpMethodOptions g;
    const MethodSettings sets = gdp_settings(a, method_settings(a));
    gdp_option_table().apply(&g, sets.sets, sets.flag);
    const GdpPlaceOptions& o = g.place;
    f << "policy: " << yaml_quote(a.policy) << "\n";
    f << "gdp: {samples: " << o.samples << ", finetune: " << o.finetune_updates
      << ", finetune_lr: " << o.ppo.lr << ", finetune_samples: " << o.ppo.samples << "}\n";
  }
  if (is_rainbow_pp(a)) {
    f << "rainbow_pp: {stages: " << a.stages << "}  # 0 = min(4, devices)\n";
    if (is_rainbow_pp_policy(a)) {
      f << "policy: " << yaml_quote(a.policy) << "\n";
      f << "rainbow_pp_policy: {samples: " << a.samples << "}\n";
    }
  }
  if (is_autosync(a) && !a.policy.empty()) f << "policy: " << yaml_quote(a.policy) << "\n";
  if (is_placeto(a) && !a.policy.empty()) {
    f << "policy: " << yaml_quote(a.policy) << "\n";
    f << "placeto: {finetune: " << (a.finetune > 0 ? "true" : "false") << "}\n";
  }
  auto write_list = [&f](const char* key, const std::vector<std::string>& values) {
    if (values.empty()) return;
    f << key << ": [";
    for (size_t i = 0; i < values.size(); ++i) f << (i ? ", " : "") << yaml_quote(values[i]);
    f << "]\n";
  };
  write_list("set", a.set);
  write_list("agent_set", a.agent_set);
  f << "budget: {evaluations: " << a.budget_evals << ", seconds: " << a.budget_seconds
    << ", seed: " << a.seed << "}  # 0 = the method's default\n";
  f << "plan: " << yaml_quote(a.output) << "\n";
  f << "result: {step_time_s: " << run.result.step_time
    << ", oom: " << (run.result.oom ? "true" : "false")
    << ", search_seconds: " << run.search_seconds << "}\n";
  write_text_atomic(path, f.str(), "configuration");
}

void report(const ProblemSetup& s, const MethodRun& run, const SimResult& single) {
  const Graph& g = s.graph;
  const Cluster& c = s.cluster;
  std::ostream& out = std::cout;
  out << "graph        " << g.name() << " (" << (g.is_training_step() ? "training step" : "forward")
      << ", " << g.num_ops() << " ops)\n";
  out << "cluster      " << c.name << " (" << c.num_devices() << " devices"
      << (s.devices.empty() ? "" : ", " + std::to_string(s.devices.size()) + " used") << ")\n";
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

void run_place(PlaceArgs a) {
  // --policy implies the learned placer; its options make no sense for the others.
  if (a.method.empty()) a.method = a.policy.empty() ? kDefaultMethod : "gdp";
  onnx_model_of(a.problem);  // a model is named, once (before any policy is loaded)
  if (is_rainbow_pp(a)) {
    for (const char* opt : {"--finetune", "--finetune-lr", "--finetune-samples"}) {
      if (a.given.count(opt)) {
        throw Error(std::string(opt) + " applies to --method gdp only; rainbow-pp with "
                    "--policy places zero-shot");
      }
    }
    if (a.given.count("--samples") && a.policy.empty()) {
      throw Error("--samples applies to rainbow-pp with --policy (zero-shot inference) only");
    }
    if (is_rainbow_pp_policy(a) && !method_settings(a).sets.empty()) {
      throw Error(method_settings(a).flag + " applies to the online rainbow-pp search, not to "
                  "--policy inference");
    }
  } else if (is_placeto(a)) {
    for (const char* opt : {"--finetune-lr", "--finetune-samples"}) {
      if (a.given.count(opt)) throw Error(std::string(opt) + " applies to --method gdp only");
    }
    if ((a.given.count("--samples") || a.given.count("--finetune")) && a.policy.empty()) {
      throw Error("--samples / --finetune apply to placeto with --policy (a family-trained "
                  "policy) only; without it placeto trains online on the graph");
    }
  } else if (is_autosync(a)) {
    for (const char* opt : {"--samples", "--finetune", "--finetune-lr", "--finetune-samples"}) {
      if (a.given.count(opt)) {
        throw Error(std::string(opt) + " does not apply to autosync (--policy places "
                    "zero-shot, then polishes within --budget-evals)");
      }
    }
  } else if (!is_gdp(a)) {
    for (const char* opt : {"--policy", "--samples", "--finetune", "--finetune-lr",
                            "--finetune-samples"}) {
      if (a.given.count(opt)) {
        throw Error(std::string(opt) + " applies to the learned placer only (--method gdp), "
                    "not to --method " + a.method);
      }
    }
  }
  MethodSettings settings = method_settings(a);
  const bool portfolio = a.method == "best" || a.method == "auto";
  if (!settings.sets.empty() && (portfolio || !method_info(a.method).make_with)) {
    throw ValidationError(options_not_taken(settings.flag, a.method));
  }
  if (!is_rainbow_pp(a) && a.given.count("--stages")) {
    throw Error("--stages applies to the pipeline-cut placer only (--method rainbow-pp), not to "
                "--method " + a.method);
  }
  // Check the method name (and the policy file) before loading anything.
  std::unique_ptr<Placer> custom;  // a placer built with its CLI options
  if (is_gdp(a)) {
    a.policy = gdp_policy_path(a);
    custom = make_placer("gdp", gdp_settings(a, settings));
  } else if (!portfolio) {
    make_placer(a.method);
    if (is_rainbow_pp_policy(a)) {
      if (!std::filesystem::is_regular_file(a.policy)) {
        throw FileError("--policy: '" + a.policy + "' not found (the shipped pipeline-cut "
                        "policy is models/pretrained/rainbow_pp.pt; train one with `placer "
                        "train-policy --agent rainbow-pp`)");
      }
      RainbowPPPolicyOptions o;
      o.samples = a.given.count("--samples") ? a.samples : 16;
      custom = make_rainbow_pp_policy_placer(a.policy, o);
    } else if (is_placeto(a) && !a.policy.empty()) {
      if (!std::filesystem::is_regular_file(a.policy)) {
        throw FileError("--policy: '" + a.policy + "' not found (train a Placeto policy on a "
                        "graph family with placer train-policy --agent placeto, docs/placeto.md)");
      }
      PlacetoOptions o;
      o.policy = a.policy;
      if (a.given.count("--samples")) o.zero_shot_samples = a.samples;
      o.finetune = a.finetune > 0;
      custom = make_placeto_placer(o);
    } else if (is_autosync(a) && !a.policy.empty()) {
      AutosyncOptions o;  // zero-shot: the policy acts greedily (missing file: FileError)
      o.policy = a.policy;
      custom = make_autosync_rl_placer(o);
    } else {
      // --stages is rainbow-pp's `stages` option, set before the --set ones.
      if (a.given.count("--stages")) {
        settings.sets.insert(settings.sets.begin(), "stages=" + std::to_string(a.stages));
      }
      // Through the method's option table (the registry); none given: its defaults.
      if (!settings.sets.empty()) custom = make_placer(a.method, settings);
    }
  }
  std::unique_ptr<ProblemSetup> s = load_problem(a.problem);
  SearchBudget budget;
  budget.max_evaluations = a.budget_evals;
  budget.max_seconds = a.budget_seconds;
  budget.seed = a.seed;
  budget.allow_compression = a.allow_compression;
  budget.max_staleness = a.max_staleness;

  MethodRun chosen;
  if (a.method == "best") {
    chosen = run_best(*s, budget, "best", std::cerr);
  } else if (a.method == "auto") {
    const double seconds = a.budget_seconds > 0 ? a.budget_seconds : kAutoSeconds;
    chosen = run_auto(*s, budget, seconds, std::cerr);
    std::cerr << "placer: auto: chose " << chosen.method << " ("
              << human_time(chosen.result.step_time) << ")\n";
  } else {
    chosen = custom ? run_placer(*custom, *s, budget) : run_method(a.method, *s, budget);
    if (!chosen.ok) {
      // Methods usually name themselves in their messages; don't say it twice.
      const std::string prefix = a.method + ":";
      if (chosen.error.compare(0, prefix.size(), prefix) == 0) throw Error(chosen.error);
      throw Error("method " + a.method + ": " + chosen.error);
    }
  }

  const SimResult single = simulate_single_device(*s);
  report(*s, chosen, single);

  if (!a.trace.empty()) {
    SimOptions opts;
    opts.record_events = true;
    const SimResult traced = s->simulator->run(chosen.plan, opts);
    ensure_parent_dir(a.trace);
    write_chrome_trace(traced, s->graph, s->cluster, a.trace);
    std::cout << "trace        " << a.trace << "\n";
  }
  ensure_parent_dir(a.output);
  save_plan(chosen.plan, s->graph, s->cluster, a.output);
  std::cout << "plan         " << a.output << " (with the predicted step time and memory)\n";
  const std::string config = config_path_for(a.output);
  write_config(a, *s, chosen, config);
  std::cout << "config       " << config << "\n";
}

void place_options(CLI::App* sub, PlaceArgs& a) {
  add_problem_options(sub, &a.problem);
  sub->add_option("-m,--method", a.method,
                  std::string("Placement method (`placer methods` lists them), or 'best': "
                              "every fast method, keeping the fastest plan that fits, or 'auto': "
                              "best and the learned placers zero-shot within --budget-seconds "
                              "(default 60 s for them); 'gdp' is the learned placer. Default: ") +
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
                  "Learned policy: a GDP policy (*.pt from `placer train-policy`; implies "
                  "--method gdp, which without it uses the shipped default), or with --method "
                  "rainbow-pp a pipeline-cut policy (`train-policy --agent rainbow-pp`; "
                  "models/pretrained/rainbow_pp.pt) placed zero-shot, or with --method placeto "
                  "a family-trained Placeto policy, or with --method autosync a sync policy "
                  "(`train-policy --agent autosync`) placed zero-shot");
  sub->add_option("--samples", a.samples,
                  "gdp (and rainbow-pp / placeto with --policy): sampled placements / cut sets "
                  "scored besides the greedy one")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--finetune", a.finetune,
                  "gdp: PPO fine-tuning updates on this graph after zero-shot (0 = zero-shot); "
                  "placeto --policy: N > 0 fine-tunes with REINFORCE while the budget lasts")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--finetune-lr", a.finetune_lr,
                  "gdp: fine-tuning learning rate (default: " + fixed(PpoConfig{}.lr, 4) + ")")
      ->check(CLI::PositiveNumber);
  sub->add_option("--finetune-samples", a.finetune_samples,
                  "gdp: sampled placements per fine-tuning update (default: " +
                      std::to_string(PpoConfig{}.samples) + ")")
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
  sub->add_option("--stages", a.stages,
                  "rainbow-pp: pipeline stages (default: min(4, devices))")
      ->check(CLI::Range(2, 1 << 20));
}

/// run_place with the options given on the command line in `given`.
void run_place_given(const PlaceArgs& args, const CLI::App& sub) {
  PlaceArgs a = args;
  if (!a.agent_set.empty()) {
    std::cerr << "placer: warning: --agent-set is deprecated; use --set KEY=VALUE\n";
  }
  for (const char* opt : {"--policy", "--samples", "--finetune", "--finetune-lr",
                          "--finetune-samples", "--stages"}) {
    if (sub.count(opt) > 0) a.given.insert(opt);
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
