// Simulator fidelity per family of published training runs, each judged as a user would
// judge it: the shipped profile of the family's GPU (picked by device model), its physical
// parameters fitted to the other runs and the family's runs predicted held out. Prints one
// table: rows, MAPE, signed mean error, Spearman, the evaluation and the target.
//
//  - Megatron-DeepSpeed GPT on one 8x A100 node (datasets/measurements/
//    megatron_gpt_a100_1node.csv): K-fold cross-validation (fold = row index mod K) from
//    dgx_a100_base.profile.yaml, as `placer calibrate fit --iterations --folds K` does.
//  - Megatron-Bridge Llama 3 (8B / 70B / 405B: the dense models) per GPU (H100, B200):
//    leave one model out, from the profile shipped for that GPU, on its 400 Gb/s cluster
//    file grown to the largest run's node count. Files whose columns the
//    iteration-runs reader does not accept yet are reported so, not failed.
//
//   ./build/bench/stack_fidelity [--folds 5] [--fit-every 4] [--fit-iterations 20]
//       [--modern DIR] [--skip-a100]
// Results and commands: docs/results.md, "Fidelity per training stack".
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "simulator/calibration/iteration_fit.h"
#include "simulator/calibration/iteration_runs.h"
#include "simulator/calibration/shipped_profiles.h"
#include "simulator/cost_profile.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

using namespace placer;
namespace fs = std::filesystem;

