// `placer train-policy --agent placeto`: trains a Placeto policy (agents/placeto/placeto.h) on
// generated members of a graph family, on one cluster. docs/placeto.md.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>
#include <memory>

#include "agents/placeto/placeto.h"
#include "agents/training/config_fields.h"
#include "agents/training/placeto_train_config.h"
#include "agents/training/trainer_run.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"
#include "src/util/format.h"
#include "src/util/progress.h"

namespace placer {
namespace {

PlacetoCliConfig effective_placeto_config(const TrainArgs& a) {
  reject_gdp_only_options(a);
  if (!a.corpus.empty()) {
    throw ValidationError(
        "--corpus applies to --agent gdp; placeto trains on generated members of `family:` "
        "(graphs, first_seed, ranges in the config)");
  }
  if (a.clusters.size() > 1) {
    throw ValidationError("--cluster: --agent placeto trains on one cluster (got " +
                          std::to_string(a.clusters.size()) + ")");
  }
  for (const char* opt : {"--eval-every", "--threads", "--device", "--dist-timeout"}) {
    if (a.was_given(opt)) {
      throw ValidationError(std::string(opt) + " applies to --agent gdp only");
    }
  }
  PlacetoCliConfig c = a.config.empty() ? PlacetoCliConfig{} : load_placeto_train_config(a.config);
  if (a.config.empty()) c.train.output_dir = absolute_path(c.train.output_dir);
  for (const std::string& s : a.sets) apply_placeto_override(&c, s);
  if (!a.clusters.empty()) c.cluster = absolute_path(a.clusters.front());
  if (a.was_given("--updates")) {
    if (a.updates > std::numeric_limits<int>::max())
      throw ValidationError("--updates: at most " +
                            std::to_string(std::numeric_limits<int>::max()));
    c.train.updates = int(a.updates);
  }
  if (a.was_given("--seed")) c.train.seed = a.seed;
  if (!a.output_dir.empty()) c.train.output_dir = absolute_path(a.output_dir);
  c.command = command_line();
  return c;
}

}  // namespace

void run_train_placeto(const TrainArgs& a) {
  PlacetoCliConfig c = effective_placeto_config(a);
  if (printed_config(a, " --agent placeto", c, placeto_train_config_yaml, placeto_available()))
    return;
  if (c.cluster.empty()) {
    throw ValidationError(
        "cluster: required (a *.cluster.yaml; set `cluster:` in the config or pass --cluster)");
  }
  const Cluster cluster = load_cluster_yaml(c.cluster);
  for (int d : c.train.devices) {
    if (d >= cluster.num_devices()) {
      throw ValidationError("devices: device " + std::to_string(d) + " is not in " +
                            shown_path(c.cluster) + " (" + std::to_string(cluster.num_devices()) +
                            " devices, ids 0.." + std::to_string(cluster.num_devices() - 1) + ")");
    }
  }
  const CostModel cost(cluster,
                       c.profile.empty() ? default_profile() : load_cost_profile(c.profile));
  TrainerRun run(c.train.output_dir, a);

  // placeto_train resumes itself (after preparing its graphs) and reports the update it
  // continues after through on_start.
  PlacetoTrainConfig t = c.train;
  t.resumable = true;
  t.resume = a.resume;
  std::unique_ptr<Progress> prep, progress;
  int64_t start = 0, run_evaluations = 0;
  double run_update_seconds = 0;
  PlacetoTrainCallbacks cb;
  cb.on_prepare = [&](int64_t done, int64_t total) {
    if (!prep) prep = std::make_unique<Progress>("placer: preparing graphs", total);
    prep->update(done);
    if (done >= total) prep->finish();
  };
  cb.on_start = [&](int64_t start_update) {
    start = start_update;
    // After the checkpoint was checked against the configuration (placeto_train).
    run.files().write_config(
        placeto_train_config_yaml(c, run_config_header(" --agent placeto", c.command)),
        [&c](const std::string& file) {
          return same_placeto_train_config(load_placeto_train_config(file), c);
        });
    std::cout << "training     placeto, " << run.updates_text(start, t.updates) << " on "
              << t.graphs << " " << t.family << " graphs (seeds " << t.first_seed << ".."
              << t.first_seed + uint64_t(t.graphs) - 1 << "), " << t.devices.size()
              << " devices of " << cluster.name << ", " << t.rl.episodes << " episodes per update\n"
              << "output       " << shown_path(t.output_dir) << "\n"
              << std::flush;
    progress =
        std::make_unique<Progress>("placer: train-policy", std::max<int64_t>(0, t.updates - start));
  };
  cb.on_update = [&](const PlacetoTrainUpdate& u) {
    run_evaluations += u.update_evaluations;
    run_update_seconds += u.update_seconds;
    const double rate = run_update_seconds > 0 ? double(run_evaluations) / run_update_seconds : 0;
    progress->update(u.update - start, "return " + fixed(u.mean_return, 3) + ", entropy " +
                                           fixed(u.entropy, 2) + ", best " +
                                           ratio_text(u.best_ratio) + " ref, " +
                                           fixed(rate, rate >= 100 ? 0 : 1) + " placements/s");
  };
  cb.should_stop = run.should_stop();

  const auto t0 = std::chrono::steady_clock::now();
  const PlacetoTrainResult res = placeto_train(t, cluster, cost, cb);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (prep) prep->finish();
  if (progress) progress->finish();
  if (res.stopped) {
    if (res.policy_path.empty()) interrupted_before_start();
    run.exit_if_stopped(res.updates);
  }
  run.print_updates(res.updates, res.start_update, wall);
  std::cout << "placements   " << run_evaluations << " simulated in this run (" << res.evaluations
            << " in all)\n";
  print_files_and_use(run.files(), "--method placeto ");
}

}  // namespace placer
