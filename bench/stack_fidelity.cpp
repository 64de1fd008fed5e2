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
//  - Megatron-Bridge MoE (GPT-OSS 120B, DeepSeek-V3, Kimi-K2) per GPU (H100 to GB300):
//    leave one model out where a GPU has two or more models (moe_family below).
//
//   ./build/bench/stack_fidelity [--folds 5] [--fit-every 4] [--fit-iterations 20]
//       [--modern DIR] [--skip-a100] [--skip-dense] [--skip-moe] [--moe-gpu GPU]
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
  bool skip_a100 = false, skip_dense = false, skip_moe = false;
  std::string moe_gpu;  ///< only this GPU's MoE rows (empty = every GPU)
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

// ---- Megatron-Bridge MoE rows (GPT-OSS 120B, DeepSeek-V3, Kimi-K2) ----
// Per GPU: datasets/measurements/modern/moe_<gpu>.csv on the shipped cluster file of the
// rows' size (the NVL72 files keep their 72-GPU NVLink domains) and the profile shipped for
// its GPU. With two or more models on a GPU the parameters of kMoeFitParameters are fitted
// leave one model out (each model predicted by a fit to the others); with one model the
// shipped profile predicts it unfitted. Qwen3 rows are held out: moe_rows() drops any row of
// their shape should one ever appear in the files.

// Physical parameters fitted for the MoE rows: the per-micro-batch host overhead and the
// slowdown of compute running beside communication.
const std::vector<std::string> kMoeFitParameters = {
    "micro_batch_overhead", "overlap_slowdown", "ops.matmul.dispatch", "ops.matmul.compute@1e10",
    "ops.matmul.compute@1e11", "ops.matmul.compute@1e12"};

std::string moe_model(const IterationRun& r) {
  if (r.num_experts == 128 && r.hidden == 2880) return "GPT-OSS 120B";
  if (r.num_experts == 256 && r.hidden == 7168) return "DeepSeek-V3";
  if (r.num_experts == 384 && r.hidden == 7168) return "Kimi-K2";
  return "";
}

std::vector<IterationRun> moe_rows(const std::string& file) {
  std::vector<IterationRun> runs;
  for (const IterationRun& r : load_iteration_runs(file)) {
    if (!moe_model(r).empty() && r.cp == 1) runs.push_back(r);
  }
  return runs;
}

// One table row per model and one for all rows of the GPU.
void print_moe_rows(const std::string& gpu, const std::vector<IterationRun>& runs,
                    const std::vector<double>& predicted, const std::string& evaluation) {
  std::map<std::string, std::pair<std::vector<IterationRun>, std::vector<double>>> by_model;
  for (size_t i = 0; i < runs.size(); ++i) {
    auto& m = by_model[moe_model(runs[i])];
    m.first.push_back(runs[i]);
    m.second.push_back(predicted[i]);
  }
  for (const auto& [model, rp] : by_model) {
    print_row("MoE " + gpu + ": " + model, rp.first, rp.second, evaluation, "MAPE <= 15%");
  }
  if (by_model.size() > 1) {
    print_row("MoE " + gpu + ": all models", runs, predicted, evaluation, "MAPE <= 15%");
  }
}

// The GPUs a job gets on NVL72 racks: 64 of each 72-GPU NVLink domain (16 of its 18 trays),
// the power-of-two share the runs' ep 64 groups need to stay inside one rack; rank r runs on
// rack r / 64. Other clusters are returned as they are.
Cluster power_of_two_domains(const Cluster& cluster) {
  constexpr int kJobGpusPerDomain = 64;
  const Topology& t = cluster.topology();
  const int per_host = static_cast<int>(cluster.host(0).devices.size());
  if (t.nvlink_domain_hosts * per_host <= kJobGpusPerDomain || kJobGpusPerDomain % per_host != 0)
    return cluster;
  const int used = kJobGpusPerDomain / per_host;
  Cluster c;
  c.name = cluster.name + " (" + std::to_string(kJobGpusPerDomain) + " GPUs per NVLink domain)";
  const int domains = cluster.num_hosts() / t.nvlink_domain_hosts;
  for (int h = 0; h < domains * used; ++h) {
    c.add_host("tray" + std::to_string(h), cluster.device(0).spec, per_host);
  }
  for (int l = 1; l < kNumLinkLevels; ++l) c.set_link(LinkLevel(l), cluster.link(LinkLevel(l)));
  Topology job = t;
  job.nvlink_domain_hosts = used;
  c.set_topology(job);
  return c;
}

