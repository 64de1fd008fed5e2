// rainbow-pp vs pipeline-dp on the Auto-MAP suite: BERT-like
// (transformer_enc12_d768, transformer_enc24_d1024), T5-like (transformer_encdec6_d512),
// GNMT-like (lstm_seq2seq_l4_h1024), VGG-19 and ResNet-50 (datasets/models, imported
// graphs), each as a training step with Adam (as `placer compare` does), on Auto-MAP
// configurations A / B / C (datasets/clusters/automap_config_{a,b,c}.cluster.yaml: 2 / 3 / 4
// servers of 8 V100; --configs also takes other cluster names, e.g. dgx1_p100).
//
// Per row: pipeline-dp (the PipeDream / DAPPLE dynamic program: stage count, cuts, group
// sizes, micro-batches) and rainbow-pp with the same number of stages as pipeline-dp's plan
// (--stages dp, the default) or a fixed S (--stages N), three variants:
//   full      Rainbow DQN picks the cuts, plus the layout search (group sizes and
//             micro-batches for the best cut sets, 2 rounds; the default placer)
//   rl-only   cuts only, on the env's equal groups and 4 x S micro-batches (search_layout off)
//   no-rl     one episode: the env's balanced center solution (and that one episode) with
//             the same layout search, i.e. what the layout search does without learning
// Ratios are step time / pipeline-dp's step time (< 1 = rainbow-pp faster). Summary: rows
// within 2 % of pipeline-dp (ratio <= 1.02) and the geomean ratio of each variant.
//
//   ./build/bench/rainbow_pp_suite_bench                      # 300 episodes, seed 1
//   ./build/bench/rainbow_pp_suite_bench --episodes 100 --models vgg19,resnet50 --configs a
//
// Needs LibTorch (rainbow-pp); without it the program says so and exits 2. Not a Google
// Benchmark program: it prints a Markdown table (results: docs/results.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "agents/classical/pipeline_dp.h"
#include "agents/api/placer.h"
#include "agents/rainbow/rainbow_pp.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/io/graph_json.h"
#include "src/util/error.h"

#ifndef PLACER_SOURCE_DIR
#define PLACER_SOURCE_DIR "."
#endif

namespace placer {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

struct Args {
  std::string root = PLACER_SOURCE_DIR;
  std::vector<std::string> models{"transformer_enc12_d768",   "transformer_enc24_d1024",
                                  "transformer_encdec6_d512", "lstm_seq2seq_l4_h1024",
                                  "vgg19",                    "resnet50"};
  std::vector<std::string> configs{"a", "b", "c"};
  int episodes = 300;
  int stages = 0;  // 0 = pipeline-dp's stage count
  uint64_t seed = 1;
  bool ablation = true;
};

[[noreturn]] void usage(const std::string& msg) {
  std::cerr << "rainbow_pp_suite_bench: " << msg
            << "\nusage: rainbow_pp_suite_bench [--root DIR] [--models a,b] [--configs a,b,c]"
               " [--episodes N] [--stages dp|N] [--seed N] [--no-ablation]\n";
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(k + " needs a value");
      return argv[++i];
    };
    if (k == "--root") {
      a.root = value();
    } else if (k == "--models") {
      a.models = split(value());
    } else if (k == "--configs") {
      a.configs = split(value());
    } else if (k == "--episodes") {
      a.episodes = std::atoi(value().c_str());
      if (a.episodes < 1) usage("--episodes must be >= 1");
    } else if (k == "--stages") {
      const std::string v = value();
      a.stages = v == "dp" ? 0 : std::atoi(v.c_str());
      if (v != "dp" && a.stages < 2) usage("--stages must be 'dp' or >= 2");
    } else if (k == "--seed") {
      a.seed = std::strtoull(value().c_str(), nullptr, 10);
    } else if (k == "--no-ablation") {
      a.ablation = false;
    } else {
      usage("unknown argument " + k);
    }
  }
  return a;
}

struct Run {
  double step = 0, search = 0;
  bool oom = false;
  int stages = 0, micro_batches = 0;
  std::string groups;  // group sizes, e.g. 1-2-2-3
};

std::string group_sizes(const Plan& p) {
  std::string s;
  for (const auto& st : p.pipeline.stages) {
    if (!s.empty()) s += "-";
    s += std::to_string(st.devices.size());
  }
  return s;
}

Run finish(const Plan& plan, Simulator& sim, double seconds) {
  SimOptions so;
  so.critical_path = false;
  const SimResult r = sim.run(plan, so);
  Run out;
  out.step = r.step_time;
  out.oom = r.oom;
  out.search = seconds;
  out.stages = static_cast<int>(plan.pipeline.stages.size());
  out.micro_batches = plan.pipeline.micro_batches;
  out.groups = group_sizes(plan);
  return out;
}

