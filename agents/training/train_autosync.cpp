// `placer train-policy --agent autosync`: pretrains the per-variable sync-strategy policy
// (agents/sync/autosync_rl.h) on a corpus. One policy file at the end: no checkpoint, log or
// config.yaml, so of the harness it uses the folder and Ctrl-C. docs/sync.md.
#include <filesystem>
#include <iostream>

#include "agents/common/stop_signals.h"
#include "agents/common/training_run.h"
#include "agents/sync/autosync_rl.h"
#include "agents/training/config_fields.h"
#include "agents/training/trainer_run.h"
#include "src/util/error.h"
#include "src/util/format.h"
#include "src/util/progress.h"

namespace placer {

void run_train_autosync(const TrainArgs& a) {
  for (const char* opt :
       {"--config", "--resume", "--plot", "--plot-only", "--print-config", "--eval-every",
        "--dist-url", "--rank", "--world-size", "--threads", "--device", "--dist-timeout"}) {
    if (a.was_given(opt)) {
      throw ValidationError(std::string(opt) + " does not apply to --agent autosync");
    }
  }
  AutosyncTrainOptions o;
  o.corpus = a.corpus;
  for (const std::string& c : a.clusters) o.clusters.push_back(absolute_path(c));
  for (const std::string& s : a.sets) apply_autosync_train_option(&o, s);
  if (a.was_given("--updates")) o.episodes = a.updates;
  if (a.was_given("--seed")) o.seed = a.seed;
  if (o.corpus.empty()) {
    throw ValidationError("--agent autosync: --corpus required (a *.corpus.yaml)");
  }
  if (o.clusters.empty()) {
    throw ValidationError("--agent autosync: --cluster required (repeatable)");
  }
  require_torch(autosync_rl_available());
  const TrainingRun run(absolute_path(a.output_dir.empty() ? "runs/autosync" : a.output_dir));
  o.output = run.file("policy.pt");
  if (std::filesystem::exists(o.output) && !a.overwrite) {
    throw Error(shown_path(o.output) +
                " exists; start over with --overwrite or pick another --output-dir");
  }
  run.create();
  StopSignals signals;
  Progress progress("placer: train-policy", o.episodes);
  o.progress = [&](int64_t done, int64_t, double mean) {
    progress.update(done, "reward " + fixed(mean, 3));
  };
  o.should_stop = signals.flag();
  std::cout << "training     autosync, " << o.episodes << " episodes on the " << o.split
            << " split of " << shown_path(o.corpus) << " (<= " << o.graphs
            << " graphs of <= " << o.max_ops << " ops) x " << o.clusters.size() << " clusters\n"
            << std::flush;
  const AutosyncTrainResult r = autosync_train(o);
  progress.finish();
  std::cout << "\nepisodes     " << r.episodes << " on " << r.problems << " problems, "
            << r.simulations << " simulations\n"
            << "reward       " << fixed(r.mean_reward, 3)
            << " (mean of the last 100: log-speedup over the best builder)\n"
            << "cpu time     " << human_time(r.cpu_seconds) << " (wall "
            << human_time(r.wall_seconds) << ")\n";
  print_files_and_use(run, "--method autosync ");
}

}  // namespace placer
