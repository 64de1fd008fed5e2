#pragma once
// Pipeline-cut MDP over the simulator (Auto-MAP, Wang et al. 2020, "pipeline cuts"): an
// episode chooses the S - 1 stage cuts of an S-stage pipeline one at a time, in increasing
// order, among candidate pivots of the forward ops' topological order. The terminal step
// builds the pipeline Plan (stage s on device group s, replicated data-parallel when the
// group holds several devices, m micro-batches, 1F1B by default), simulates it and rewards
// reference_time / step_time (oom_penalty on OOM); intermediate steps reward 0.
//
// Positions: the forward ops that are not graph inputs (OpCategory::kInput), in
// Graph::topo_order(), are positions 0 .. F-1. A cut at position c puts positions < c in
// earlier stages. Every other op is attached to a position: input nodes (weights, data) to
// their earliest forward consumer; backward / optimizer ops to their Op::forward_op; the
// rest by the simulator's stage rule (latest predecessor, else earliest successor, else 0).
//
// Pivots: positions c in [1, F) whose op lies in another module than the op before it, where
// the module of an op is its scope up to the first numeric component ("encoder.layers.3" of
// "encoder.layers.3.self_attn"; the first component when none is numeric; an empty scope
// keeps the previous op's module). When fewer than S - 1 such boundaries exist (no scopes),
// every position 1 .. F-1 is a pivot.
//
// Pruning (options.prune): the center solution puts cut k at the pivot whose cumulative
// compute is closest to the balanced target (sum of the group sizes of the stages before k
// over all devices, times the total compute); only pivots within `prune_radius` pivots of a
// center cut are kept. Pivots with no parameter op before or after them are never kept.
// The action mask further requires a parameter op in every stage and room for the remaining
// cuts, so every masked-in action can be completed to a valid S-stage pipeline.
//
// RlEnv (env/rl_env.h): a flat float observation, an int action (a pivot index into the
// mask), the horizon S - 1; to_plan() is the plan of the episode's cuts once done.
//
// See docs/pipeline_env.md for the features and the reward. The env keeps references to the
// graph, cluster and cost model (as Simulator does): they must outlive it. Not copyable.
#include <cstdint>
#include <vector>

#include "env/rl_env.h"
#include "simulator/cost_model.h"
#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/plan/plan.h"

namespace placer {

struct PipelineEnvOptions {
  int stages = 2;         ///< S >= 2 pipeline stages
  int micro_batches = 0;  ///< m >= 1; 0 = 4 * S, capped by the batch per replica
  PipelineSchedule schedule = PipelineSchedule::k1F1B;  ///< of the simulated plan
  std::vector<int> devices;  ///< cluster devices in pipeline order; empty = all
  /// Explicit device group of every stage (S non-empty groups, no device twice); empty =
  /// split `devices` (see docs/pipeline_env.md). When set, `devices` must be empty or
  /// equal the groups' concatenation, which becomes the device list.
  std::vector<std::vector<int>> groups;
  double oom_penalty = -1;   ///< terminal reward of a plan that runs out of memory
  bool prune = true;         ///< keep only pivots near the center solution
  int prune_radius = 2;      ///< in pivots, around each center cut (>= 0)
  /// Cut k only within prune_radius pivots of center cut k (when such a pivot is legal),
  /// not anywhere in the union of the windows: with many stages the windows cover every
  /// pivot, and the episodes would range over any increasing cut set.
  bool prune_per_cut = false;
  bool use_scopes = true;    ///< pivots on module boundaries (false: every position)
  /// Scope components kept after the first numeric one in the module key (0: the layer,
  /// "encoder.layers.3"; 1: its sub-modules too, "encoder.layers.3.self_attn"). >= 0.
  int scope_depth = 0;
  /// Simulate at the terminal step (false: reward 0, for measuring the feature updates).
  bool simulate = true;
  double reference_time = 0;  ///< > 0: overrides the simulated center solution's time
};

/// Device groups and micro-batch count of a pipeline: what PipelineEnv::to_plan uses besides
/// the cuts (the env's own: layout()).
struct PipelineLayout {
  std::vector<std::vector<int>> groups;  ///< device group of every stage
  int micro_batches = 1;
};

/// Result of one PipelineEnv::step.
struct PipelineStepResult {
  double reward = 0;
  double step_time = 0;  ///< simulated seconds (terminal step only)
  bool oom = false;
  bool done = false;
};

class PipelineEnv final : public RlEnv<std::vector<float>, int, PipelineStepResult> {
 public:
  /// Features per pivot: S all-reduce times, max transfer time, balance ratio, taken flag.
  int features_per_pivot() const { return stages_ + 3; }

