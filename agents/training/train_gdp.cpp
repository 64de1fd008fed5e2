// `placer train-policy` (--agent gdp, the default): pretrains the GDP policy
// (agents/gdp/gdp.h) with PPO over a graph corpus, from a train.yaml plus command-line
// overrides, on one process or several (docs/distributed.md); prints validation tables and
// plots the learning curves with gnuplot (agents/training/train_plot.h). docs/gdp.md.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>

#include "agents/gdp/gdp.h"
#include "agents/gdp/gdp_dist.h"
#include "agents/staged_methods.h"
#include "agents/training/config_fields.h"
#include "agents/training/train_config.h"
#include "agents/training/train_plot.h"
#include "agents/training/trainer_run.h"
#include "src/util/error.h"
#include "src/util/format.h"
#include "src/util/progress.h"

namespace placer {
namespace {

/// The config file (or defaults), then --set in order, then the direct flags.
TrainConfig effective_config(const TrainArgs& a) {
  TrainConfig c = a.config.empty() ? TrainConfig{} : load_train_config(a.config);
  if (a.config.empty()) c.output_dir = absolute_path(c.output_dir);
  for (const std::string& s : a.sets) apply_train_override(&c, s);
  if (!a.corpus.empty()) c.corpus = absolute_path(a.corpus);
  if (!a.clusters.empty()) {
    c.clusters.clear();
    for (const std::string& p : a.clusters) c.clusters.push_back(absolute_path(p));
  }
  if (a.was_given("--updates")) c.updates = a.updates;
  if (a.was_given("--seed")) c.seed = a.seed;
  if (a.was_given("--eval-every")) c.eval_every = a.eval_every;
  if (!a.output_dir.empty()) c.output_dir = absolute_path(a.output_dir);
  c.dist.url = a.dist_url;
  c.dist.rank = a.rank;
  c.dist.world_size = a.world_size;
  if (a.was_given("--dist-timeout")) c.dist.timeout_seconds = a.dist_timeout;
  c.threads = a.threads;
  c.device = a.device;
  if (c.stages) {  // what `gdp+stages` scores
    c.shape = [](const Problem& p, const Plan& placement) {
      return placement_or_pipeline(p, placement);
    };
  }
  c.command = command_line();
  return c;
}

void print_eval(const TrainEvalStats& e, std::ostream& out) {
  size_t w = 8;
  for (const TrainEvalRow& r : e.rows) w = std::max(w, r.instance.size());
  out << "\nvalidation at update " << e.update << ": sampled / best classical "
      << ratio_text(e.geomean_vs_classical) << " (geomean), greedy / best classical "
      << ratio_text(e.geomean_greedy_vs_classical) << "\n";
  out << pad_right("instance", w + 2) << pad_right("best classical", 26) << pad_left("greedy", 10)
      << pad_left("sampled", 11) << pad_left("ratio", 9) << "\n";
  for (const TrainEvalRow& r : e.rows) {
    const std::string classical = human_time(r.best_classical_time) + " (" + r.best_classical + ")";
    out << pad_right(r.instance, w + 2) << pad_right(classical, 26)
        << pad_left(human_time(r.greedy_time), 10) << pad_left(human_time(r.sampled_time), 11)
        << pad_left(
               r.best_classical_time > 0 ? ratio_text(r.sampled_time / r.best_classical_time) : "-",
               9)
        << "\n";
  }
  out << std::flush;
}

void print_curves(const std::string& dir) {
  const std::string png = plot_curves(dir);
  std::cout << "curves       " << shown_path(png) << "\n";
}

}  // namespace

void run_train_gdp(const TrainArgs& a) {
  if (a.plot_only && (a.resume || a.print_config)) {
    throw Error("--plot-only plots an existing run; it takes neither --resume nor --print-config");
  }
  TrainConfig c = effective_config(a);
  if (printed_config(a, "", c, train_config_yaml)) return;
  if (a.plot_only) {
    print_curves(c.output_dir);
    return;
  }
  require_torch(gdp_available());
  if (c.corpus.empty()) {
    throw ValidationError(
        "corpus: required (a *.corpus.yaml; set `corpus:` in the config or "
        "pass --corpus)");
  }
  if (c.clusters.empty()) {
    throw ValidationError(
        "clusters: required (one or more *.cluster.yaml; set `clusters:` in "
        "the config or pass --cluster)");
  }
  // Rank 0 alone prints and writes (docs/distributed.md); the others only train.
  const DistSetup dist = resolve_dist(c.dist);
  const bool root = dist.rank == 0;
  TrainerRun run(c.output_dir, a, root);
  std::unique_ptr<Progress> prep;
  std::string prep_what;
  GdpTrainer trainer(c);
  const int64_t start = run.start([&trainer] { return trainer.resume(); });

  if (!root) {  // another rank: train in step with rank 0, print nothing
    GdpTrainer::Callbacks quiet;
    quiet.should_stop = run.should_stop();
    trainer.train(quiet);
    if (run.stopped()) throw TrainerExit(130);
    return;
  }
  // The file must reproduce the run (docs/gdp.md).
  run.files().write_config(
      train_config_yaml(c, run_config_header("", c.command)),
      [&c](const std::string& file) { return same_train_config(load_train_config(file), c); });

  std::cout << "training     " << run.updates_text(start, c.updates) << " on "
            << trainer.num_train_instances() << " train / " << trainer.num_val_instances()
            << " validation instances\n"
            << "output       " << shown_path(c.output_dir) << "\n";
  if (dist.world_size > 1) {
    std::cout << "ranks        " << dist.world_size << " (rank 0 here, " << dist.init << ", "
              << trainer.dist_backend() << ")\n";
  }
  std::cout << std::flush;

  Progress progress("placer: train-policy", std::max<int64_t>(0, c.updates - start));
  int64_t run_evaluations = 0;
  GdpTrainer::Callbacks cb;
  cb.on_prepare = [&prep, &prep_what](int64_t done, int64_t total, const std::string& what) {
    if (total == 0) {  // a note (e.g. a graph skipped for max_ops), not a counter
      std::cerr << "placer: train-policy: " << what << "\n";
      return;
    }
    if (!prep || what != prep_what) {
      prep = std::make_unique<Progress>("placer: " + what, total);
      prep_what = what;
    }
    prep->set_total(total);
    prep->update(done);
    if (total > 0 && done >= total) prep->finish();
  };
  cb.on_update = [&](const TrainUpdateStats& u) {
    if (prep) prep->finish();
    run_evaluations += u.evaluations;
    const double rate = u.seconds > 0 ? double(u.evaluations) / u.seconds : 0;
    const std::string phase =
        u.phase == "imitation" ? "imitation acc " + fixed(u.accuracy, 2) + ", " : std::string();
    progress.update(u.update - start, phase + "reward " + fixed(u.mean_reward, 3) + ", best " +
                                          ratio_text(u.best_ratio) + " ref, " +
                                          fixed(rate, rate >= 100 ? 0 : 1) + " placements/s");
  };
  cb.on_eval = [](const TrainEvalStats& e) { print_eval(e, std::cout); };
  cb.should_stop = run.should_stop();
  double wall = 0;
  run.train([&] { return trainer.train(cb); }, progress, start, &wall);
  std::cout << "placements/s "
            << (wall > 0 ? fixed(double(run_evaluations) / wall, 1) : std::string("-")) << " ("
            << run_evaluations << " simulated placements)\n";
  print_files_and_use(run.files(), "");
  if (a.plot) print_curves(c.output_dir);
}

}  // namespace placer
