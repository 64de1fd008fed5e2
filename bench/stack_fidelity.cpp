// Simulator fidelity per family of published training runs, each judged as a user would
// judge it: the shipped profile of the family's GPU (picked by device model), its physical
// parameters fitted to the other runs and the family's runs predicted held out. Prints one
// table: rows, MAPE, signed mean error, Spearman, the evaluation and the target.
//
//  - Megatron-DeepSpeed GPT on one 8x A100 node (datasets/measurements/
//    megatron_gpt_a100_1node.csv): K-fold cross-validation (fold = row index mod K) from
//    dgx_a100_base.profile.yaml, as `placer calibrate fit --iterations --folds K` does.
//  - Megatron-Bridge Llama 3 (8B / 70B / 405B: the dense models) on H100, B200, GB200, B300
//    and GB300: leave one model out per GPU generation (Hopper; Blackwell = B200 and GB200;
//    Blackwell Ultra = B300 and GB300). The shipped profile of each GPU's cluster file
//    (grown to the largest run's node count where it is smaller) with two fitted parameters,
//    the generation's tensor-core efficiency scales of GEMMs and of fused attention
//    (simulator/calibration/tensor_scale_fit.h),
//    fitted on the generation's runs of the other models; rows whose recomputation the
//    sources leave unstated, or with context parallelism, are left out and counted.
//
//  - Megatron-Bridge MoE (GPT-OSS 120B, DeepSeek-V3, Kimi-K2) per GPU (H100 to GB300):
//    leave one model out where a GPU has two or more models (moe_family below): the held-out
//    model's rows predicted with the GPU's tensor-core scales fitted on its generation's dense
//    Llama rows and the GPU's rows of the other MoE models (--moe-only-fit: on the other MoE
//    models' rows alone); results in docs/results.md, "MoE rows: GPT-OSS 120B, DeepSeek-V3 and
//    Kimi-K2". The profiles run MoE layers eagerly with the dispatcher's host sync
//    (CostProfile::moe_host_sync; off with --no-moe-host-sync); the held-out fit learns the host time after each sync
//    (CostProfile::moe_sync_host_time) with the tensor-core scales, as `placer calibrate fit
//    --iterations` does for runs with experts (--scales-only: the scales alone); --gpt-oss-unfused
//    puts the GPT-OSS bf16 rows back on the unfused core. --moe-model NAME keeps one model's rows
//    (each GPU then predicts them with its shipped profile, unfitted); --moe-rows also prints, per
//    model, the scales its own rows would fit; --moe-unfitted predicts every model's rows with
//    the shipped profiles (fitted on no MoE row, so every model is held out).
//
//   ./build/bench/stack_fidelity [--folds 5] [--fit-every 4] [--fit-iterations 20]
//       [--modern DIR] [--skip-a100] [--skip-dense] [--skip-moe] [--moe-gpu GPU] [--moe-rows]
//       [--gpt-oss-unfused] [--no-moe-host-sync] [--scales-only] [--moe-model NAME]
//       [--moe-unfitted] [--moe-only-fit]
// Results and commands: docs/results.md, "Fidelity per training stack".
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "simulator/calibration/iteration_fit.h"
#include "simulator/calibration/iteration_runs.h"
#include "simulator/calibration/shipped_profiles.h"
#include "simulator/calibration/tensor_scale_fit.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

using namespace placer;
namespace fs = std::filesystem;