  /// Throws ValidationError on bad options (stages < 2, more stages than devices or than
  /// non-input forward ops, a device outside the cluster or listed twice, micro_batches < 0,
  /// negative radius, non-finite penalty, negative reference), an empty graph, or when no S-stage
  /// cut with a parameter op in every stage exists among the kept pivots. Simulates the
  /// center solution to set the reference time (unless options.reference_time > 0).
  PipelineEnv(const Graph& graph, const Cluster& cluster, const CostModel& cost,
              PipelineEnvOptions options = {});

  /// Starts a new episode (no cuts).
  void reset();
  /// The same (the episode has no random start: the seed is unused).
  void reset(uint64_t /*seed*/) override { reset(); }
  /// Takes pivot `pivot` as the next cut. Throws ValidationError when the mask forbids it
  /// and placer::Error after the episode is done.
  PipelineStepResult step(int pivot) override;
  int horizon() const override { return stages_ - 1; }

  /// num_pivots x features_per_pivot, row-major (see docs/pipeline_env.md).
  const std::vector<float>& observation() const override { return obs_; }
  /// Per pivot: 1 = a legal next cut.
  const std::vector<uint8_t>& action_mask() const override { return mask_; }
  /// Pivot indices taken so far (increasing).
  const std::vector<int>& cuts() const { return cuts_; }
  bool done() const override { return static_cast<int>(cuts_.size()) == stages_ - 1; }

  int num_stages() const { return stages_; }
  int num_pivots() const { return static_cast<int>(pivots_.size()); }
  /// Position (index into forward_order()) of every pivot, increasing.
  const std::vector<int>& pivots() const { return pivots_; }
  /// Per pivot: 1 = kept by pruning.
  const std::vector<uint8_t>& kept() const { return kept_; }
  /// The non-input forward ops in topological order (the positions).
  const std::vector<OpId>& forward_order() const { return fwd_; }
  /// Position every op is attached to (size num_ops).
  const std::vector<int>& position_of_op() const { return pos_of_op_; }
  /// The balanced center solution (S - 1 pivot indices).
  const std::vector<int>& center_solution() const { return center_; }
  /// Device group of every stage (contiguous slices of the device list).
  const std::vector<std::vector<int>>& device_groups() const { return groups_; }
  int micro_batches() const { return micro_batches_; }
  double reference_time() const { return reference_; }
  /// Estimated compute seconds (all ops attached) of positions [a, b) on the first device.
  double compute_between(int a, int b) const { return comp_[b] - comp_[a]; }
  /// The env's device groups and micro-batch count.
  PipelineLayout layout() const { return PipelineLayout{groups_, micro_batches_}; }

  // --- Layout search (device-group sizes and micro-batches for fixed cuts) ---------------

  /// Estimated bottleneck of cut set `cuts` on `groups` (contiguous or not): the largest
  /// per-mini-batch stage time (compute of the stage's batch-scaled ops / replicas + its
  /// once-per-step ops + the gradient all-reduce among the replicas) and cut transfer time
  /// (2 x activations / replicas of the receiving stage), as pipeline-dp's cost table. A
  /// stage whose first device has no copy engines (`overlap: false`) adds its cut in and its
  /// cut out (whole, to the device after its last in the device list) to its time.
  double estimate_bottleneck(const std::vector<int>& cuts,
                             const std::vector<std::vector<int>>& groups) const;
  /// Device-group sizes for fixed cuts: contiguous slices of the device list, stage 0 first,
  /// minimising estimate_bottleneck by dynamic programming over (stage, devices used); a
  /// stage may skip to the next host boundary, leaving devices idle (as pipeline-dp).
  /// O(S x N^2). Ties go to the slices that use fewer devices earlier.
  std::vector<std::vector<int>> best_groups(const std::vector<int>& cuts) const;
  /// Devices split over the stages in proportion to the stages' estimated compute (largest
  /// remainder, at least one each), contiguous in device-list order.
  std::vector<std::vector<int>> proportional_groups(const std::vector<int>& cuts) const;
  /// Micro-batch counts worth simulating on `groups`: 2, 4, 8, ... and S, 2S, 4S, 8S, all
  /// capped by the batch per replica of the largest group (deduplicated, increasing).
  std::vector<int> micro_batch_candidates(const std::vector<std::vector<int>>& groups) const;

