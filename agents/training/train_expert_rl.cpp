// `placer train-policy --agent expert-rl [--config FILE] [--set KEY=VALUE]...`: pretrains the
// learned expert placer (agents/experts/expert_rl.h) with REINFORCE on the train split of the
// generated routing corpus (datasets/routing_gen.h) over the configuration's shapes,
// selecting on the validation split when asked. The run's folder gets policy.pt (+ sidecar)
// and config.yaml (the effective configuration, which reproduces the run).
// docs/expert_placement.md.
#include <ctime>
#include <filesystem>
#include <iostream>

#include "agents/common/training_run.h"
#include "agents/experts/expert_rl.h"
#include "agents/training/config_fields.h"
#include "agents/training/expert_rl_train_config.h"
#include "agents/training/trainer_run.h"
#include "datasets/routing_gen.h"
#include "src/util/error.h"
#include "src/util/format.h"
#include "src/util/progress.h"

namespace placer {

namespace {

/// One shape's layers of a split: `count` distributions x 4 layers, each with its position
/// in its model; the layer cost of the shape (4096 tokens per GPU).
ExpertRlLayers shape_layers(const ExpertRlTrainConfig& c, RoutingSplit split, int count, int ranks,
                            int experts, int top_k) {
  ExpertRlLayers set;
  set.topo = ExpertTopology{ranks, std::min(ranks, c.ranks_per_node)};
  set.eplb = EplbOptions{ranks * c.redundant_per_rank, 0};
  set.cost = ExpertRlTrainOptions::layer_cost(ranks, top_k);
  RoutingGenOptions shape;
  shape.layers = 4;
  shape.experts = experts;
  shape.top_k = top_k;
  shape.tokens = 4096 * int64_t(ranks);
  for (const RoutingTrace& t : routing_corpus(split, count, shape, c.train.seed)) {
    const RoutingStats r = t.stats();
    for (size_t l = 0; l < r.share.size(); ++l) {
      set.shares.push_back(r.share[l]);
      set.positions.push_back(double(l) / double(r.share.size() - 1));
    }
  }
  return set;
}

/// Every shape of the configuration, ranks outermost.
std::vector<ExpertRlLayers> corpus(const ExpertRlTrainConfig& c, RoutingSplit split, int count) {
  std::vector<ExpertRlLayers> sets;
  if (count <= 0) return sets;
  for (int ranks : c.ranks) {
    for (int experts : c.experts) {
      for (int k : c.top_k) sets.push_back(shape_layers(c, split, count, ranks, experts, k));
    }
  }
  return sets;
}

ExpertRlTrainConfig effective_config(const TrainArgs& a) {
  for (const char* opt :
       {"--corpus", "--cluster", "--resume", "--plot", "--plot-only", "--eval-every", "--dist-url",
        "--rank", "--world-size", "--threads", "--device", "--dist-timeout"}) {
    if (a.was_given(opt)) {
      throw ValidationError(std::string(opt) + " does not apply to --agent expert-rl");
    }
  }
  ExpertRlTrainConfig c =
      a.config.empty() ? ExpertRlTrainConfig{} : load_expert_rl_train_config(a.config);
  for (const std::string& s : a.sets) apply_expert_rl_override(&c, s);
  if (a.was_given("--updates"))
    apply_expert_rl_override(&c, "updates=" + std::to_string(a.updates));
  if (a.was_given("--seed")) c.train.seed = a.seed;
  if (!a.output_dir.empty()) c.output_dir = absolute_path(a.output_dir);
  c.output_dir = absolute_path(c.output_dir);
  return c;
}

std::string shapes_text(const ExpertRlTrainConfig& c) {
  auto list = [](const std::vector<int>& v) {
    std::string s;
    for (int x : v) s += (s.empty() ? "" : "/") + std::to_string(x);
    return s;
  };
  return "ranks " + list(c.ranks) + " x experts " + list(c.experts) + " x top-k " + list(c.top_k);
}

}  // namespace

void run_train_expert_rl(const TrainArgs& a) {
  const ExpertRlTrainConfig c = effective_config(a);
  const std::string command = command_line();
  if (printed_config(a, " --agent expert-rl",
                     [&](const std::string& h) { return expert_rl_train_config_yaml(c, h); })) {
    return;
  }
  const TrainingRun run(c.output_dir);
  const std::string out = run.file("policy.pt");
  if (std::filesystem::exists(out) && !a.overwrite) {
    throw Error(shown_path(out) +
                " exists; start over with --overwrite or pick another --output-dir");
  }
  const std::vector<ExpertRlLayers> train = corpus(c, RoutingSplit::kTrain, c.distributions);
  const std::vector<ExpertRlLayers> validation =
      corpus(c, RoutingSplit::kValidation, c.validation_distributions);
  run.create();
  run.write_config(expert_rl_train_config_yaml(c, run_config_header(" --agent expert-rl", command)),
                   [&c](const std::string& file) {
                     return same_expert_rl_train_config(load_expert_rl_train_config(file), c);
                   });
  std::cout << "training     expert-rl, " << c.train.updates << " updates on " << train.size()
            << " shapes (" << shapes_text(c) << ") x " << c.distributions
            << " distributions x 4 layers of the routing corpus' train split (seed " << c.train.seed
            << ")\n"
            << std::flush;
  Progress progress("placer: train-policy", c.train.updates);
  const std::clock_t c0 = std::clock();
  ExpertPolicy policy(c.train.hidden, c.train.choose_replicas);
  if (!c.init_policy.empty()) {
    const int copied = policy.start_from(*ExpertPolicy::load(c.init_policy));
    std::cout << "starting     from " << shown_path(c.init_policy) << " (" << copied
              << " parameter tensors)\n";
  }
  double last = 0;
  const double kept =
      policy.pretrain(train, validation, c.train, [&](int64_t u, double r, double v) {
        last = r;
        progress.update(
            u + 1, "step / eplb " + fixed(r, 3) + (v > 0 ? ", validation " + fixed(v, 3) : ""));
      });
  progress.finish();
  const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
  policy.save(out, "REINFORCE, " + std::to_string(c.train.updates) +
                       " updates on the train split of routing_corpus (" + shapes_text(c) + ", " +
                       std::to_string(c.distributions) + " x 4 layers per shape, seed " +
                       std::to_string(c.train.seed) + ")" +
                       (c.train.choose_replicas ? ", choosing the replicas" : "") +
                       (kept > 0 ? "; validation step / eplb " + fixed(kept, 4) : "") + "; " +
                       fixed(cpu, 0) + " CPU seconds; config: config.yaml");
  std::cout << "\nstep / eplb  " << fixed(last, 3) << " (last update's samples, layer model)\n";
  if (kept > 0) {
    std::cout << "validation   " << fixed(kept, 4) << " (kept policy, greedy, geomean over "
              << validation.size() << " shapes)\n";
  }
  if (!c.baseline_policy.empty() && !validation.empty()) {
    std::cout << "baseline     "
              << fixed(ExpertPolicy::load(c.baseline_policy)->validate(validation), 4) << " ("
              << shown_path(c.baseline_policy) << ", same validation layers)\n";
  }
  std::cout << "cpu time     " << human_time(cpu) << "\n";
  print_files_and_use(run, "--method expert-rl ");
}

}  // namespace placer