namespace {

struct Options {
  int folds = 5, fit_every = 4, fit_iterations = 20;
  std::string modern;
  bool skip_a100 = false, skip_dense = false, skip_moe = false;
  std::string moe_gpu;           ///< only this GPU's MoE rows (empty = every GPU)
  std::string moe_model;         ///< only this model's MoE rows, e.g. "DeepSeek-V3" (empty = all)
  bool moe_unfitted = false;     ///< every model's rows on the shipped profile, no scale fitted
  bool show_rows = false;        ///< print every MoE row's prediction (comment lines)
  bool gpt_oss_unfused = false;  ///< GPT-OSS bf16 rows on the unfused attention core
  bool moe_host_sync = true;     ///< eager MoE host model (CostProfile::moe_host_sync)
  bool fit_sync_host = true;     ///< fit the host time per MoE sync with the scales
  /// Fit each held-out MoE model's scales on its GPU generation's dense Llama rows as well
  /// as on the GPU's rows of the other MoE models (off: --moe-only-fit).
  bool moe_with_dense = true;
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

// The Llama 3 dense shapes of the Megatron-Bridge tables (hidden, layers).
bool dense_llama(const IterationRun& r) {
  return r.model == "llama" && r.num_experts == 0 && r.ep == 1 &&
         ((r.hidden == 4096 && r.layers == 32) || (r.hidden == 8192 && r.layers == 80) ||
          (r.hidden == 16384 && r.layers == 126));
}

// Dense rows the plans express: the recomputation the recipes state (an empty column means
// an unknown one), no context parallelism, and at least one layer per pipeline chunk (the
// 405B presets at pp x v = 128 count the embedding and the loss as layers of the split).
bool expressible(const IterationRun& r) {
  return r.recompute_given && r.config.cp == 1 && r.config.pp * r.config.virtual_stages <= r.layers;
}

// `cluster` as is when it has `gpus` devices, else its first host's nodes and links grown to
// as many nodes as `gpus` needs.
Cluster on_nodes(const Cluster& cluster, int gpus) {
  if (cluster.num_devices() >= gpus) return cluster;
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

// Every Megatron-Bridge file of `dir` for `gpu` (megatron-bridge_<release>_<gpu>.csv): its
// dense Llama rows the plans express; `skipped` counts the others.
std::vector<IterationRun> modern_runs(const std::string& dir, const std::string& gpu,
                                      int* skipped) {
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
    for (const IterationRun& r : load_iteration_runs(f.string())) {
      if (!dense_llama(r)) continue;
      if (expressible(r))
        runs.push_back(r);
      else
        ++*skipped;
    }
  }
  return runs;
}

// The GPUs of the dense evaluation: the cluster file of their rows and the generation whose
// tensor scales they share.
const std::array<std::array<const char*, 3>, 5> kDenseGpus = {{
    {"h100", "h100_ib_4node.cluster.yaml", "Hopper"},
    {"b200", "b200_32node_ib400.cluster.yaml", "Blackwell"},
    {"gb200", "gb200_nvl72_4rack.cluster.yaml", "Blackwell"},
    {"b300", "b300_32node_ib800.cluster.yaml", "Blackwell Ultra"},
    {"gb300", "gb300_nvl72_4rack.cluster.yaml", "Blackwell Ultra"},
}};

// One GPU of the dense evaluation: its runs, the cluster they run on, its shipped profile and
// the generation whose tensor scales it shares.
struct DenseDevice {
  std::string gpu, cluster_file, generation;
  std::vector<IterationRun> runs;
  int skipped = 0;
  Cluster cluster;
  std::string profile_file;
  CostProfile profile;
  std::vector<ScaleResponse> responses;  // per run
  std::vector<double> predicted;         // held out, per run
};

DenseDevice load_dense_device(const Options& o, const std::string& gpu,
                              const std::string& cluster_file, const std::string& generation) {
  DenseDevice d;
  d.gpu = gpu;
  d.cluster_file = cluster_file;
  d.generation = generation;
  d.runs = modern_runs(o.modern, gpu, &d.skipped);
  int gpus = 1;
  for (const IterationRun& r : d.runs) gpus = std::max(gpus, r.gpus);
  const std::string dir = std::string(PLACER_SOURCE_DIR) + "/datasets/clusters/";
  d.cluster = on_nodes(load_cluster_yaml(dir + cluster_file), gpus);
  d.profile_file = shipped_profile_file(d.cluster);
  // The shipped profile before its generation's scales: their fit starts from the H100
  // curves the scales multiply (scripts/gpu_profiles.py).
  d.profile = with_reference_compute_curves(load_cost_profile(dir + d.profile_file),
                                            load_cost_profile(dir + "h100.profile.yaml"));
  if (!d.runs.empty()) d.responses = scale_responses(d.cluster, d.profile, d.runs);
  return d;
}

// Model key of a dense Llama run: its hidden size (8B 4096, 70B 8192, 405B 16384).
int64_t model_of(const IterationRun& r) { return r.hidden; }

// Leave one model out within each generation: the tensor scales fitted on the generation's
// runs of the other models (every device of it), the held-out model's runs simulated with it.
void predict_held_out(std::vector<DenseDevice>& devices, const std::string& generation,
                      int64_t model) {
  std::vector<ScaleResponse> train;
  std::vector<double> measured;
  for (const DenseDevice& d : devices) {
    if (d.generation != generation) continue;
    for (size_t i = 0; i < d.runs.size(); ++i) {
      if (model_of(d.runs[i]) == model) continue;
      train.push_back(d.responses[i]);
      measured.push_back(d.runs[i].measured);
    }
  }
  for (DenseDevice& d : devices) {
    if (d.generation != generation) continue;
    std::vector<IterationRun> test;
    std::vector<size_t> index;
    for (size_t i = 0; i < d.runs.size(); ++i) {
      if (model_of(d.runs[i]) == model) {
        test.push_back(d.runs[i]);
        index.push_back(i);
      }
    }
    if (test.empty()) continue;
    if (train.empty()) throw Error(generation + ": one model only, none to fit on");
    const TensorScales s = fit_tensor_scales(train, measured);
    std::fprintf(stderr,
                 "stack_fidelity: %s, hidden %s held out: GEMM scale %.3f, attention %.3f "
                 "(fitted on %zu runs)\n",
                 d.gpu.c_str(), std::to_string(model).c_str(), s.gemm, s.attention, train.size());
    const std::vector<double> p = predict_runs(d.cluster, with_tensor_scales(d.profile, s), test);
    for (size_t j = 0; j < p.size(); ++j) d.predicted[index[j]] = p[j];
  }
}

// The tensor scales of each generation fitted on all its runs.
void print_generation_scales(const std::vector<DenseDevice>& devices) {
  std::map<std::string, std::pair<std::vector<ScaleResponse>, std::vector<double>>> all;
  for (const DenseDevice& d : devices) {
    for (size_t i = 0; i < d.runs.size(); ++i) {
      all[d.generation].first.push_back(d.responses[i]);
      all[d.generation].second.push_back(d.runs[i].measured);
    }
  }
  for (const auto& [generation, fit] : all) {
    const TensorScales s = fit_tensor_scales(fit.first, fit.second);
    std::printf("# %s: GEMM scale %.3f, attention scale %.3f, fitted on all %zu dense runs\n",
                generation.c_str(), s.gemm, s.attention, fit.first.size());
  }
}

void print_dense_rows(const std::vector<DenseDevice>& devices) {
  std::vector<IterationRun> all_runs;
  std::vector<double> all_predicted;
  for (const DenseDevice& d : devices) {
    const std::string family = "Megatron-Bridge Llama 3 dense, " + d.gpu;
    if (d.runs.empty()) {
      print_not_run(family, "no dense rows (" + std::to_string(d.skipped) + " left out)");
      continue;
    }
    print_row(
        family + " (" + d.profile_file + ")", d.runs, d.predicted,
        "leave one model out, " + d.generation + "; " + std::to_string(d.skipped) + " left out",
        "MAPE <= 10%");
    for (size_t i = 0; i < d.runs.size(); ++i) {
      const IterationRun& r = d.runs[i];
      std::fprintf(stderr, "stack_fidelity: %s %s: measured %.3f s, predicted %.3f s (%+.1f%%)\n",
                   d.gpu.c_str(), r.where().c_str(), r.measured, d.predicted[i],
                   100 * (d.predicted[i] / r.measured - 1));
    }
    all_runs.insert(all_runs.end(), d.runs.begin(), d.runs.end());
    all_predicted.insert(all_predicted.end(), d.predicted.begin(), d.predicted.end());
  }
  print_row("Megatron-Bridge Llama 3 dense, every GPU", all_runs, all_predicted,
            "leave one model out per generation", "MAPE <= 10%");
}

// The dense Llama rows of every GPU, each model held out in turn (docs/results.md).
void dense_families(const Options& o) {
  std::vector<DenseDevice> devices;
  std::map<std::string, std::set<int64_t>> models;  // per generation
  for (const auto& [gpu, cluster, generation] : kDenseGpus) {
    devices.push_back(load_dense_device(o, gpu, cluster, generation));
    devices.back().predicted.assign(devices.back().runs.size(), 0);
    for (const IterationRun& r : devices.back().runs) models[generation].insert(model_of(r));
  }
  for (const auto& [generation, held_out] : models) {
    for (int64_t model : held_out) predict_held_out(devices, generation, model);
  }
  print_dense_rows(devices);
  print_generation_scales(devices);
}

// ---- Megatron-Bridge MoE rows (GPT-OSS 120B, DeepSeek-V3, Kimi-K2) ----
// Per GPU: datasets/measurements/modern/moe_<gpu>.csv on the shipped cluster file of the
// rows' size (NVL72 racks as a job gets them: power_of_two_domains) and the profile shipped
// for its GPU. With two or more models on a GPU, each model is predicted with the two
// tensor-core scales (GEMM, attention; simulator/calibration/tensor_scale_fit.h) fitted on
// the GPU's rows of the other models, from the H100 curves the scales multiply; with one
// model the shipped profile predicts it unfitted. Qwen3 rows are held out: moe_rows() drops
// any row of their shape should one ever appear in the files.

std::string moe_model(const IterationRun& r) {
  if (r.num_experts == 128 && r.hidden == 2880) return "GPT-OSS 120B";
  if (r.num_experts == 256 && r.hidden == 7168) return "DeepSeek-V3";
  if (r.num_experts == 384 && r.hidden == 7168) return "Kimi-K2";
  return "";
}

// The rows as simulated before the fused core: GPT-OSS bf16 rows on Megatron-core's local
// (unfused) attention without the window, which cannot have run (its s^2 probabilities do not
// fit; docs/results.md, "GPT-OSS attention and memory"), kept to compare with.
IterationRun with_unfused_core(IterationRun r) {
  if (moe_model(r) != "GPT-OSS 120B" || r.config.fp8) return r;
  r.attention = "unfused";
  r.sliding_window = 0;
  r.full_attention_every = 0;
  return r;
}

std::vector<IterationRun> moe_rows(const Options& o, const std::string& file) {
  std::vector<IterationRun> runs;
  for (const IterationRun& r : load_iteration_runs(file)) {
    if (moe_model(r).empty() || r.config.cp != 1) continue;
    if (!o.moe_model.empty() && moe_model(r) != o.moe_model) continue;
    runs.push_back(o.gpt_oss_unfused ? with_unfused_core(r) : r);
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

// Leave one model out on one GPU: the tensor-core scales fitted on the responses of the other
// models' rows, each held-out model's rows simulated with them.
// One model's rows cannot tell the GEMM scale from the attention scale of another model's
// kernels (MLA's fused attention against GPT-OSS's windowed one): the prior holds them
// together.
constexpr double kMoeScalePrior = 1.0;

// The scales a model's own rows would fit (in-sample, printed for comparison with the scales
// its held-out prediction uses: models whose rows want different scales cannot predict each
// other).
void print_own_scales(const std::string& gpu, const std::string& model,
                      const std::vector<IterationRun>& runs,
                      const std::vector<ScaleResponse>& responses) {
  std::vector<ScaleResponse> own;
  std::vector<double> measured;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (moe_model(runs[i]) != model) continue;
    own.push_back(responses[i]);
    measured.push_back(runs[i].measured);
  }
  const TensorScales s = fit_tensor_scales(own, measured, kMoeScalePrior);
  std::printf("# MoE %s, %s on its own rows (in-sample): GEMM scale %.3f, attention %.3f\n",
              gpu.c_str(), model.c_str(), s.gemm, s.attention);
}

// Rows a fit of the tensor-core scales learns from: each one's response and measured time.
struct ScaleTraining {
  std::vector<ScaleResponse> responses;
  std::vector<double> measured;
};

// Dense training rows per GPU generation, each generation's simulated once.
using DenseByGeneration = std::map<std::string, ScaleTraining>;

// The dense Llama rows of every GPU of `gpu`'s generation, the rows the shipped scales were
// fitted on (none for a GPU outside kDenseGpus), from `cache` when it holds them.
const ScaleTraining& dense_training(const Options& o, const std::string& gpu,
                                    DenseByGeneration* cache) {
  std::string generation;
  for (const auto& [name, cluster, gen] : kDenseGpus) {
    if (gpu == name) generation = gen;
  }
  const auto [it, added] = cache->try_emplace(generation);
  if (!added) return it->second;
  ScaleTraining& t = it->second;
  for (const auto& [name, cluster, gen] : kDenseGpus) {
    if (gen != generation) continue;
    const DenseDevice d = load_dense_device(o, name, cluster, gen);
    t.responses.insert(t.responses.end(), d.responses.begin(), d.responses.end());
    for (const IterationRun& r : d.runs) t.measured.push_back(r.measured);
  }
  return t;
}

// `dense`: rows every held-out model's fit also learns from (the generation's dense rows, or
// none).
std::vector<double> moe_held_out(const std::string& gpu, const Cluster& cluster,
                                 const CostProfile& reference,
                                 const std::vector<IterationRun>& runs, bool fit_sync_host,
                                 bool own_scales, const ScaleTraining& dense) {
  std::vector<ScaleResponse> responses = scale_responses(cluster, reference, runs);
  if (fit_sync_host) add_sync_host_responses(cluster, reference, runs, &responses);
  std::set<std::string> models;
  for (const IterationRun& r : runs) models.insert(moe_model(r));
  std::vector<double> predicted(runs.size(), 0.0);
  for (const std::string& model : models) {
    std::vector<ScaleResponse> train = dense.responses;
    std::vector<double> measured = dense.measured;
    std::vector<IterationRun> test;
    std::vector<size_t> index;
    for (size_t i = 0; i < runs.size(); ++i) {
      if (moe_model(runs[i]) == model) {
        test.push_back(runs[i]);
        index.push_back(i);
      } else {
        train.push_back(responses[i]);
        measured.push_back(runs[i].measured);
      }
    }
    if (own_scales) print_own_scales(gpu, model, runs, responses);
    const TensorScales s = fit_tensor_scales(train, measured, kMoeScalePrior, fit_sync_host);
    std::printf(
        "# MoE %s, %s held out: GEMM scale %.3f, attention %.3f, host time per MoE sync %.2f ms "
        "(fitted on %zu rows, %zu of them dense)\n",
        gpu.c_str(), model.c_str(), s.gemm, s.attention, 1e3 * s.sync_host, train.size(),
        dense.responses.size());
    const std::vector<double> p = predict_runs(cluster, with_tensor_scales(reference, s), test);
    for (size_t j = 0; j < p.size(); ++j) predicted[index[j]] = p[j];
  }
  return predicted;
}

// The GPU's rows and their predictions (none when they cannot be run).
using MoePredictions = std::pair<std::vector<IterationRun>, std::vector<double>>;

// The largest simulated peak memory of any device of `r` (bytes), from `profile`.
uint64_t peak_memory(const Cluster& cluster, const CostProfile& profile, const IterationRun& r) {
  RunPredictor predictor(cluster);
  const Graph& g = predictor.graph(r);
  const CostModel cost(cluster, profile);
  Simulator sim(g, cluster, cost);
  SimOptions opt;
  opt.critical_path = false;
  const SimResult result = sim.run(predictor.plan(r), opt);
  return *std::max_element(result.peak_memory.begin(), result.peak_memory.end());
}

// Decoder-layer passes one device runs per step: its layers (with the MTP layers, split over
// the pipeline) times the micro-batches.
double layer_micro_batches(const IterationRun& r) {
  const int per_device = (r.layers + r.mtp_layers + r.config.pp - 1) / r.config.pp;
  return double(per_device) * megatron_micro_batches(r.config);
}

// One comment line per MoE row: where it is, its expert and pipeline layout, measured and
// predicted time, the difference per layer pass (layer_micro_batches) and the simulated peak
// memory against the device's.
void print_moe_predictions(const Cluster& cluster, const CostProfile& profile,
                           const MoePredictions& p) {
  const double capacity = double(cluster.device(0).spec.memory_bytes);
  for (size_t i = 0; i < p.first.size(); ++i) {
    const IterationRun& r = p.first[i];
    const double peak = double(peak_memory(cluster, profile, r));
    std::printf(
        "# %s %s %s ep %d pp %d vp %d %s%s: measured %.0f ms, predicted %.0f ms (%+.1f%%, %+.2f "
        "ms per layer pass); peak memory %.0f of %.0f GB%s\n",
        r.where().c_str(), moe_model(r).c_str(), r.attention.c_str(), r.ep, r.config.pp,
        r.config.virtual_stages, to_string(r.config.dispatcher),
        r.config.moe_a2a_overlap ? " a2a-overlap" : "", 1e3 * r.measured, 1e3 * p.second[i],
        100 * (p.second[i] / r.measured - 1),
        1e3 * (r.measured - p.second[i]) / layer_micro_batches(r), peak / 1e9, capacity / 1e9,
        peak > capacity ? " (out of memory)" : "");
  }
}

MoePredictions moe_family(const Options& o, DenseByGeneration* dense_rows, const std::string& gpu,
                          const std::string& cluster_file) {
  const std::string family = "MoE " + gpu;
  const std::string file = o.modern + "/moe_" + gpu + ".csv";
  const std::string dir = std::string(PLACER_SOURCE_DIR) + "/datasets/clusters/";
  const bool have_file = fs::exists(file), have_cluster = fs::exists(dir + cluster_file);
  const std::vector<IterationRun> runs =
      have_file ? moe_rows(o, file) : std::vector<IterationRun>{};
  if (!have_cluster || runs.empty()) {
    print_not_run(family, !have_file      ? "no file " + file
                          : !have_cluster ? "no cluster " + cluster_file
                                          : "no MoE rows");
    return {};
  }
  const Cluster cluster = power_of_two_domains(load_cluster_yaml(dir + cluster_file));
  const std::string profile = shipped_profile_file(cluster);
  CostProfile start = iteration_fit_start(load_cost_profile(dir + profile));
  start.moe_host_sync = o.moe_host_sync;
  std::map<std::string, int> model_index;  // leave one model out: fold = model
  std::vector<int> fold_of;
  for (const IterationRun& r : runs) {
    fold_of.push_back(model_index.emplace(moe_model(r), int(model_index.size())).first->second);
  }
  std::printf("# %s: %s on %s: %s, %d GPUs\n", family.c_str(), profile.c_str(),
              cluster_file.c_str(), cluster.name.c_str(), cluster.num_devices());
  if (model_index.size() < 2 || o.moe_unfitted) {
    const std::vector<double> p = predict_runs(cluster, start, runs);
    print_moe_rows(
        gpu, runs, p,
        o.moe_unfitted ? "shipped profile, unfitted" : "shipped profile, unfitted (one model)");
    if (o.show_rows) print_moe_predictions(cluster, start, {runs, p});
    return {runs, p};
  }
  CostProfile reference = with_reference_compute_curves(
      load_cost_profile(dir + profile), load_cost_profile(dir + "h100.profile.yaml"));
  reference.moe_host_sync = o.moe_host_sync;
  const ScaleTraining dense =
      o.moe_with_dense ? dense_training(o, gpu, dense_rows) : ScaleTraining{};
  const std::vector<double> p =
      moe_held_out(gpu, cluster, reference, runs, o.fit_sync_host, o.show_rows, dense);
  print_moe_rows(gpu, runs, p,
                 "leave one model out (" + std::to_string(model_index.size()) + " models" +
                     (o.moe_with_dense ? ", + dense)" : ")"));
  if (o.show_rows) print_moe_predictions(cluster, start, {runs, p});
  return {runs, p};
}

// Every GPU's MoE rows, then each model over all GPUs.
void moe_families(const Options& o) {
  MoePredictions all;
  DenseByGeneration dense_rows;
  for (const auto& [gpu, cluster] :
       {std::pair<const char*, const char*>{"h100", "h100_ib_64node.cluster.yaml"},
        {"b200", "b200_32node_ib400.cluster.yaml"},
        {"b300", "b300_32node_ib800.cluster.yaml"},
        {"gb200", "gb200_nvl72_4rack.cluster.yaml"},
        {"gb300", "gb300_nvl72_4rack.cluster.yaml"}}) {
    if (!o.moe_gpu.empty() && o.moe_gpu != gpu) continue;
    try {
      const MoePredictions p = moe_family(o, &dense_rows, gpu, cluster);
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
    else if (a == "--moe-rows")
      o.show_rows = true;
    else if (a == "--gpt-oss-unfused")
      o.gpt_oss_unfused = true;
    else if (a == "--no-moe-host-sync")
      o.moe_host_sync = false;
    else if (a == "--scales-only")
      o.fit_sync_host = false;
    else if (a == "--moe-model" && has_value)
      o.moe_model = argv[++i];
    else if (a == "--moe-unfitted")
      o.moe_unfitted = true;
    else if (a == "--moe-only-fit")
      o.moe_with_dense = false;
    else {
      std::fprintf(stderr,
                   "usage: stack_fidelity [--folds K] [--fit-every K] "
                   "[--fit-iterations N] [--modern DIR] [--skip-a100] [--skip-dense] "
                   "[--skip-moe] [--moe-gpu GPU] [--moe-rows] [--gpt-oss-unfused] "
                   "[--no-moe-host-sync] [--scales-only] [--moe-model NAME] [--moe-unfitted] "
                   "[--moe-only-fit]\n");
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
    if (!o.skip_dense) dense_families(o);
    if (!o.skip_moe) moe_families(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "stack_fidelity: %s\n", e.what());
    return 1;
  }
  return 0;
}