Run run_rainbow(const Problem& problem, int stages, int episodes, bool layout, uint64_t seed) {
  RainbowPPOptions o;
  o.stages = stages;
  o.episodes = episodes;
  o.search_layout = layout;
  SearchBudget b;
  b.seed = seed;
  const auto t0 = Clock::now();
  const Plan plan = make_rainbow_pp_placer(o)->search(problem, b);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return finish(plan, problem.simulator, s);
}

std::string ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), s < 0.1 ? "%.1f ms" : "%.0f ms", s * 1e3);
  return buf;
}

std::string secs(double s) {
  char buf[32];
  if (s < 1)
    std::snprintf(buf, sizeof(buf), "%.1f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof(buf), "%.1f s", s);
  return buf;
}

int main_impl(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const CostProfile profile = default_profile();
  std::printf(
      "| model | config | pipeline-dp step (search) | S | rainbow-pp step (search) | "
      "groups, m | ratio |%s\n",
      a.ablation ? " rl-only ratio | no-rl ratio |" : "");
  std::printf("|---|---|---|---|---|---|---|%s\n", a.ablation ? "---|---|" : "");
  std::fflush(stdout);
  double log_full = 0, log_rl = 0, log_norl = 0;
  int rows = 0, within = 0, within_rl = 0, within_norl = 0;
  for (const std::string& model : a.models) {
    TrainingOptions to;
    to.optimizer = Optimizer::kAdam;
    const Graph graph =
        expand_training_step(load_graph_json(a.root + "/datasets/models/" + model + ".graph.json"), to);
    for (const std::string& c : a.configs) {
      // a / b / c: the Auto-MAP configurations; any other name: datasets/clusters/NAME.
      const std::string file = c.size() == 1 ? "automap_config_" + c : c;
      const Cluster cluster =
          load_cluster_yaml(a.root + "/datasets/clusters/" + file + ".cluster.yaml");
      const CostModel cost(cluster, profile);
      Simulator sim(graph, cluster, cost);
      const Problem problem{graph, cluster, cost, sim, {}};

      const auto t0 = Clock::now();
      const Plan dp_plan = pipeline_dp_plan(problem);
      const Run dp = finish(dp_plan, sim, std::chrono::duration<double>(Clock::now() - t0).count());
      const int S = a.stages > 0 ? a.stages : std::max(2, dp.stages);
      const Run full = run_rainbow(problem, S, a.episodes, true, a.seed);
      const double ratio = full.step / dp.step;
      ++rows;
      log_full += std::log(ratio);
      within += ratio <= 1.02;
      std::string extra;
      if (a.ablation) {
        const Run rl = run_rainbow(problem, S, a.episodes, false, a.seed);
        const Run norl = run_rainbow(problem, S, 1, true, a.seed);
        const double r1 = rl.step / dp.step, r2 = norl.step / dp.step;
        log_rl += std::log(r1);
        log_norl += std::log(r2);
        within_rl += r1 <= 1.02;
        within_norl += r2 <= 1.02;
        char buf[96];
        std::snprintf(buf, sizeof(buf), " %.3f (%s) | %.3f (%s) |", r1, secs(rl.search).c_str(), r2,
                      secs(norl.search).c_str());
        extra = buf;
      }
      std::printf("| %s | %s | %s (%s) | %d | %s (%s) | %s, %d | %.3f%s |%s\n", model.c_str(),
                  c.c_str(), ms(dp.step).c_str(), secs(dp.search).c_str(), S,
                  ms(full.step).c_str(), secs(full.search).c_str(), full.groups.c_str(),
                  full.micro_batches, ratio, full.oom || dp.oom ? " OOM" : "", extra.c_str());
      std::fflush(stdout);
    }
  }
  if (rows == 0) return 0;
  std::printf("\nrows %d; within 2%% of pipeline-dp: full %d", rows, within);
  if (a.ablation) std::printf(", rl-only %d, no-rl %d", within_rl, within_norl);
  std::printf("; geomean ratio: full %.3f", std::exp(log_full / rows));
  if (a.ablation)
    std::printf(", rl-only %.3f, no-rl %.3f", std::exp(log_rl / rows), std::exp(log_norl / rows));
  std::printf(" (episodes %d, seed %llu, stages %s)\n", a.episodes,
              static_cast<unsigned long long>(a.seed),
              a.stages > 0 ? std::to_string(a.stages).c_str() : "as pipeline-dp");
  return 0;
}

}  // namespace
}  // namespace placer

int main(int argc, char** argv) {
  try {
    return placer::main_impl(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "rainbow_pp_suite_bench: " << e.what() << "\n";
    return 2;
  }
}
