#pragma once
// The MDP of the learned per-variable synchronisation search (`autosync`, after AutoSync,
// Zhang et al. 2020, "AutoSync: Learning to Synchronize for Data-Parallel Distributed Deep
// Learning"). Torch-free: agents/sync/rainbow_autosync.cpp drives it with the Rainbow DQN.
//
// An episode walks the units in a fixed order: the `max_units` largest variables one by one
// (by parameter bytes, ties by op id), then, when variables are left, one unit for all the
// others (the plan's default strategy). At each unit the agent picks one action of a fixed
// set of kNumActions = synchronizer x compressor x staleness:
//  - synchronizer (kSynchronizers): ring all-reduce, hierarchical all-reduce, the PS sharded
//    over every server (one per host) with / without local aggregation, the PS whole on
//    server k (k = 0..3, the first device of host k), all-gather (sparse variables only),
//    sufficient-factor broadcasting (FC layers where the factors are smaller, only);
//  - compressor (kCompressors): none, fp16, PowerSGD rank 4, top-k 1 % -- all but none only
//    with allow_compression, on float variables, not with SFB (PowerSGD not on all-gather);
//  - staleness 0..kMaxStaleness, only up to max_staleness.
// The mask says which actions are allowed. The reward is 0 until the last unit, then
// clamp(log(T_ref / T), -1, 1): T the simulated step of the plan the decisions make (an
// OOM plan counts as reward -1), T_ref the best of the four strategy builders (horovod, ps,
// parallax, poseidon), simulated once at construction. Undiscounted, the return is the
// final log-speedup over the best builder.
//
// The observation (kStateDim floats) describes the unit (bytes, share of the model's bytes,
// sparse rows ratio, consumer compute, position), the cluster (bandwidths, hosts, workers,
// how network-bound the model is) and the decisions so far (share of bytes per synchronizer
// kind / server, compressed, stale): nothing graph-specific, so a policy transfers.
//
// RlEnv (env/rl_env.h): a flat float observation, an int action (an index into the
// kNumActions-wide mask), the horizon units(); to_plan() is plan().

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "env/rl_env.h"

namespace placer {

struct SyncEnvOptions {
  int max_units = 31;              ///< variables decided one by one (the rest: one unit)
  bool allow_compression = false;  ///< compressors other than none
  int max_staleness = 0;           ///< staleness actions 1..min(this, kMaxStaleness)
};

/// Result of one SyncEnv::step.
struct SyncStepResult {
  double reward = 0;
  bool done = false;
};

class SyncEnv final : public RlEnv<std::vector<float>, int, SyncStepResult> {
 public:
  static constexpr int kSynchronizers = 10;
  static constexpr int kCompressors = 4;
  static constexpr int kMaxStaleness = 2;
  static constexpr int kNumActions = kSynchronizers * kCompressors * (kMaxStaleness + 1);
  static constexpr int kUnitFeatures = 12;
  static constexpr int kClusterFeatures = 6;
  static constexpr int kContextFeatures = 10;
  static constexpr int kStateDim = kUnitFeatures + kClusterFeatures + kContextFeatures;

  /// The problem must be a training step with >= 2 devices and >= 1 variable; max_units
  /// >= 1, max_staleness >= 0 (ValidationError "autosync: ..." otherwise). Runs the four
  /// builders once for the reference (4 simulations, counted).
  SyncEnv(const Problem& p, const SyncEnvOptions& o);

  void reset();
  /// The same (the episode has no random start: the seed is unused).
  void reset(uint64_t /*seed*/) override { reset(); }
  bool done() const override { return unit_ >= units(); }
  /// The current unit's features (all zero features of the unit once done).
  const std::vector<float>& observation() const override { return obs_; }
  /// Allowed actions at the current unit (all 0 once done).
  const std::vector<uint8_t>& action_mask() const override { return mask_; }
  /// action_mask() (its older name).
  const std::vector<uint8_t>& mask() const { return mask_; }
  using StepResult = SyncStepResult;
  /// Decides the current unit. ValidationError on a masked action or after the end. The
  /// last unit simulates the plan (one simulation).
  StepResult step(int action) override;
  int horizon() const override { return units(); }

  /// Units: the variables decided one by one, then the rest (if any).
  int units() const { return static_cast<int>(vars_.size()) + (rest_.empty() ? 0 : 1); }
  /// Variables of unit i (one, or the rest).
  std::vector<OpId> unit_variables(int i) const;
  /// The section the decisions so far make (undecided units: ring all-reduce).
  SynchronizationConfig config() const { return config_of(actions_); }
  /// The section of an episode's actions (one per unit from the first; no simulation).
  SynchronizationConfig config_of(const std::vector<int>& actions) const;
  /// The decisions so far (one action per decided unit).
  const std::vector<int>& actions() const { return actions_; }
  /// The replicated plan with config().
  Plan plan() const;
  Plan to_plan() const override { return plan(); }
  /// Simulated step of the plan of the last finished episode (+inf for OOM).
  double step_time() const { return step_time_; }
  /// The best builder's step time and its section.
  double reference_time() const { return ref_time_; }
  const SynchronizationConfig& reference_config() const { return ref_config_; }
  /// The best builder's section as one action per unit (a strategy outside the action set
  /// maps to the nearest one: tree -> ring, a PS on other destinations -> the sharded PS;
  /// the rest unit takes the builder's default): a demonstration episode.
  std::vector<int> reference_actions() const;
  /// Simulator runs so far (the 4 builder runs included).
  int64_t simulations() const { return sims_; }
  /// Simulates a section on the problem's replicated plan (+inf for OOM; counted);
  /// `sync_free_step`: the step with the gradient sync free.
  double simulate(const SynchronizationConfig& s, double* sync_free_step = nullptr);

  /// Decodes an action into its strategy on `servers` (the PS server devices).
  static VariableSync action_strategy(int action, const std::vector<int>& servers);
  /// "ps-sharded+fp16+s1" and the like.
  static std::string action_name(int action);
  static int action_of(int synchronizer, int compressor, int staleness) {
    return (synchronizer * kCompressors + compressor) * (kMaxStaleness + 1) + staleness;
  }

 private:
  struct Bandwidths {
    double intra = 0, inter = 0;  ///< bytes/s
  };
  // Set-up steps, in the constructor's order.
  void check_and_split_units();
  double simulate_reference();
  static Bandwidths bandwidths(const Cluster& cluster, const std::vector<int>& devs);
  void describe_units(double compute, double inter);
  void describe_cluster(const std::vector<int>& devs, double compute, const Bandwidths& bw);

  bool allowed(int unit, int action) const;
  void refresh();  // obs_ and mask_ of the current state

  const Problem& p_;
  SyncEnvOptions o_;
  Plan base_;                 // replicated plan (synchronization enabled)
  std::vector<int> servers_;  // one per host
  int replicas_ = 0;
  std::vector<OpId> vars_;  // units decided one by one, largest first
  std::vector<OpId> rest_;  // the others (the default)
  std::vector<std::array<float, kUnitFeatures>> unit_features_;
  std::array<float, kClusterFeatures> cluster_features_{};
  std::vector<uint8_t> sparse_, sfb_, float_;  // per unit
  std::vector<double> unit_bytes_;
  double total_bytes_ = 0;
  SynchronizationConfig ref_config_;
  double ref_time_ = 0;
  int unit_ = 0;
  std::vector<int> actions_;
  double step_time_ = 0;
  int64_t sims_ = 0;
  std::vector<float> obs_;
  std::vector<uint8_t> mask_;
};

}  // namespace placer