  /// The plan of a complete cut set (S - 1 increasing pivot indices; pruning not required).
  /// Throws ValidationError on a wrong count, an unknown pivot or non-increasing cuts.
  Plan to_plan(const std::vector<int>& cuts) const;
  /// The plan of the episode's cuts; ValidationError before done.
  Plan to_plan() const override { return to_plan(cuts_); }
  /// The plan of a complete cut set on another layout (S groups of distinct cluster
  /// devices, micro_batches >= 1; ValidationError otherwise).
  Plan to_plan(const std::vector<int>& cuts, const PipelineLayout& layout) const;
  /// Simulates to_plan(cuts); reward as at the terminal step.
  PipelineStepResult evaluate(const std::vector<int>& cuts);
  /// Simulates to_plan(cuts, layout); reward reference_time / step time as above.
  PipelineStepResult evaluate(const std::vector<int>& cuts, const PipelineLayout& layout);

  const Graph& graph() const { return graph_; }
  const Cluster& cluster() const { return cluster_; }

 private:
  // Set-up steps, in the constructor's order.
  void check_options();
  void resolve_devices();
  void attach_positions();
  void sum_positions();
  void find_pivots();
  void split_devices();
  void choose_micro_batches();
  void place_center();
  void keep_pivots();
  void set_reference();

  void update_features();
  double transfer_time(int pivot, int cut_index) const;
  /// Activations and their gradients across cut s (bounds b) from device `from` to the
  /// stage starting at `to` with `replicas` replicas.
  double cut_transfer(const std::vector<int>& b, int s, int from, int to, size_t replicas) const;
  /// The device after `device` in the device list (itself when last).
  int next_device(int device) const;
  /// What stage s adds for its cut transfers when its first device has no copy engines
  /// (cluster key `overlap: false`; 0 otherwise): the cut in from `prev` (s > 0) and the
  /// cut out to `next` whole, one replica, as pipeline-dp counts it.
  double blocking_transfers(const std::vector<int>& b, int s, int prev, int first, int replicas,
                            int next) const;
  double stage_allreduce(int stage, double bytes) const;
  void check_cuts(const std::vector<int>& cuts) const;
  std::vector<int> bounds(const std::vector<int>& cuts) const;  // S + 1 positions

  const Graph& graph_;
  const Cluster& cluster_;
  const CostModel& cost_;
  PipelineEnvOptions options_;
  int stages_ = 2;
  int micro_batches_ = 1;
  Simulator sim_;

  std::vector<OpId> fwd_;
  std::vector<int> pos_of_op_;
  std::vector<std::vector<OpId>> fwd_ops_at_;  // forward ops (inputs too) per position
  // Prefix sums over positions (size F + 1).
  std::vector<double> comp_, grad_, cross_;
  std::vector<double> once_;  // compute of ops that do not scale with the batch
  std::vector<int> param_count_;
  std::vector<int> pivots_;
  std::vector<uint8_t> kept_;
  std::vector<int> max_more_;  // per pivot: most further cuts (-1 = tail without params)
  int max_from_start_ = -1;
  std::vector<int> center_;
  std::vector<std::vector<int>> groups_;
  std::vector<CollectiveGroup> coll_groups_;
  std::vector<int> group_prefix_;  // devices before stage s
  double reference_ = 0;

  // Episode state.
  std::vector<int> cuts_;
  std::vector<float> obs_;
  std::vector<uint8_t> mask_;
  std::vector<double> fixed_allreduce_;  // per closed stage
  double fixed_min_comp_ = 0, fixed_max_comp_ = 0, fixed_max_transfer_ = 0;
};

}  // namespace placer
