#pragma once
// The "rainbow-pp" placer: Auto-MAP's pipeline-cut search (Wang et al. 2020). A Rainbow DQN
// agent (agents/common/rainbow_agent.h) is trained online on the problem's own graph in the
// PipelineEnv MDP (env/pipeline_env.h); the best pipeline seen in any episode (or the
// env's balanced center solution when nothing beats it) is returned. Torch-free header:
// the implementation (agents/rainbow/rainbow_pp.cpp) needs LibTorch; without it
// make_rainbow_pp_placer throws and "rainbow-pp" is not registered. See docs/rainbow.md.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "agents/common/option_table.h"

namespace placer {

/// Options of the rainbow-pp placer. The agent's seed comes from SearchBudget::seed, its
/// n-step length is stages - 1 (one episode) and gamma is 1 (the reward is terminal).
struct RainbowPPOptions {
  int stages = 0;         ///< pipeline stages S >= 2; 0 = min(4, number of devices)
  int micro_batches = 0;  ///< 0 = PipelineEnv's default (4 S, capped by the batch)
  /// Distinct cut sets to simulate (at most 4x as many episodes run; repeats are cached);
  /// budget.max_evaluations > 0 overrides it.
  int episodes = 300;
  bool prune = true;     ///< PipelineEnvOptions::prune
  /// PipelineEnvOptions::scope_depth; -1 = auto: 1 (sub-module pivots) when the layer-level
  /// pivots number fewer than 4 x stages and depth 1 gives more, else 0.
  int scope_depth = -1;
  int prune_radius = 2;  ///< PipelineEnvOptions::prune_radius
  /// Epsilon 1 -> 0.1 over this fraction of `episodes` x (stages - 1) agent steps.
  double epsilon_decay_fraction = 0.6;
  /// Layout search: after each round of episodes, the best cut sets of the round are
  /// simulated on other device groups (PipelineEnv::best_groups, proportional_groups, the
  /// env's own) and micro-batch counts (PipelineEnv::micro_batch_candidates); the next round's
  /// env uses the best layout found so far, so the agent picks cuts for it. false = cuts
  /// only, on the env's equal groups and default micro-batches (the original Auto-MAP MDP).
  bool search_layout = true;
  int layout_rounds = 2;  ///< rounds of episodes (episodes split evenly) when search_layout
  int layout_top = 4;     ///< cut sets per layout search (the round's best, distinct)
  int64_t batch_size = 32;                ///< replay batch
  int64_t replay_capacity = 2000;         ///< transitions
  int64_t target_update = 100;            ///< learn() updates between target syncs
  double lr = 1e-3;                       ///< Adam learning rate
  std::vector<int64_t> hidden{128, 128};  ///< MLP torso widths
};

/// The rainbow-pp placer with `options`. Throws placer::Error without LibTorch.
std::unique_ptr<Placer> make_rainbow_pp_placer(const RainbowPPOptions& options = {});
/// The online search's options (agents/rainbow/rainbow_pp_options.cpp).
const OptionTable<RainbowPPOptions>& rainbow_pp_option_table();

/// The `rainbow-pp` method's options: the online search's, or a pretrained pipeline-cut
/// policy placed zero-shot (`policy`, with `samples` cut sets sampled besides the greedy one).
struct RainbowPPMethodOptions {
  RainbowPPOptions search;
  std::string policy;  ///< "" = the online search
  int samples = 16;    ///< with a policy
};
/// Its table: the search's keys, then policy and samples.
const OptionTable<RainbowPPMethodOptions>& rainbow_pp_method_option_table();
/// The placer of `o`: the online search, or the policy's (FileError naming a missing policy;
/// ValidationError for samples without a policy, or search options with one).
std::unique_ptr<Placer> make_rainbow_pp_method(const RainbowPPMethodOptions& o);

}  // namespace placer
