#pragma once
// pipeline-ideals: contiguous pipeline splits of a general DAG, exactly.
//
// A split of a DAG into k pipeline stages where every edge goes forward (stage s only
// feeds stages > s) is a chain of ideals (downward-closed node sets) 0 = I_0 < I_1 < ... <
// I_k = V, stage s = I_s \ I_{s-1}. A split along one topological order sees only the
// prefixes of that order; a branching graph has many more ideals, and the best split may
// need one that no single order has (Tarnawski et al., "Efficient Algorithms for Device
// Placement of DNN Graph Operators", NeurIPS 2020, use the same DP over ideals). The load of
// a stage is its work and the transfers that cross its border, both directions: added to
// the work on devices whose transfers occupy them (cluster key `overlap: false`), the larger
// of the two where copy engines overlap them with the compute.
//
// The DP: f(I, 1) = load(I), f(I, k) = min over ideals J < I of max(f(J, k - 1),
// load(I \ J)); O(ideals^2 x k). When the graph has more than `max_ideals` ideals, chains of
// single-successor / single-predecessor nodes are contracted into pieces of bounded work
// (a small share of a stage's, so the pieces still balance), coarser pieces while the
// ideals still exceed the cap; the split along the prefixes of one topological order is
// the last resort, and the better of the two (by the loads on the full graph) is kept
// (exact = false).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "agents/api/placer.h"

namespace placer {

/// Work that belongs to no node but runs on a stage chosen by a node set (the simulator's
/// stage rule for ops without a forward op): `latest` = the latest stage among `nodes`
/// (stage 0 when empty), else the earliest.
struct IdealSplitExtra {
  std::vector<int> nodes;
  bool latest = true;
  double work = 0;
};

/// The stage `e` runs on under `stage_of` (a stage per node): the latest (or earliest) of
/// its nodes' stages, stage 0 when it has no nodes.
int extra_stage(const IdealSplitExtra& e, const std::vector<int>& stage_of);

/// The abstract problem (tests build it by hand; ideal_split_problem builds it from a graph).
struct IdealSplitProblem {
  std::vector<double> work;               ///< per node
  std::vector<double> send;               ///< per node: cost of moving its output across a cut
  std::vector<std::vector<int>> succs;    ///< per node: successors (the DAG's edges)
  std::vector<IdealSplitExtra> extra;     ///< work placed by a node set's stages
  /// false: a stage's transfers add to its work (devices without copy engines, cluster key
  /// `overlap: false`); true: they overlap it (load = the larger). pipeline_ideals_plan
  /// sets it from the cluster (transfers_overlap).
  bool overlap = false;
  int size() const { return static_cast<int>(work.size()); }
  double stage_load(double work_part, double transfers) const {
    return overlap ? std::max(work_part, transfers) : work_part + transfers;
  }
};

struct IdealSplit {
  double bottleneck = 0;      ///< max stage load
  std::vector<int> stage_of;  ///< per node
  int stages = 0;             ///< used (<= max_stages; fewer when more do not help)
  int64_t ideals = 0;         ///< ideals the DP ran over
  bool exact = true;          ///< false: the topological-order fallback ran
};

/// Load of `stage` (a node set given as a membership mask) under `stage_of`: its work and
/// the extra work it gets, with (stage_load) its transfers: send[u] for each u inside with
/// a successor outside (once per u), plus send[u] for each u outside with a successor
/// inside (once per u).
double ideal_stage_load(const IdealSplitProblem& p, const std::vector<int>& stage_of, int stage);

/// The best split into at most `max_stages` stages (fewest stages among equal bottlenecks).
IdealSplit solve_ideal_split(const IdealSplitProblem& p, int max_stages, int64_t max_ideals = 3000);

/// The same problem split along the prefixes of the topological order 0..n-1 only (nodes
/// must be numbered topologically): what a chain-based split can reach.
IdealSplit solve_prefix_split(const IdealSplitProblem& p, int max_stages);

/// The problem of a training step: one node per forward op, its work the time of the op and
/// of its backward and optimizer ops on `device`, send = the transfer of its outputs from
/// `device` to `next`, twice when the graph has backward ops (activations forward,
/// gradients back). Non-forward ops without a forward op are extra work placed as the
/// simulator places them (the latest stage among their predecessors, else the earliest
/// among their successors).
IdealSplitProblem ideal_split_problem(const Problem& problem, int device, int next);

/// Whether every device of `devices` overlaps its transfers with its compute
/// (DeviceSpec::overlap_transfers); one device without copy engines makes the stage loads
/// of the whole split additive.
bool transfers_overlap(const Cluster& cluster, const std::vector<int>& devices);

/// `placer place --method pipeline-ideals`: the split over the problem's devices in order,
/// one device per stage, stage loads overlapped or added as transfers_overlap says,
/// micro-batches chosen by simulation as pipeline-dp does.
Plan pipeline_ideals_plan(const Problem& problem, IdealSplit* split = nullptr);

}  // namespace placer