namespace {

struct Options {
  int folds = 5, fit_every = 4, fit_iterations = 20;
  std::string modern;
  bool skip_a100 = false;
};

void print_header() {
  std::printf("| %-44s | %5s | %7s | %8s | %8s | %-34s | %s |\n", "family", "rows", "MAPE",
              "signed", "Spearman", "evaluation", "target");
  std::printf("|---|---|---|---|---|---|---|\n");
}

void print_row(const std::string& family, const std::vector<IterationRun>& runs,
               const std::vector<double>& predicted, const std::string& evaluation,
               const std::string& target) {
  std::vector<double> measured;
  for (const IterationRun& r : runs) measured.push_back(r.measured);
  const FidelitySummary f = summarize_fidelity(measured, predicted);
  std::printf("| %-44s | %5d | %6.1f%% | %+7.1f%% | %8.3f | %-34s | %s |\n", family.c_str(), f.n,
              100 * f.mape, 100 * f.signed_mean, f.spearman, evaluation.c_str(), target.c_str());
  std::fflush(stdout);
}

void print_not_run(const std::string& family, const std::string& why) {
  std::printf("| %-44s | %5s | %7s | %8s | %8s | %-34s | %s |\n", family.c_str(), "-", "-", "-",
              "-", why.c_str(), "-");
}

IterationFitOptions fit_options(const Options& o) {
  IterationFitOptions fo;
  fo.max_iterations = o.fit_iterations;
  return fo;
}

void a100_family(const Options& o) {
  const std::string dir = std::string(PLACER_SOURCE_DIR) + "/datasets/";
  const std::vector<IterationRun> runs =
      load_iteration_runs(dir + "measurements/megatron_gpt_a100_1node.csv");
  const Cluster cluster = load_cluster_yaml(dir + "clusters/dgx_a100.cluster.yaml");
  const CostProfile start =
      iteration_fit_start(load_cost_profile(dir + "clusters/dgx_a100_base.profile.yaml"));
  std::vector<int> fold_of(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) fold_of[i] = int(i % size_t(o.folds));
  const std::vector<double> p = cross_validated_predictions(
      cluster, start, runs, fold_of, o.fit_every, fit_options(o),
      [](int fold, const IterationFitResult& fit) {
        std::fprintf(stderr, "stack_fidelity: A100 fold %d fitted in %.0f s\n", fold + 1,
                     fit.seconds);
      });
  print_row(
      "Megatron-DeepSpeed GPT, 1 node of 8x A100", runs, p,
      std::to_string(o.folds) + "-fold CV, fit on every " + std::to_string(o.fit_every) + "th",
      "MAPE <= 7.5%");
}

// The Llama 3 dense shapes of the Megatron-Bridge tables (hidden, layers), without context
// parallelism (which the plans cannot express yet).
bool dense_llama(const IterationRun& r) {
  return r.model == "llama" && r.num_experts == 0 && r.cp == 1 && r.ep == 1 &&
         ((r.hidden == 4096 && r.layers == 32) || (r.hidden == 8192 && r.layers == 80) ||
          (r.hidden == 16384 && r.layers == 126));
}

// The nodes, devices and links of `cluster` on as many nodes as `gpus` needs.
Cluster on_nodes(const Cluster& cluster, int gpus) {
  Cluster c;
  c.name = cluster.name;
  const int per_node = static_cast<int>(cluster.host(0).devices.size());
  for (int h = 0; h * per_node < gpus; ++h) {
    c.add_host("node" + std::to_string(h), cluster.device(0).spec, per_node);
  }
  for (int l = 1; l < kNumLinkLevels; ++l) {
    c.set_link(LinkLevel(l), cluster.link(LinkLevel(l)));
  }
  return c;
}

// Every Megatron-Bridge file of `dir` for `gpu` (megatron-bridge_<release>_<gpu>.csv): dense
// Llama rows, or the reader's first error.
std::vector<IterationRun> modern_runs(const std::string& dir, const std::string& gpu,
                                      std::string* error) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    const std::string tail = "_" + gpu + ".csv";
    if (n.rfind("megatron-bridge_", 0) == 0 && n.size() > tail.size() &&
        n.substr(n.size() - tail.size()) == tail) {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<IterationRun> runs;
  for (const fs::path& f : files) {
    try {
      for (const IterationRun& r : load_iteration_runs(f.string())) {
        if (dense_llama(r)) runs.push_back(r);
      }
    } catch (const Error& e) {
      *error = e.what();
      return {};
    }
  }
  return runs;
}

// The first run the simulator cannot express yet (check_modelled's message), "" for none.
std::string unmodelled(const std::vector<IterationRun>& runs) {
  for (const IterationRun& r : runs) {
    try {
      check_modelled(r);
    } catch (const Error& e) {
      return e.what();
    }
  }
  return "";
}

void modern_family(const Options& o, const std::string& gpu, const std::string& cluster_file) {
  std::string family = "Megatron-Bridge Llama 3 dense, " + gpu;
  std::string error;
  std::vector<IterationRun> runs = modern_runs(o.modern, gpu, &error);
  if (!error.empty()) {
    print_not_run(family, "reader does not accept yet");
    std::fprintf(stderr, "stack_fidelity: %s: %s\n", family.c_str(), error.c_str());
    return;
  }
  if (runs.empty()) return print_not_run(family, "no dense Llama rows");
  if (const std::string why = unmodelled(runs); !why.empty()) {
    print_not_run(family, "not modelled yet (stderr)");
    std::fprintf(stderr, "stack_fidelity: %s: %s\n", family.c_str(), why.c_str());
    return;
  }
  int gpus = 0;
  std::map<int64_t, int> model_index;  // leave one model out: fold = model
  std::vector<int> fold_of;
  for (const IterationRun& r : runs) {
    gpus = std::max(gpus, r.gpus);
    fold_of.push_back(model_index.emplace(r.hidden, int(model_index.size())).first->second);
  }
  if (model_index.size() < 2) return print_not_run(family, "one model: none to hold out");
  const std::string dir = std::string(PLACER_SOURCE_DIR) + "/datasets/clusters/";
  const Cluster cluster = on_nodes(load_cluster_yaml(dir + cluster_file), gpus);
  const std::string profile = shipped_profile_file(cluster);
  const CostProfile start = iteration_fit_start(load_cost_profile(dir + profile));
  const std::vector<double> p =
      cross_validated_predictions(cluster, start, runs, fold_of, 1, fit_options(o));
  print_row(family + " (" + profile + ")", runs, p,
            "leave one model out (" + std::to_string(model_index.size()) + " models)",
            "MAPE <= 10%");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--folds" && has_value)
      o.folds = std::max(2, std::atoi(argv[++i]));
    else if (a == "--fit-every" && has_value)
      o.fit_every = std::max(1, std::atoi(argv[++i]));
    else if (a == "--fit-iterations" && has_value)
      o.fit_iterations = std::max(1, std::atoi(argv[++i]));
    else if (a == "--modern" && has_value)
      o.modern = argv[++i];
    else if (a == "--skip-a100")
      o.skip_a100 = true;
    else {
      std::fprintf(stderr,
                   "usage: stack_fidelity [--folds K] [--fit-every K] "
                   "[--fit-iterations N] [--modern DIR] [--skip-a100]\n");
      std::exit(2);
    }
  }
  if (o.modern.empty()) o.modern = std::string(PLACER_SOURCE_DIR) + "/datasets/measurements/modern";
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    std::printf("# modern runs: %s\n", o.modern.c_str());
    print_header();
    if (!o.skip_a100) a100_family(o);
    if (!fs::is_directory(o.modern)) {
      print_not_run("Megatron-Bridge Llama 3 dense", "no folder " + o.modern);
      return 0;
    }
    for (const auto& [gpu, cluster] :
         {std::pair<const char*, const char*>{"h100", "h100_ib_4node.cluster.yaml"},
          {"b200", "b200_4node_ib400.cluster.yaml"}}) {
      try {
        modern_family(o, gpu, cluster);
      } catch (const Error& e) {
        print_not_run(std::string("Megatron-Bridge Llama 3 dense, ") + gpu, "error (stderr)");
        std::fprintf(stderr, "stack_fidelity: %s: %s\n", gpu, e.what());
      }
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "stack_fidelity: %s\n", e.what());
    return 1;
  }
  return 0;
}
