#pragma once
// `autosync`: the learned per-variable synchronisation search (after AutoSync, Zhang et al.
// 2020). A Rainbow DQN agent (agents/common/rainbow_agent.h) walks the variables of the SyncEnv
// MDP (agents/sync/sync_env.h) and picks a strategy per variable; the reward is the final
// log-speedup of the simulated step over the best strategy builder.
//  - online (default): the agent learns from scratch on the problem's own graph, episode
//    after episode (one simulation each), epsilon-greedy; the best plan seen is kept;
//  - zero-shot (`policy`): a policy pretrained on a corpus (autosync_train, `placer
//    train-policy --agent autosync`) acts greedily on the new graph (one simulation); with
//    `episodes` > 0 it is fine-tuned online after that;
//  - polish: the coordinate descent of `autosync-search` (agents/sync/autosync.h) then
//    starts from the best of the learned plan and the best builder with the rest of the
//    simulation budget (`polish` share; 0 = the learned plan alone).
// The returned plan is never slower than the best builder (which it is compared with).
// Torch-free header: agents/sync/rainbow_autosync.cpp needs LibTorch; without it
// agents/sync/no_torch_autosync.cpp throws and `autosync` is not registered.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "agents/common/rainbow_config.h"

namespace placer {

class RainbowAgent;

/// Agent options of the autosync search: gamma 1 (the return is the final log-speedup),
/// 1-step targets (n-step targets follow the exploring policy: on the 2-variable toy 3-step
/// returns rated the PS on one server above the sharded PS, which is only best when the
/// next variable is chosen well), epsilon 1 -> 0.05, MLP 64 x 64 and 21 atoms (the net
/// runs at every step: 128 x 128 x 51 atoms took ~15 ms a call on the 2-core machine),
/// replay 4000, batch 32, Adam lr 5e-4, C51 support [-1.2, 1.2] (the reward is clamped to
/// [-1, 1]).
RainbowConfig autosync_agent_defaults();

struct AutosyncOptions {
  int units = 31;  ///< variables decided one by one (SyncEnvOptions::max_units)
  /// Training episodes; 0 = as many as the budget allows (online), none (with a policy).
  int episodes = 0;
  double polish = 0.25;  ///< share of the simulation budget for the coordinate polish
  int learn_every = 4;   ///< agent steps between learn() updates
  /// Every demo_every-th training episode replays the best builder's plan
  /// (SyncEnv::reference_actions) through observe / learn: a demonstration (0 = none).
  /// Off online: with every 10th episode a demonstration the agent stayed near the
  /// builder's plan (bench/sync_strategies: 1.005x the best builder on the sparse rows
  /// <= 10 Gbit/s after the polish, against 1.027x without); on in pretraining (below).
  int demo_every = 0;
  std::string policy;  ///< pretrained policy file ("" = online from scratch)
  RainbowConfig agent = autosync_agent_defaults();  ///< seed from the budget
};

/// What a search found.
struct AutosyncReport {
  Plan plan;                  ///< the returned plan (method "autosync")
  double step_time = 0;       ///< its simulated step (+inf if OOM)
  double reference_time = 0;  ///< best builder
  double learned_time = 0;    ///< best plan of the agent's episodes (greedy one included)
  double greedy_time = 0;     ///< the greedy episode (zero-shot: the policy's plan)
  std::string source;         ///< "learned", "builder" or "polish": what the plan came from
  int64_t episodes = 0;       ///< training episodes (greedy ones not counted)
  int64_t simulations = 0;    ///< all simulator runs (builders and polish included)
  double seconds = 0;
};

/// Default simulations when the budget gives none (as autosync-search).
inline constexpr int64_t kAutosyncDefaultEvals = 400;

/// Runs the search. ValidationError on bad options (units < 1, polish outside [0, 1],
/// learn_every < 1, episodes < 0, a bad agent config, staleness < 0), FileError /
/// FormatError on a policy file that is missing or not an autosync policy. Throws
/// placer::Error without LibTorch.
AutosyncReport autosync_search(const Problem& p, const SearchBudget& budget,
                               const AutosyncOptions& o);

/// The `autosync` method's options (agents/sync/autosync_options.cpp).
const OptionTable<AutosyncOptions>& autosync_option_table();

/// The `autosync` placer with these options.
std::unique_ptr<Placer> make_autosync_rl_placer(const AutosyncOptions& o = {});
bool autosync_rl_available();

/// Pretraining on a corpus (placer train-policy --agent autosync).
struct AutosyncTrainOptions {
  std::string corpus;                 ///< *.corpus.yaml
  std::vector<std::string> clusters;  ///< cluster files; each graph x each cluster is a problem
  std::string split = "train";        ///< corpus split to train on
  int64_t max_ops = 1500;             ///< skip graphs with more ops (after expansion)
  int graphs = 24;                    ///< at most this many graphs (0 = all), seeded choice
  int64_t episodes = 3000;            ///< training episodes in all
  uint64_t seed = 1;
  int units = 31;
  int learn_every = 4;
  /// As AutosyncOptions::demo_every: zero-shot plans of a policy pretrained with
  /// demonstrations were 0.770x the best builder there, 0.478x without.
  int demo_every = 5;
  bool allow_compression = false;  ///< the lossy actions the policy may learn
  int max_staleness = 0;
  RainbowConfig agent = autosync_agent_defaults();
  std::string output;  ///< policy file written at the end
  /// Called after each episode: (episodes done, total, mean reward of the last 100).
  std::function<void(int64_t, int64_t, double)> progress;
  std::function<bool()> should_stop;  ///< checked after each episode
};

struct AutosyncTrainResult {
  int64_t episodes = 0, simulations = 0;
  int problems = 0;        ///< graph x cluster pairs
  double mean_reward = 0;  ///< over the last 100 episodes
  double cpu_seconds = 0, wall_seconds = 0;
  std::string policy;  ///< the file written
};

/// ValidationError on bad options (no clusters, episodes < 1, an empty split, ...).
AutosyncTrainResult autosync_train(const AutosyncTrainOptions& o);

/// The pretraining's options: corpus keys split, max_ops, graphs, units, learn_every,
/// demo_every, allow_compression, max_staleness, then every Rainbow agent option
/// (agents/common/rainbow_config.h).
const OptionTable<AutosyncTrainOptions>& autosync_train_option_table();
/// Sets one train option from "key=value" through that table (ValidationError
/// "--set <key> (autosync): ..." on a bad one).
void apply_autosync_train_option(AutosyncTrainOptions* o, const std::string& key_value);

/// Policy files: the agent's torch archive at `path` and its options at path + ".yaml".
void save_autosync_policy(const RainbowAgent& agent, const std::string& path);
/// FileError (missing), FormatError (not an autosync policy / other sizes).
std::unique_ptr<RainbowAgent> load_autosync_policy(const std::string& path);

}  // namespace placer
