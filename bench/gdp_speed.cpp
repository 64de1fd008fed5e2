// Speed of the GDP learned placer: zero-shot placement time and peak resident
// memory on layered random DAGs (datasets/synthetic.h, width 16, seed 42) of 1k / 10k / 50k
// forward ops, both as forward graphs and expanded to training steps (backward + Adam:
// ~2.3x the ops), on the 8 GPUs of datasets/clusters/dgx1_p100.cluster.yaml; and training
// throughput (simulated placements per second) of `GdpTrainer` on the default corpus.
//
//   ./build/bench/gdp_speed                              # default-size fresh network
//   ./build/bench/gdp_speed --policy models/pretrained/default.pt --samples 16
//   ./build/bench/gdp_speed --train-updates 5            # + training throughput
//
// zero-shot = greedy + --samples sampled placements, each simulated (gdp_place). Peak RSS is
// the process maximum so far (getrusage), so rows are in increasing size order.
// Results: docs/results.md ("GDP: speed and its table suite").
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "agents/gdp/gdp.h"
#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"

namespace placer {
namespace {

std::string repo_path(const std::string& rel) {
  const std::filesystem::path here = std::filesystem::path(__FILE__).parent_path().parent_path();
  const std::filesystem::path p = here / rel;
  return std::filesystem::exists(p) ? p.string() : rel;
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run(int argc, char** argv) {
  std::string policy_path;
  int samples = 16;
  int train_updates = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) {
      std::cerr << "usage: gdp_speed [--policy P] [--samples K] [--train-updates N]\n";
      return 2;
    }
    if (k == "--policy") policy_path = argv[++i];
    else if (k == "--samples") samples = std::atoi(argv[++i]);
    else if (k == "--train-updates") train_updates = std::atoi(argv[++i]);
    else {
      std::cerr << "gdp_speed: unknown option " << k << "\n";
      return 2;
    }
  }
  if (!gdp_available()) {
    std::cerr << "gdp_speed: built without LibTorch\n";
    return 2;
  }
  const GdpPolicy policy =
      policy_path.empty() ? GdpPolicy(GdpNetConfig{}, 1) : GdpPolicy::load(policy_path);
  const Cluster cluster = load_cluster_yaml(repo_path("datasets/clusters/dgx1_p100.cluster.yaml"));
  const CostModel cost(cluster, default_profile());
  std::printf("# policy %s (%lld parameters), greedy + %d samples, 8 devices\n",
              policy_path.empty() ? "fresh default-size network" : policy_path.c_str(),
              static_cast<long long>(policy.num_parameters()), samples);
  std::printf("%-22s %8s %10s %12s %12s\n", "graph", "ops", "place_s", "sim_ms/eval",
              "peak_rss_MB");
  for (int n : {1000, 10000, 50000}) {
    for (bool step : {false, true}) {
      LayeredRandomOptions o;
      o.n_ops = n;
      o.width = 16;
      o.seed = 42;
      Graph fwd = make_layered_random(o);
      const Graph g = step ? expand_training_step(fwd) : std::move(fwd);
      Simulator sim(g, cluster, cost);
      const Problem p{g, cluster, cost, sim, {}};
      GdpPlaceOptions opt;
      opt.samples = samples;
      SearchBudget b;
      const auto t0 = std::chrono::steady_clock::now();
      const GdpPlaceResult r = gdp_place(policy, p, opt, b);
      const double s = since(t0);
      const auto t1 = std::chrono::steady_clock::now();
      sim.run(r.plan);
      const double sim_ms = since(t1) * 1e3;
      const std::string name =
          "layered_" + std::to_string(n / 1000) + "k" + (step ? " (train step)" : " (forward)");
      std::printf("%-22s %8zu %10.3f %12.2f %12.1f\n", name.c_str(), g.num_ops(), s, sim_ms,
                  peak_rss_mb());
      std::fflush(stdout);
    }
  }
  if (train_updates > 0) {
    TrainConfig c;
    c.corpus = repo_path("datasets/corpora/default.corpus.yaml");
    c.clusters = {repo_path("datasets/clusters/dgx1_p100.cluster.yaml")};
    c.updates = train_updates;
    c.eval_every = 0;
    c.checkpoint_every = train_updates;
    c.output_dir =
        (std::filesystem::temp_directory_path() / ("gdp_speed_" + std::to_string(getpid())))
            .string();
    c.net = policy.config();
    GdpTrainer trainer(c);
    int64_t evals = 0;
    double update_s = 0;
    GdpTrainer::Callbacks cb;
    cb.on_update = [&](const TrainUpdateStats& st) {
      evals += st.evaluations;
      update_s += st.seconds;
    };
    const auto t0 = std::chrono::steady_clock::now();
    trainer.train(cb);
    const double total = since(t0);
    std::printf("\n# training: %d updates (%d instances x %d samples each) in %.1f s "
                "(%.1f s in updates, the rest preparing instances and references)\n",
                train_updates, c.ppo.graphs_per_update, c.ppo.samples, total, update_s);
    std::printf("# throughput: %.1f placements evaluated / s (in updates); %.2f s / update\n",
                double(evals) / update_s, update_s / train_updates);
    std::filesystem::remove_all(c.output_dir);
  }
  return 0;
}

}  // namespace
}  // namespace placer

int main(int argc, char** argv) {
  try {
    return placer::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "gdp_speed: " << e.what() << "\n";
    return 1;
  }
}
