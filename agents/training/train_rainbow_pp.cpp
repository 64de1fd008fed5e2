// `placer train-policy --agent rainbow-pp`: pretrains the pipeline-cut policy
// (agents/rainbow/rainbow_pp_policy.h) on generated array problems.
// docs/rainbow_pp_inference.md.
#include <algorithm>
#include <chrono>
#include <iostream>

#include "agents/rainbow/rainbow_pp_policy.h"
#include "agents/training/config_fields.h"
#include "agents/training/train_config.h"
#include "agents/training/trainer_run.h"
#include "src/util/error.h"
#include "src/util/format.h"
#include "src/util/progress.h"

namespace placer {
namespace {

RainbowPPTrainConfig effective_pp_config(const TrainArgs& a) {
  reject_gdp_only_options(a);
  if (!a.corpus.empty() || !a.clusters.empty()) {
    throw ValidationError(
        "--corpus / --cluster apply to --agent gdp; rainbow-pp trains on generated arrays "
        "(eval_graphs / eval_cluster in the config name real graphs to evaluate)");
  }
  RainbowPPTrainConfig c;
  if (!a.config.empty()) {
    c = load_rainbow_pp_train_config(a.config);
  } else {
    c.output_dir = absolute_path(c.output_dir);
  }
  for (const std::string& s : a.sets) apply_rainbow_pp_override(&c, s);
  if (a.was_given("--updates")) c.updates = a.updates;
  if (a.was_given("--seed")) c.seed = a.seed;
  if (a.was_given("--eval-every")) c.eval_every = a.eval_every;
  if (!a.output_dir.empty()) c.output_dir = absolute_path(a.output_dir);
  c.command = command_line();
  return c;
}

void print_pp_eval(const RainbowPPEvalStats& e, std::ostream& out) {
  out << "\nvalidation at update " << e.update << ": held-out mean reward "
      << fixed(e.heldout_mean_reward, 3) << " (1 = balanced cuts), better than balanced on "
      << fixed(100 * e.heldout_win_rate, 1) << "%\n";
  if (!e.rows.empty()) {
    size_t w = 8;
    for (const RainbowPPEvalRow& r : e.rows) w = std::max(w, r.graph.size());
    out << pad_right("graph", w + 2) << pad_left("center", 12) << pad_left("policy", 12)
        << pad_left("ratio", 9) << "\n";
    for (const RainbowPPEvalRow& r : e.rows) {
      out << pad_right(r.graph, w + 2) << pad_left(human_time(r.center_time), 12)
          << pad_left(human_time(r.policy_time), 12)
          << pad_left(r.center_time > 0 ? "x" + fixed(r.policy_time / r.center_time, 3) : "-", 9)
          << "\n";
    }
  }
  out << std::flush;
}

}  // namespace

void run_train_rainbow_pp(const TrainArgs& a) {
  RainbowPPTrainConfig c = effective_pp_config(a);
  const bool torch = rainbow_pp_policy_available();
  if (printed_config(a, " --agent rainbow-pp", c, rainbow_pp_train_config_yaml, torch)) return;
  TrainerRun run(c.output_dir, a);
  RainbowPPTrainer trainer(c);
  const int64_t start = run.start([&trainer] { return trainer.resume(); });
  run.files().write_config(
      rainbow_pp_train_config_yaml(c, run_config_header(" --agent rainbow-pp", c.command)),
      [&c](const std::string& file) {
        return same_rainbow_pp_train_config(load_rainbow_pp_train_config(file), c);
      });
  std::cout << "training     rainbow-pp, " << run.updates_text(start, c.updates) << " of "
            << c.arrays_per_update << " generated array problems (" << c.stages
            << " stages, <= " << c.max_devices << " devices)\n"
            << "output       " << shown_path(c.output_dir) << "\n"
            << std::flush;

  Progress progress("placer: train-policy", std::max<int64_t>(0, c.updates - start));
  int64_t arrays = 0;
  RainbowPPTrainer::Callbacks cb;
  cb.on_update = [&](const RainbowPPUpdateStats& u) {
    arrays += u.arrays;
    const double rate = u.seconds > 0 ? double(u.arrays) / u.seconds : 0;
    progress.update(u.update - start, "reward " + fixed(u.mean_reward, 3) + ", eps " +
                                          fixed(u.epsilon, 2) + ", loss " + fixed(u.loss, 3) +
                                          ", " + fixed(rate, rate >= 100 ? 0 : 1) + " arrays/s");
  };
  cb.on_eval = [](const RainbowPPEvalStats& e) { print_pp_eval(e, std::cout); };
  cb.should_stop = run.should_stop();
  run.train([&] { return trainer.train(cb); }, progress, start);
  std::cout << "arrays       " << arrays << " generated problems in this run\n";
  print_files_and_use(run.files(), "--method rainbow-pp ");
}

}  // namespace placer
