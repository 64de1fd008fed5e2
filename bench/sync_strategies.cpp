// Per-variable gradient synchronisation strategies (issue 21, docs/sync.md): horovod vs ps
// vs parallax vs poseidon vs autosync on sparse models (an LSTM LM, a large-vocabulary
// transformer, a DLRM-style recommendation model) and dense CNNs, data parallel over the 8
// GPUs of the 1 / 10 / 25 / 40 Gbit/s clusters (datasets/clusters/sync_*gbit.cluster.yaml).
// Prints one row per (model, bandwidth), then the targets: parallax vs horovod on the sparse
// rows, the PS / all-reduce crossover, autosync vs the best builder. The `lossy` column is
// autosync with --allow-compression and --max-staleness 1 (changes convergence: not part of
// the targets).
//
//   build/bench/sync_strategies [--evals N] [--seed S]

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "agents/placer.h"
#include "datasets/family_inception.h"
#include "datasets/family_rec.h"
#include "datasets/family_rnn.h"
#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/io/graph_json.h"

namespace placer {
namespace {

std::string repo(const std::string& rel) {
  const std::filesystem::path p = std::filesystem::path(__FILE__).parent_path().parent_path() / rel;
  return std::filesystem::exists(p) ? p.string() : rel;
}

struct Model {
  std::string label;
  bool sparse;
  std::function<Graph()> forward;
};

std::vector<Model> models() {
  return {
      {"lstm_lm (2x1024, V 50k)", true,
       [] {
         RnnlmOptions o;
         o.vocab = 50000;
         o.batch = 8 * 32;
         o.fused_cells = true;
         return make_rnnlm(o);
       }},
      {"transformer (6x512, V 100k)", true,
       [] {
         TransformerOptions o;
         o.layers = 6;
         o.vocab = 100000;
         o.batch = 8 * 8;
         o.dtype = DType::kF32;
         return make_transformer(o);
       }},
      {"rec (8 x 1M x 64)", true,
       [] {
         RecOptions o;
         o.batch = 8 * 1024;
         return make_rec(o);
       }},
      {"inception (b 8x32)", false,
       [] {
         InceptionOptions o;
         o.batch = 8 * 32;
         return make_inception(o);
       }},
      {"vgg11 (b 32)", false, [] { return load_graph_json(repo("datasets/models/vgg11.graph.json")); }},
  };
}

double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? NAN : std::exp(s / double(v.size()));
}

}  // namespace
}  // namespace placer

int main(int argc, char** argv) {
  using namespace placer;
  int64_t evals = 300;
  uint64_t seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--evals")) evals = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[i + 1], nullptr, 10);
  }
  const int gbits[] = {1, 10, 25, 40};
  const char* methods[] = {"horovod", "ps", "parallax", "poseidon", "autosync"};
  std::printf("%-28s %5s %10s %10s %10s %10s %10s %7s %10s\n", "model", "Gbit", "horovod", "ps",
              "parallax", "poseidon", "autosync", "vs best", "lossy");
  std::vector<double> sparse_low, parallax_gain;
  double worst_elsewhere = 0;
  for (const Model& m : models()) {
    const Graph g = expand_training_step(m.forward());
    int crossover = -1;  // lowest bandwidth where all-reduce (horovod) beats the PS
    for (int gb : gbits) {
      const Cluster c = load_cluster_yaml(repo("datasets/clusters/sync_" + std::to_string(gb) +
                                                "gbit.cluster.yaml"));
      const CostModel cost(c, default_profile());
      Simulator sim(g, c, cost);
      const Problem p{g, c, cost, sim, {}};
      std::vector<double> t;
      for (const char* name : methods) {
        SearchBudget b;
        b.seed = seed;
        b.max_evaluations = evals;
        const SimResult r = sim.run(make_placer(name)->search(p, b));
        t.push_back(r.oom ? INFINITY : r.step_time);
      }
      SearchBudget lossy;
      lossy.seed = seed;
      lossy.max_evaluations = evals;
      lossy.allow_compression = true;
      lossy.max_staleness = 1;
      const double t_lossy = sim.run(make_placer("autosync")->search(p, lossy)).step_time;
      const double best_builder = std::min({t[0], t[1], t[2], t[3]});
      const double ratio = best_builder / t[4];
      if (m.sparse && gb <= 10) {
        sparse_low.push_back(ratio);
      } else {
        worst_elsewhere = std::max(worst_elsewhere, t[4] / best_builder - 1);
      }
      if (m.sparse) parallax_gain.push_back(t[0] / t[2]);
      if (crossover < 0 && t[0] < t[1]) crossover = gb;
      std::printf("%-28s %5d %10.2f %10.2f %10.2f %10.2f %10.2f %6.2fx %10.2f\n",
                  m.label.c_str(), gb, t[0] * 1e3, t[1] * 1e3, t[2] * 1e3, t[3] * 1e3,
                  t[4] * 1e3, ratio, t_lossy * 1e3);
      std::fflush(stdout);
    }
    std::printf("%-28s PS -> all-reduce crossover: %s\n", m.label.c_str(),
                crossover < 0 ? "PS faster at every bandwidth"
                              : ("horovod faster from " + std::to_string(crossover) + " Gbit/s")
                                    .c_str());
  }
  std::printf("\nstep times in ms, 8 x V100 (4 hosts x 2), data parallel, Adam; seed %llu, %lld "
              "evaluations per autosync search\n",
              static_cast<unsigned long long>(seed), static_cast<long long>(evals));
  std::printf("parallax vs horovod, sparse rows: geomean %.2fx faster\n", geomean(parallax_gain));
  std::printf("autosync vs best builder, sparse rows <= 10 Gbit/s: geomean %.3fx (target >= 1.1x)\n",
              geomean(sparse_low));
  std::printf("autosync vs best builder elsewhere: worst %.1f%% slower (target <= 2%%)\n",
              worst_elsewhere * 100);
  return 0;
}
