#pragma once
// Auto-MAP's operator-partitioning (OPP) and auto-data-parallelism (ADP) MDPs (Wang et al.
// 2020, 4.2 and 4.3) over ShardingPropagator (env/sharding.h) and the simulator.
//
// State: the decision vector over every slot (OPP: every dim of every trainable variable;
// ADP: every dim of every data input), 1 partition / 0 replicate / -1 undecided, in slot
// order, plus the current position (one-hot over the decision order, and its fraction).
// Action: 1 = partition the current slot across all k devices, 0 = replicate it.
// Order: with linkage groups (default), slots sorted by the size of their larger linkage
// group, descending (ties: slot order); taking a decision also applies its linkage group's
// consequences, and positions already decided are skipped. Without: slot order, one slot
// per step. With tie_layers, a step decides the slot in every layer at once. After each step
// the whole decision vector is propagated; a conflict ends the episode.
//
// Rewards (options.reward):
//  - kSimulator (default): the change in simulated step time of the current plan
//    (sharding_plan of the propagation, undecided = replicated), (T_prev - T_now) / T_ref
//    with T_ref the all-replicated plan; so an episode's return is 1 - T_final / T_ref. OOM
//    counts as oom_penalty for that step; a conflict gives conflict_reward and ends.
//  - kPaper: +partition_reward per slot newly set to 1 and +replicate_reward per slot newly
//    set to 0 by the step (its linkage consequences included), conflict_reward on conflict.
// RlEnv (env/rl_env.h): a flat float observation, an int action (0 / 1), the horizon
// slots().size() (every step decides at least one slot); to_plan() is plan().
// The env keeps references to the graph, cluster and cost model. Not copyable.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "env/rl_env.h"
#include "env/sharding.h"
#include "simulator/cost_model.h"
#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/plan/plan.h"

namespace placer {

struct OppEnvOptions {
  enum class Task : uint8_t { kOperatorPartitioning, kDataParallel };
  enum class Reward : uint8_t { kSimulator, kPaper };
  Task task = Task::kOperatorPartitioning;
  Reward reward = Reward::kSimulator;
  int degree = 0;        ///< devices 0 .. degree-1 (>= 2); 0 = every device of the cluster
  bool linkage = true;   ///< linkage-group ordering and consequences
  /// One decision for the same (variable, dim) of every layer: slots whose owning ops have a
  /// layer index (Op::layer >= 0) and names that differ only in it are decided together
  /// (each with its linkage consequences), so an episode decides one block. Off: Auto-MAP.
  bool tie_layers = false;
  /// kSimulator: score a plan by its step time even when it runs out of memory (for callers
  /// that fit memory afterwards with micro-batches, pipelining or ZeRO). Off: OOM = +inf.
  bool ignore_memory = false;
  /// mask() forbids an action whose linkage consequences (and tied slots) contradict the
  /// decisions so far or conflict by themselves (known without a propagation); both stay
  /// allowed when both conflict. Off: both always allowed (Auto-MAP).
  bool mask_conflicts = false;
  double partition_reward = 0.4;  ///< kPaper (Auto-MAP)
  double replicate_reward = 0.1;  ///< kPaper (Auto-MAP)
  double conflict_reward = -1.0;  ///< both rewards (Auto-MAP: -1)
  double oom_penalty = -1.0;      ///< kSimulator: reward of a step whose plan runs out of memory
};

/// "simulator" / "paper"; false on anything else.
bool parse_opp_reward(const std::string& s, OppEnvOptions::Reward* out);

/// Result of one OppEnv::step.
struct OppStepResult {
  double reward = 0;
  bool done = false;
  bool conflict = false;
  int decided = 0;  ///< slots set by the step (1 + linkage consequences not yet decided)
};

class OppEnv final : public RlEnv<std::vector<float>, int, OppStepResult> {
 public:
  /// ValidationError on degree < 2 or > devices, or a graph without slots.
  OppEnv(const Graph& g, const Cluster& cluster, const CostModel& cost,
         const OppEnvOptions& options = {});
  ~OppEnv();
  OppEnv(const OppEnv&) = delete;
  OppEnv& operator=(const OppEnv&) = delete;

  const OppEnvOptions& options() const;
  const ShardingPropagator& propagator() const;
  /// The slots of the task (variable or input slots of the propagator).
  const std::vector<ShardSlot>& slots() const;
  /// Decision order: slot indices, each once.
  const std::vector<int>& order() const;
  /// Two per slot (decision 1, then 0); empty without options.linkage.
  const std::vector<LinkageGroup>& linkage() const;

  int state_dim() const;               ///< 2 * slots + 1
  static constexpr int kNumActions = 2;  ///< 0 replicate, 1 partition

  /// Starts an episode: every slot undecided, position at the first of order().
  void reset();
  /// The same (the episode has no random start: the seed is unused).
  void reset(uint64_t /*seed*/) override { reset(); }
  /// Decision vector (slot order, values 1 / 0 / -1), then one-hot position over order()
  /// (all zero when done), then position / order().size().
  const std::vector<float>& observation() const override { return obs_; }
  /// {1, 1} (both actions allowed) unless options.mask_conflicts.
  const std::vector<uint8_t>& action_mask() const override { return mask_; }
  /// action_mask() (its older name).
  const std::vector<uint8_t>& mask() const { return mask_; }
  bool done() const override;
  /// The slot to decide next (an index into slots()); -1 when done.
  int current_slot() const;

  using StepResult = OppStepResult;
  /// Decides the current slot (ValidationError when done or action not 0/1).
  StepResult step(int action) override;
  int horizon() const override { return static_cast<int>(slots().size()); }

  /// Per slot, slot order.
  const std::vector<int8_t>& decisions() const;
  /// Propagation of the current decisions (before the conflicting step if it conflicted).
  const PropagationResult& propagation() const;
  /// sharding_plan of propagation() on devices 0 .. degree-1, simulated (predicted filled).
  Plan plan() const;
  Plan to_plan() const override { return plan(); }
  /// Simulated step time of plan() (+inf on OOM); computed once per state.
  double step_time() const;
  /// Step time of the all-replicated plan (every op on device 0).
  double reference_time() const;
  /// Simulations run so far (plans are cached by their decision vector).
  int64_t simulations() const;

 private:
  StepResult decide(int action);
  void refresh();  // obs_ and mask_ of the current state

  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<float> obs_;
  std::vector<uint8_t> mask_;
};

}  // namespace placer