// The GPU's rows and their predictions (none when they cannot be run).
using MoePredictions = std::pair<std::vector<IterationRun>, std::vector<double>>;

MoePredictions moe_family(const Options& o, const std::string& gpu,
                          const std::string& cluster_file) {
  const std::string family = "MoE " + gpu;
  const std::string file = o.modern + "/moe_" + gpu + ".csv";
  const std::string dir = std::string(PLACER_SOURCE_DIR) + "/datasets/clusters/";
  const bool have_file = fs::exists(file), have_cluster = fs::exists(dir + cluster_file);
  const std::vector<IterationRun> runs = have_file ? moe_rows(file) : std::vector<IterationRun>{};
  if (!have_cluster || runs.empty()) {
    print_not_run(family, !have_file      ? "no file " + file
                          : !have_cluster ? "no cluster " + cluster_file
                                          : "no MoE rows");
    return {};
  }
  const Cluster cluster = power_of_two_domains(load_cluster_yaml(dir + cluster_file));
  const std::string profile = shipped_profile_file(cluster);
  const CostProfile start = iteration_fit_start(load_cost_profile(dir + profile));
  std::map<std::string, int> model_index;  // leave one model out: fold = model
  std::vector<int> fold_of;
  for (const IterationRun& r : runs) {
    fold_of.push_back(model_index.emplace(moe_model(r), int(model_index.size())).first->second);
  }
  std::printf("# %s: %s on %s: %s, %d GPUs\n", family.c_str(), profile.c_str(),
              cluster_file.c_str(), cluster.name.c_str(), cluster.num_devices());
  if (model_index.size() < 2) {
    const std::vector<double> p = predict_runs(cluster, start, runs);
    print_moe_rows(gpu, runs, p, "shipped profile, unfitted (one model)");
    return {runs, p};
  }
  IterationFitOptions fo = fit_options(o);
  fo.only = kMoeFitParameters;
  const std::vector<double> p = cross_validated_predictions(cluster, start, runs, fold_of, 1, fo);
  print_moe_rows(gpu, runs, p,
                 "leave one model out (" + std::to_string(model_index.size()) + " models)");
  return {runs, p};
}

// Every GPU's MoE rows, then each model over all GPUs.
void moe_families(const Options& o) {
  MoePredictions all;
  for (const auto& [gpu, cluster] :
       {std::pair<const char*, const char*>{"h100", "h100_ib_64node.cluster.yaml"},
        {"b200", "b200_32node_ib400.cluster.yaml"},
        {"b300", "b300_32node_ib800.cluster.yaml"},
        {"gb200", "gb200_nvl72_4rack.cluster.yaml"},
        {"gb300", "gb300_nvl72_4rack.cluster.yaml"}}) {
    if (!o.moe_gpu.empty() && o.moe_gpu != gpu) continue;
    try {
      const MoePredictions p = moe_family(o, gpu, cluster);
      all.first.insert(all.first.end(), p.first.begin(), p.first.end());
      all.second.insert(all.second.end(), p.second.begin(), p.second.end());
    } catch (const Error& e) {
      print_not_run(std::string("MoE ") + gpu, "error (stderr)");
      std::fprintf(stderr, "stack_fidelity: MoE %s: %s\n", gpu, e.what());
    }
  }
  if (!all.first.empty()) print_moe_rows("every GPU", all.first, all.second, "as above, per GPU");
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
    else if (a == "--skip-dense")
      o.skip_dense = true;
    else if (a == "--skip-moe")
      o.skip_moe = true;
    else if (a == "--moe-gpu" && has_value)
      o.moe_gpu = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: stack_fidelity [--folds K] [--fit-every K] "
                   "[--fit-iterations N] [--modern DIR] [--skip-a100] [--skip-dense] "
                   "[--skip-moe] [--moe-gpu GPU]\n");
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
      if (o.skip_dense) break;
      try {
        modern_family(o, gpu, cluster);
      } catch (const Error& e) {
        print_not_run(std::string("Megatron-Bridge Llama 3 dense, ") + gpu, "error (stderr)");
        std::fprintf(stderr, "stack_fidelity: %s: %s\n", gpu, e.what());
      }
    }
    if (!o.skip_moe) moe_families(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "stack_fidelity: %s\n", e.what());
    return 1;
  }
  return 0;
}
