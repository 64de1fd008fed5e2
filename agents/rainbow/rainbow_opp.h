#pragma once
// The "rainbow-opp" and "rainbow-adp" placers: Auto-MAP's operator-partitioning and
// auto-data-parallelism searches (Wang et al. 2020, 4.2 and 4.3). A Rainbow DQN agent
// (agents/common/rainbow_agent.h) is trained online on the problem's own graph in the OppEnv MDP
// (env/opp_env.h); the conflict-free state with the lowest simulated step time seen in any
// episode (the all-replicated start included) is returned as the env's sharding plan.
// Torch-free header: the implementation (agents/rainbow/rainbow_opp.cpp) needs LibTorch; without it
// the entry points throw and neither method is registered. See docs/rainbow.md.

#include <cstdint>
#include <memory>
#include <vector>

#include "agents/api/placer.h"
#include "agents/common/rainbow_config.h"
#include "env/opp_env.h"
#include "env/sharding.h"
#include "src/plan/plan.h"

namespace placer {

/// The agent options of the rainbow-opp / rainbow-adp searches (Auto-MAP where the paper
/// gives a value): Adam lr 5e-4 (the paper's "smaller" than the pipelines' 1e-3), epsilon
/// 1 -> 0.1 over 2000 agent steps (OPP) or 500 (ADP), replay 2000, batch 64, target sync
/// 100, epsilon-greedy (noise off); gamma 1: episodes are finite and the simulator reward
/// telescopes, so the undiscounted return is exactly the final improvement 1 - T / T_ref
/// (a discount would favour plans whose gains come from the first decisions of the linkage
/// order, which says nothing about their quality); n-step 1, not Rainbow's 3: n-step
/// targets follow the exploring policy, and on a transformer one random split among the
/// dozens of replicate decisions that come first in the linkage order ends the episode
/// with a conflict (-1), so 3-step targets rated "replicate" below the immediate -0.78 of
/// splitting the hidden dim everywhere and the agent never got past the first decision
/// (bench/opp_expectations, transformer_enc6_d512). The C51 support is set from the reward
/// at search time unless RainbowOppOptions::auto_support is off.
inline RainbowConfig rainbow_opp_agent_defaults(OppEnvOptions::Task task) {
  RainbowConfig c;
  c.lr = 5e-4;
  c.gamma = 1.0;
  c.n_step = 1;
  c.epsilon_decay_steps = task == OppEnvOptions::Task::kDataParallel ? 500 : 2000;
  return c;
}

/// Options of the rainbow-opp / rainbow-adp placers. The agent's seed comes from
/// SearchBudget::seed.
struct RainbowOppOptions {
  /// The MDP: task (OPP / ADP), reward, degree (0 = every device of the problem), linkage.
  OppEnvOptions env;
  /// Training episodes (a greedy evaluation episode follows); budget.max_evaluations > 0
  /// stops once the env has run that many simulations, budget.max_seconds once that much
  /// wall-clock time has passed (both checked after every env step).
  int episodes = 300;
  /// Agent options (rainbow_opp_agent_defaults of env.task by default; seed ignored).
  RainbowConfig agent = rainbow_opp_agent_defaults(OppEnvOptions::Task::kOperatorPartitioning);
  /// Exploration from a greedy prefix: each training episode follows the greedy policy for
  /// its first j steps, j uniform in [0, the longest episode so far], and is epsilon-greedy
  /// after that. On transformers the decisions with the largest linkage groups (splitting the
  /// hidden dim everywhere: a slow plan or a conflict) come first, dozens of them, so plain
  /// epsilon-greedy episodes almost never survive to the Megatron decisions behind them;
  /// once the agent has learnt to replicate those, greedy prefixes carry the exploration
  /// past them. Off: plain epsilon-greedy (Auto-MAP).
  bool greedy_prefix = true;
  /// Sets agent.v_min / v_max from the reward: simulator [min(conflict, oom) - 0.2, 1]
  /// (support mean -0.1 with the defaults: optimistic against splits that cost > 10 %),
  /// paper [min(conflict, 0) - 0.1, max(partition, replicate reward) x slots + 0.1].
  bool auto_support = true;
};

/// Defaults for `task` (env.task and agent set accordingly).
inline RainbowOppOptions rainbow_opp_defaults(OppEnvOptions::Task task) {
  RainbowOppOptions o;
  o.env.task = task;
  o.agent = rainbow_opp_agent_defaults(task);
  return o;
}

/// What a search found (rainbow_opp_search).
struct RainbowOppReport {
  // The returned state: the conflict-free state with the lowest simulated step time.
  std::vector<int> actions;       ///< env actions from reset() that reach it
  std::vector<int8_t> decisions;  ///< its decision vector (slot order, 1 / 0 / -1)
  PropagationResult propagation;  ///< its shardings (variables, inputs, tensors)
  double step_time = 0;           ///< simulated (+inf when every state seen ran out of memory)
  double reference_time = 0;      ///< the all-replicated plan (every op on one device)
  int64_t found_episode = 0;      ///< episode (0-based) in which it was first reached
  double found_seconds = 0;       ///< seconds from the start of the search until then
  // What the episode return alone would pick: the final state of the episode with the
  // highest return under the env's reward (with the paper's reward this is Auto-MAP's pick).
  double best_return = 0;
  std::vector<int8_t> return_decisions;
  PropagationResult return_propagation;
  double return_step_time = 0;
  // The greedy evaluation episode after training.
  std::vector<int8_t> greedy_decisions;
  double greedy_return = 0;
  double greedy_step_time = 0;
  // Effort.
  int64_t episodes = 0;     ///< training episodes run (the greedy one not counted)
  int64_t simulations = 0;  ///< OppEnv::simulations() at the end
  double seconds = 0;       ///< whole search
  /// OppEnv::plan() of the returned state, mapped onto the problem's devices, method set.
  Plan plan;
};

/// Runs the search on `problem` (a training-step graph; ValidationError otherwise, on a
/// degree outside [2, problem devices], bad episodes or a bad agent config) and reports.
/// Throws placer::Error without LibTorch.
RainbowOppReport rainbow_opp_search(const Problem& problem, const SearchBudget& budget,
                                    const RainbowOppOptions& options);

/// The placer: "rainbow-opp" (operator partitioning) or "rainbow-adp" (data parallel), by
/// options.env.task; search() returns rainbow_opp_search(...).plan. Throws placer::Error
/// without LibTorch.
std::unique_ptr<Placer> make_rainbow_opp_placer(const RainbowOppOptions& options = {});
/// The options of rainbow-opp / rainbow-adp: the placer's keys, then every RainbowConfig
/// option of its agent (seed refused: --seed). agents/rainbow/rainbow_opp_options.cpp.
const OptionTable<RainbowOppOptions>& rainbow_opp_option_table();

}  // namespace placer
