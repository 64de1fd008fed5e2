#pragma once
// Placeto's iterative placement MDP (Addanki et al. 2019, "Placeto: Learning Generalizable
// Device Placement Algorithms for Distributed Machine Learning") over the simulator.
//
// The nodes of the MDP are groups of ops (a group's ops share a device; the placer passes
// coarsening groups, see docs/coarsening.md). An episode starts from an arbitrary placement
// (seeded random, or everything on the first allowed device, or a given one), then visits
// every group exactly once in a fixed order (the groups' topological order); at step t the
// action is the device of the current group order()[t]. The state is the graph with per-
// group features: estimated runtime, bytes output to other groups, resident memory (an
// addition to the paper's features; the memory penalty depends on it), the current device
// (one-hot over max_devices), a visited flag and a current-node flag.
//
// Cost of a placement: p(s) = step_time / reference + memory_penalty * max(0, u -
// memory_threshold), u = the largest peak memory / capacity over the devices; reference =
// the best single-device step time over the allowed devices (OOM runs excluded unless all
// OOM), so costs compare across graphs. Rewards:
//   - kIntermediate: r_t = p(s_{t-1}) - p(s_t) (the improvement made by step t), so the
//     rewards of an episode sum to p(s_0) - p(s_T);
//   - kFinal: r_t = 0 before the last step, r_T = -p(s_T).
// The simulator runs only when a cost is needed and the placement changed (an action that
// keeps the group's device costs nothing; kFinal simulates only the last state and, for
// the reported start, nothing).
//
// Group graph (for the embedding): an edge g -> h for every op edge a -> b with a in g,
// b in h, g != h, both ops forward (all ops when the graph is not a training step: the
// backward edges run the other way), kept only when g comes before h in the groups' order
// (ordered by their first op in Graph::topo_order()), so it is always a DAG.
// relation(v, u): 0 = u is v, 1 = u is an ancestor (parent side), 2 = u is a descendant
// (child side), 3 = parallel (neither).
//
// The env keeps references to the graph, cluster and cost model (as Simulator does): they
// must outlive it. Not copyable (it owns a Simulator). Deterministic: reset(seed) draws the
// random start from std::mt19937_64(seed).
//
// RlEnv (env/rl_env.h): a flat float observation, an int action (a cluster device, an index
// into the max_devices-wide mask), the horizon num_nodes(); to_plan() is the current
// placement's plan.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "env/rl_env.h"
#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/plan/plan.h"
#include "src/plan/plan_frame.h"

namespace placer {

class CostModel;

enum class PlacetoReward : uint8_t { kIntermediate, kFinal };
enum class PlacetoStart : uint8_t { kRandom, kSingle };
const char* to_string(PlacetoReward r);
const char* to_string(PlacetoStart s);
/// "intermediate" / "final"; false for anything else.
bool parse_placeto_reward(const std::string& s, PlacetoReward* out);
/// "random" / "single"; false for anything else.
bool parse_placeto_start(const std::string& s, PlacetoStart* out);

struct PlacetoEnvOptions {
  std::vector<int> devices;  ///< allowed cluster devices; empty = 0 .. min(n, max) - 1
  int max_devices = 8;       ///< width of the device one-hot and of the action mask
  PlacetoReward reward = PlacetoReward::kIntermediate;
  PlacetoStart start = PlacetoStart::kRandom;
  double memory_threshold = 0.9;  ///< fraction of a device's capacity
  double memory_penalty = 10;     ///< cost per unit of peak-memory fraction above the threshold
  /// evaluate() simulates the placement inside this frame (micro-batches, replicas); the
  /// reference stays the single-device step (src/plan/plan_frame.h), as in PlacementEnv.
  PlanFrame frame;
};

/// Column layout of a node's feature row.
namespace placeto_feat {
// The three static columns are z-scores over the graph's groups of log1p(value / mean
// value) (a column whose values are all equal is 0), so they do not depend on the graph's
// scale.
inline constexpr int kRuntime = 0;   ///< estimated runtime on the first allowed device
inline constexpr int kOutBytes = 1;  ///< bytes of the tensors read by other groups
inline constexpr int kMemory = 2;    ///< resident bytes (parameters, their gradients, state)
inline constexpr int kDevice = 3;    ///< one-hot current device (max_devices columns)
/// Then visited (1 once the node was acted on this episode), current (1 for the node to
/// place now). dim = kDevice + max_devices + 2.
inline constexpr int dim(int max_devices) { return kDevice + max_devices + 2; }
}  // namespace placeto_feat

struct PlacetoStepResult {
  double reward = 0;
  double cost = 0;       ///< p(s_t) when known (always with kIntermediate; kFinal: at the end)
  double step_time = 0;  ///< simulated seconds of s_t when known
  bool oom = false;
  bool done = false;
  bool simulated = false;  ///< this step ran the simulator
};

class PlacetoEnv final : public RlEnv<std::vector<float>, int, PlacetoStepResult> {
 public:
  /// group_of_op: a group id (0 .. G - 1, every id used) per op of `graph`. Throws
  /// ValidationError on a wrong size, an unused or negative group id, an allowed device
  /// outside the cluster or >= max_devices, or an empty graph. Runs one simulation per
  /// allowed device to set the reference.
  PlacetoEnv(const Graph& graph, const Cluster& cluster, const CostModel& cost,
             std::vector<int> group_of_op, PlacetoEnvOptions options = {});

