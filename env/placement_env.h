#pragma once
// One-shot placement MDP over the simulator (GDP, Zhou et al. 2019): the observation is the
// graph's node features, the action a device for every colocation unit at once, the reward
// -sqrt(step_time / reference) from one simulated training step; an OOM placement gets
// oom_penalty instead. Every episode has one step (done = true).
//
// Reference: the best of the single-device times over the allowed devices (OOM runs
// excluded; when all OOM, the fastest of them anyway) and, when given, a baseline time (e.g.
// a classical placer's), so the single-device / best-baseline placement scores exactly -1
// and rewards are comparable across graphs.
//
// Units: with colocate, a unit is a forward op's colocation group (Op::group) or the forward
// op alone, and backward / optimizer ops follow their forward op (Op::forward_op), as in
// agents' anneal; without, one unit per op.
//
// RlEnv (env/rl_env.h): the observation is the NodeFeatures, the action one device per unit
// (action_heads() = num_units rows of the mask), the horizon 1; reset() only marks a new
// episode (the step does not depend on it: step() may be called again without one).
//
// The env keeps references to the graph, cluster and cost model (as Simulator does): they
// must outlive it. Not copyable (it owns a Simulator).
#include <cstdint>
#include <functional>
#include <vector>

#include "env/features.h"
#include "env/rl_env.h"
#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/plan/plan.h"
#include "src/plan/plan_frame.h"

namespace placer {

class CostModel;

struct PlacementEnvOptions {
  double oom_penalty = -10;   ///< reward of a placement that runs out of memory
  int max_devices = 8;        ///< width of the action mask (the policy's device softmax)
  std::vector<int> devices;   ///< allowed cluster devices; empty = 0 .. min(n, max) - 1
  bool colocate = true;       ///< act on colocation units (forward op + grads + update)
  double baseline_time = 0;   ///< > 0: reference = min(single-device best, this)
  /// step() simulates the placement inside this frame (micro-batches, replicas); the
  /// reference stays the single-device step (src/plan/plan_frame.h).
  PlanFrame frame;
  /// When set, step() scores a placement (a plain plan: placement only, no frame) with this
  /// in place of simulating it, e.g. as the pipeline it reads as (`gdp+stages`); a
  /// placer::Error it throws scores as out of memory. The reference is unchanged.
  std::function<SimResult(const Plan& placement)> score;
  FeatureOptions features;
};

struct StepResult {
  double reward = 0;
  double step_time = 0;  ///< simulated seconds
  bool oom = false;
  bool done = true;
};

class PlacementEnv final : public RlEnv<NodeFeatures, std::vector<int>, StepResult> {
 public:
  /// Throws ValidationError on an allowed device outside the cluster or >= max_devices, or
  /// an empty graph. Runs one simulation per allowed device to set the reference.
  PlacementEnv(const Graph& graph, const Cluster& cluster, const CostModel& cost,
               PlacementEnvOptions options = {});

  const NodeFeatures& observation() const override { return features_; }
  int num_units() const { return num_units_; }
  int max_devices() const { return options_.max_devices; }
  /// Unit of every op (size num_ops).
  const std::vector<int>& unit_of_op() const { return unit_of_op_; }
  /// num_units x max_devices, row-major: 1 = the unit may go to that device.
  const std::vector<uint8_t>& action_mask() const override { return mask_; }
  int action_heads() const override { return num_units_; }
  const std::vector<int>& allowed_devices() const { return options_.devices; }

  /// Simulates the placement (a cluster device per unit). Throws placer::Error
  /// (ValidationError) on a wrong size or a device the mask forbids.
  StepResult step(const std::vector<int>& device_per_unit) override;
  /// Starts an episode (the seed is unused: the env has no random start).
  void reset(uint64_t /*seed*/) override { last_.clear(); }
  /// Whether a step was taken since the last reset().
  bool done() const override { return !last_.empty(); }
  int horizon() const override { return 1; }

  double reference_time() const { return reference_; }
  /// Overrides the reference (must be finite and > 0).
  void set_reference(double seconds);
  /// Per-allowed-device single-device step times and OOM flags (same order as devices).
  const std::vector<double>& single_device_times() const { return single_times_; }
  const std::vector<bool>& single_device_oom() const { return single_oom_; }

  /// The placement as a Plan (method "env"); throws like step() on a bad action.
  Plan to_plan(const std::vector<int>& device_per_unit) const;
  /// The plan of the last step's action; ValidationError before a step.
  Plan to_plan() const override;

  const Graph& graph() const { return graph_; }
  const Cluster& cluster() const { return cluster_; }

 private:
  void check_action(const std::vector<int>& device_per_unit) const;

  const Graph& graph_;
  const Cluster& cluster_;
  PlacementEnvOptions options_;
  NodeFeatures features_;
  std::vector<int> unit_of_op_;
  int num_units_ = 0;
  std::vector<uint8_t> mask_;
  std::vector<uint8_t> allowed_;  // per device id < max_devices
  Simulator sim_;
  Plan plan_;  // reused by step()
  double reference_ = 0;
  std::vector<double> single_times_;
  std::vector<bool> single_oom_;
  std::vector<int> last_;  // the last step's action (empty: none since reset)
};

}  // namespace placer
