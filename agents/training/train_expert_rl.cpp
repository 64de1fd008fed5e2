// `placer train-policy --agent expert-rl`: pretrains the learned expert placer
// (agents/experts/expert_rl.h) with REINFORCE on the train split of the generated routing
// corpus (datasets/routing_gen.h). One policy file at the end. docs/expert_placement.md.
#include <ctime>
#include <filesystem>
#include <iostream>

#include "agents/common/training_run.h"
#include "agents/experts/expert_rl.h"
#include "agents/training/config_fields.h"
#include "agents/training/trainer_run.h"
#include "datasets/routing_gen.h"
#include "src/util/error.h"
#include "src/util/format.h"
#include "src/util/progress.h"

namespace placer {

namespace {

/// The train split's layers (48 distributions x 4 layers x 64 experts, top 8), each with its
/// position in its model.
void corpus_layers(uint64_t seed, std::vector<std::vector<double>>* layers,
                   std::vector<double>* positions) {
  RoutingGenOptions shape;
  shape.layers = 4;
  shape.experts = 64;
  shape.top_k = 8;
  shape.tokens = 4096 * 16;
  for (const RoutingTrace& t : routing_corpus(RoutingSplit::kTrain, 48, shape, seed)) {
    const RoutingStats r = t.stats();
    for (size_t l = 0; l < r.share.size(); ++l) {
      layers->push_back(r.share[l]);
      positions->push_back(double(l) / double(r.share.size() - 1));
    }
  }
}

}  // namespace

void run_train_expert_rl(const TrainArgs& a) {
  for (const char* opt : {"--config", "--set", "--corpus", "--cluster", "--resume", "--plot",
                          "--plot-only", "--print-config", "--eval-every", "--dist-url", "--rank",
                          "--world-size", "--threads", "--device", "--dist-timeout"}) {
    if (a.was_given(opt)) {
      throw ValidationError(std::string(opt) + " does not apply to --agent expert-rl");
    }
  }
  ExpertRlTrainOptions o;
  if (a.was_given("--updates")) o.updates = a.updates;
  if (a.was_given("--seed")) o.seed = a.seed;
  if (o.updates < 1) throw ValidationError("--updates: must be >= 1 for --agent expert-rl");
  const TrainingRun run(absolute_path(a.output_dir.empty() ? "runs/expert_rl" : a.output_dir));
  const std::string out = run.file("policy.pt");
  if (std::filesystem::exists(out) && !a.overwrite) {
    throw Error(shown_path(out) +
                " exists; start over with --overwrite or pick another --output-dir");
  }
  std::vector<std::vector<double>> layers;
  std::vector<double> positions;
  corpus_layers(o.seed, &layers, &positions);
  run.create();
  std::cout << "training     expert-rl, " << o.updates << " updates on " << layers.size()
            << " layers of the routing corpus' train split (seed " << o.seed << ")\n"
            << std::flush;
  Progress progress("placer: train-policy", o.updates);
  const std::clock_t c0 = std::clock();
  ExpertPolicy policy(o.hidden);
  double last = 0;
  policy.pretrain(layers, positions, o, [&](int64_t u, double ratio) {
    last = ratio;
    progress.update(u + 1, "step / eplb " + fixed(ratio, 3));
  });
  progress.finish();
  const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
  policy.save(out, "REINFORCE, " + std::to_string(o.updates) + " updates on the train split of " +
                       "routing_corpus (48 x 4 layers x 64 experts, top 8, seed " +
                       std::to_string(o.seed) + "), 16 ranks on 2 nodes, 16 redundant; " +
                       fixed(cpu, 0) + " CPU seconds");
  std::cout << "\nstep / eplb  " << fixed(last, 3) << " (last update's samples, layer model)\n"
            << "cpu time     " << human_time(cpu) << "\n";
  print_files_and_use(run, "--method expert-rl ");
}

}  // namespace placer