  int num_nodes() const { return num_nodes_; }
  int max_devices() const { return options_.max_devices; }
  int feature_dim() const { return placeto_feat::dim(options_.max_devices); }
  const PlacetoEnvOptions& options() const { return options_; }
  const std::vector<int>& allowed_devices() const { return options_.devices; }
  const std::vector<int>& group_of_op() const { return group_of_op_; }
  /// Visiting order (every node once): the groups' topological order.
  const std::vector<int>& order() const { return order_; }
  /// Group DAG in CSR form: parents / children of node v in [off[v], off[v + 1]).
  const std::vector<int>& parent_offsets() const { return par_off_; }
  const std::vector<int>& parents() const { return par_idx_; }
  const std::vector<int>& child_offsets() const { return chi_off_; }
  const std::vector<int>& children() const { return chi_idx_; }
  /// num_nodes x num_nodes row-major, see the file comment (0 self, 1 ancestor, 2
  /// descendant, 3 parallel).
  const std::vector<uint8_t>& relation() const { return relation_; }
  /// max_devices entries: 1 where the device may be chosen (the same for every node).
  const std::vector<uint8_t>& action_mask() const override { return mask_; }
  /// Static per-node features (runtime, out bytes, memory), num_nodes x 3.
  const std::vector<float>& static_features() const { return static_; }

  /// Starts an episode from options().start (kRandom draws a uniform allowed device per
  /// node with std::mt19937_64(seed)). With kIntermediate the start is simulated (unless
  /// it is the cached single-device placement).
  void reset(uint64_t seed) override;
  /// Starts an episode from a given cluster device per node (each allowed).
  void reset_to(const std::vector<int>& device_per_node);

  bool done() const override { return step_ >= num_nodes_; }
  /// The node to place now (order()[t]); -1 when done.
  int current_node() const { return done() ? -1 : order_[size_t(step_)]; }
  int step_index() const { return step_; }
  /// num_nodes x feature_dim row-major floats of the current state.
  const std::vector<float>& observation() const override { return obs_; }
  /// Moves the current node to `device` (a cluster device id) and advances. Throws
  /// ValidationError when done, for a device the mask forbids, or before reset.
  PlacetoStepResult step(int device) override;
  int horizon() const override { return num_nodes_; }

  /// Cluster device per node of the current state.
  const std::vector<int>& placement() const { return placement_; }
  /// Whether the current state's cost is known (simulated), and then its cost p, step time
  /// and OOM flag.
  bool cost_known() const { return cost_known_; }
  double current_cost() const { return cost_; }
  double current_time() const { return time_; }
  bool current_oom() const { return oom_; }

  /// Simulates a placement (cluster device per node) and returns its cost p; counts as a
  /// simulation and updates the best seen. Throws like step() on a bad device.
  double evaluate(const std::vector<int>& device_per_node, double* step_time = nullptr,
                  bool* oom = nullptr);
  /// p for a simulated (step_time, peak-memory fraction).
  double cost_of(double step_time, double memory_fraction) const;

  double reference_time() const { return reference_; }
  /// Simulator runs since construction (the reference runs at construction not counted).
  int64_t simulations() const { return simulations_; }
  /// Best simulated placement so far (non-OOM before OOM, then the lower step time); empty
  /// before the first simulation. best_simulation: the 1-based index of the run that found it.
  const std::vector<int>& best_placement() const { return best_; }
  double best_time() const { return best_time_; }
  bool best_oom() const { return best_oom_; }
  int64_t best_simulation() const { return best_sim_; }

  /// The placement as a Plan on graph() (method "placeto"): every op on its group's device.
  Plan to_plan(const std::vector<int>& device_per_node) const;
  /// The plan of the current state (placement()); ValidationError before reset.
  Plan to_plan() const override { return to_plan(placement_); }

  const Graph& graph() const { return graph_; }
  const Cluster& cluster() const { return cluster_; }

 private:
  // Set-up steps, in the constructor's order.
  void check_options();
  void check_groups();
  void order_groups();
  void link_groups();
  void relate_groups();
  void compute_static_features(const CostModel& cost);
  void set_reference();

  void check_device(int device) const;
  void simulate_state();  // cost of placement_ (sim or cache)
  void start_episode();
  void set_device_feature(int node, int device);

  const Graph& graph_;
  const Cluster& cluster_;
  PlacetoEnvOptions options_;
  std::vector<int> group_of_op_;
  int num_nodes_ = 0;
  std::vector<int> order_;
  std::vector<int> par_off_, par_idx_, chi_off_, chi_idx_;
  std::vector<uint8_t> relation_;
  std::vector<uint8_t> mask_;
  std::vector<float> static_;
  Simulator sim_;
  Plan plan_;  // reused
  double reference_ = 0;
  std::vector<double> single_times_;
  std::vector<double> single_mem_;
  std::vector<bool> single_oom_;

  // Episode state.
  bool started_ = false;
  int step_ = 0;
  std::vector<int> placement_;
  std::vector<float> obs_;
  bool cost_known_ = false;
  double cost_ = 0, time_ = 0;
  bool oom_ = false;

  int64_t simulations_ = 0;
  std::vector<int> best_;
  double best_time_ = std::numeric_limits<double>::infinity();
  bool best_oom_ = true;
  int64_t best_sim_ = 0;
};

}  // namespace placer
