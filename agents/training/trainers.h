#pragma once
// The trainer registry of `placer train-policy --agent A`: one registration per trainer (name,
// one-line doc, run function), looked up by name, as the methods of `placer place` are
// (agents/registry.cpp). Each trainer's run function lives in its own file (train_gdp.cpp,
// train_rainbow_pp.cpp, train_placeto.cpp, train_autosync.cpp) and builds its run on the
// training harness (agents/common/training_run.h) through TrainerRun
// (agents/training/trainer_run.h). Adding a trainer: a file with its run function, its declaration
// below and its entry in trainers() (agents/training/trainers.cpp). The command line
// (cli/train_policy.cpp) parses the options into TrainArgs and calls the trainer's run function.

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace placer {

/// The command line of train-policy, as parsed (cli/train_policy.cpp).
struct TrainArgs {
  std::string config;
  std::vector<std::string> sets;
  std::string corpus;
  std::vector<std::string> clusters;
  int64_t updates = 0;
  uint64_t seed = 0;
  int eval_every = 0;
  std::string output_dir;
  std::string agent;  ///< a trainer's name; "" = the config's `agent:`, else gdp
  bool resume = false, overwrite = false, plot = false, plot_only = false, print_config = false;
  // Distribution (docs/distributed.md); not part of the saved configuration, except
  // --dist-timeout, which overrides dist.timeout.
  std::string dist_url, device = "cpu";
  int rank = -1, world_size = -1, threads = 0;
  double dist_timeout = 60;  ///< applied only when given (else the config's dist.timeout)
  /// The options given on the command line by their long name ("--updates", "--seed"): an
  /// option not given leaves the config's value.
  std::set<std::string> given;
  bool was_given(const std::string& option) const { return given.count(option) > 0; }
};

/// One trainer of train-policy.
struct TrainerInfo {
  std::string name;  ///< the --agent value
  std::string doc;   ///< one line: what it trains on, how (for --help)
  /// Trains (or prints the configuration, plots, ...) as the arguments say. Throws
  /// placer::Error, or TrainerExit (trainer_run.h) to end the process with an exit code
  /// (130 when stopped).
  std::function<void(const TrainArgs&)> run;
};

/// Every trainer, in display order (gdp, the default, first).
const std::vector<TrainerInfo>& trainers();

/// The trainer `name`: ValidationError "--agent: unknown agent 'x' (known: gdp, ...)".
const TrainerInfo& find_trainer(const std::string& name);

// The run functions, one file each (registered in trainers()).
void run_train_gdp(const TrainArgs& a);         // train_gdp.cpp
void run_train_rainbow_pp(const TrainArgs& a);  // train_rainbow_pp.cpp
void run_train_placeto(const TrainArgs& a);     // train_placeto.cpp
void run_train_autosync(const TrainArgs& a);    // train_autosync.cpp
void run_train_expert_rl(const TrainArgs& a);   // train_expert_rl.cpp

}  // namespace placer
