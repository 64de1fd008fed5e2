#pragma once
// pipeline-dp: PipeDream's dynamic program (Narayanan et al., SOSP 2019) for pipeline stage
// cuts, a data-parallel replication count per stage, and the mapping of stages onto
// consecutive devices of a hierarchical topology (DAPPLE-style: a stage may start on the next
// host boundary, leaving devices idle, when that pays). See docs/dp_placers.md.
//
// The DP works on an abstract cost table (so tests can compare it with brute force on the
// very same numbers); make_pipeline_cost_table builds the table of a real problem.

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "agents/api/placer.h"
#include "agents/common/objective.h"

namespace placer {

/// The forward ops of a graph coarsened into a chain of layer units, in topological order.
struct LayerChain {
  std::vector<std::vector<OpId>> units;  ///< forward ops of each unit, topo order
  std::vector<int> unit_of;              ///< per op: its unit (every op, derived ops too)
};

/// Forward ops in topological order grouped by Op::layer (a new unit whenever the layer
/// changes); without layer numbers one unit per forward op. Consecutive units are merged,
/// balanced by forward FLOPs, down to at most `max_units`. Backward / optimizer ops join the
/// unit of their forward_op; others the latest unit among their predecessors, else the
/// earliest among their successors (the simulator's stage rule), else 0. `per_op`: one unit
/// per forward op even when the graph has layer numbers (before the merge).
LayerChain build_layer_chain(const Graph& g, int max_units, bool per_op = false);

/// Costs of pipeline configurations over layers [0, num_layers) and device slots
/// [0, num_devices) (indices into the problem's device list). All times are per mini-batch.
struct PipelineCostTable {
  int num_layers = 0;
  int num_devices = 0;
  /// host_start[d]: slot d is the first device of a host (slot 0 always is).
  std::vector<char> host_start;
  /// Stage of layers [i, j) on slots [first, first + r): compute / r + once-work +
  /// gradient all-reduce among the r replicas.
  std::function<double(int i, int j, int first, int r)> stage_time;
  /// Activations (forward) and their gradients (backward) across the cut before layer j,
  /// from slot prev_last (last device of the previous stage) to the stage at `first` with r
  /// replicas.
  std::function<double(int j, int prev_last, int first, int r)> boundary_time;
  /// Whether the stage fits in memory (resident + in-flight activations); may be empty.
  std::function<bool(int i, int j, int first, int r)> fits;
  /// Per slot: its device has no copy engines (DeviceSpec::overlap_transfers false), so a
  /// stage starting there adds its boundaries to its time (pipeline_stage_cost); empty =
  /// every device overlaps them.
  std::vector<char> blocking;
};

/// The time of stage [i, j) on slots [first, first + r) after a stage ending at slot
/// prev_last (-1: none): stage_time, plus on a blocking first slot the boundary in (from
/// prev_last) and the boundary out (to the next slot, one replica; none after the last layer).
double pipeline_stage_cost(const PipelineCostTable& table, int i, int j, int first, int r,
                           int prev_last);

struct PipelineDpOptions {
  bool allow_replication = true;  ///< r > 1 per stage
  int max_replicas = 0;           ///< 0 = num_devices
  /// A stage may skip devices to start at the next host boundary.
  bool align_to_hosts = true;
  /// When > 0, a stage's replica count r must divide it (samples are split evenly among a
  /// stage's replicas: r | batch / micro_batches). 0 = any r. pipeline_dp_plan sets it.
  int64_t replicas_divide = 0;
  /// Only replica counts that are powers of two (the search budget's restriction on large
  /// clusters; see PipelinePlacerOptions::max_dp_steps).
  bool power_of_two_replicas = false;
};

/// Replica counts the DP tries (ascending): 1..max (max_replicas, else num_devices; 1
/// without replication) that divide replicas_divide, powers of two only when asked.
std::vector<int> pipeline_replica_counts(int num_devices, const PipelineDpOptions& options);

struct PipelineStageChoice {
  int begin = 0, end = 0;  ///< layers [begin, end)
  int first = 0;           ///< first device slot
  int replicas = 1;        ///< devices [first, first + replicas)
};

struct PipelineDpSolution {
  double bottleneck = std::numeric_limits<double>::infinity();
  std::vector<PipelineStageChoice> stages;
  bool feasible() const { return !stages.empty(); }
};

/// The bottleneck of a configuration under `table`: max over stages of pipeline_stage_cost
/// and over cuts of boundary_time (infinity when a stage does not fit). Used by the DP's
/// tests.
double pipeline_bottleneck(const PipelineCostTable& table,
                           const std::vector<PipelineStageChoice>& stages);

/// A[j][d] = min over the last stage [i, j) on slots [d - r, d) (after an optional skip to a
/// host boundary) of max(A[i][d'], boundary(i), stage(i, j, d - r, r)); answer min_d A[L][d].
/// O(L^2 * N * R). Infeasible (no stages) when nothing fits.
PipelineDpSolution solve_pipeline_dp(const PipelineCostTable& table,
                                     const PipelineDpOptions& options = {});

struct PipelinePlacerOptions {
  PipelineDpOptions dp;
  int max_units = 64;     ///< chain length after coarsening
  int micro_batches = 0;  ///< 0 = 4 x stages (capped by the batch size)
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  /// Default search budget: the DP's steps (layer pairs x device slots x replica counts).
  /// Above it the replica counts are restricted to powers of two, then the chain is
  /// coarsened, so 1024 devices take seconds (unbounded, 137 s).
  int64_t max_dp_steps = 30'000'000;
  /// When not empty: a group per op (e.g. the device of a placement) that proposes the
  /// stages. The groups are read as contiguous stages of the chain (cuts_from_groups), and
  /// the DP may only cut where they change (it may still merge neighbours and chooses the
  /// replicas and the device slots). Used by `gdp+stages` (agents/staged_methods.cpp).
  std::vector<int> cut_groups;
  /// What the stage costs model (`--set objective=`): the step (kStepTime: a stage's
  /// gradient all-reduce adds to its compute, boundaries are links of their own) or the
  /// steady state of pipelined execution (kThroughput: a stage's devices are occupied by
  /// its compute share and by its communication, the all-reduce among its replicas plus its
  /// boundary transfers in and out, each replica moving its share of the samples; the longer
  /// of the two with copy engines, their sum without, as simulator/steady_state.h counts a
  /// device's occupancy).
  Objective objective = Objective::kStepTime;
  /// Also search folded stages (`--set fold=true`, agents/classical/pipeline_fold.h: a stage
  /// may hold a leading and a trailing segment of the chain) on a chain of at most
  /// `fold_units` units, and keep the folded plan when it simulates better by `objective`.
  /// Not with cut_groups.
  bool fold = false;
  int fold_units = 24;
};

/// The cut points (ascending, with 0 and chain.units.size()) of `group_of_op` read as
/// contiguous pipeline stages of `chain`: each unit weighs each group by the forward FLOPs
/// (+1 per op) of its non-input ops in that group; groups are ordered by their weighted
/// mean unit; every unit then gets one group, non-decreasing along the chain, maximising the
/// weight that keeps its group (a DP over units x groups). Stages are where it changes.
std::vector<int> cuts_from_groups(const Graph& g, const LayerChain& chain,
                                  const std::vector<int>& group_of_op);

/// The cost table of a problem (chain from build_layer_chain, device slots = devices).
/// Uses CostModel op times on the stage's first device, collective_time for the gradient
/// all-reduce (kAuto), transfer_time for activations (and their gradients when the graph
/// has backward ops), blocking slots where DeviceSpec::overlap_transfers is false; memory =
/// resident bytes + saved activations of the in-flight micro-batches (all for GPipe; for
/// 1F1B at most (stages after + 1) / m of them, 1/4 under the default m = 4 x stages).
PipelineCostTable make_pipeline_cost_table(const Problem& problem, const LayerChain& chain,
                                           const std::vector<int>& devices,
                                           const PipelinePlacerOptions& options);

/// Picks the micro-batch count of a pipelined plan by simulation: 4, 2 and 8 x stages (or
/// `fixed` when > 0), each rounded down to a divisor of `per_replica` (samples per stage
/// replica; 0 = no rounding), and when all of them fall below the stage count the smallest
/// divisor >= 4 x stages (if <= 16 x stages); on OOM doubles it (to the next divisor) up to 4
/// times. Sets plan->pipeline.micro_batches and returns the chosen plan's simulation.
SimResult choose_micro_batches(const Problem& problem, Plan* plan, int64_t per_replica, int fixed);

/// Runs the DP on a problem and returns the plan (pipeline, placement filled by stage).
/// Every stage's replica count divides the samples of a micro-batch, so no replica gets a
/// fractional share: with a batch size B > 0 and a fixed `micro_batches` m dividing B the
/// DP only considers r | B / m (only r = 1 when m does not divide B); otherwise r | B, and
/// m is then chosen among the divisors of B / lcm(replicas) (the largest <= 4 s, 2 s, 8 s).
/// Simulates it; on OOM moves to more micro-batches (the next such divisor >= 2 m) a few
/// times. Throws placer::Error when no configuration fits in memory. *sim (when not null)
/// gets the returned plan's simulation (critical path off). With options.fold the folded
/// plan replaces the contiguous one when it simulates better; *solution (when not null) is
/// the contiguous DP's either way.
Plan pipeline_dp_plan(const Problem& problem, const PipelinePlacerOptions& options = {},
                      PipelineDpSolution* solution = nullptr, SimResult* sim = nullptr);

}  // namespace placer
