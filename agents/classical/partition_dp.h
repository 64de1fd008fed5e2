#pragma once
// partition-dp: an OptCNN / Tofu-style dynamic program over a chain of operators (forward
// ops with work, topological order) choosing one split per operator (partition-n-reduce over
// all k devices): the batch dim 0, an output-channel dim, or the reduction dim. Cost of a
// chain = sum of per-op costs (compute / k + the op's own collectives) + the re-layout cost
// between consecutive ops with different splits. See docs/dp_placers.md.

#include <limits>
#include <vector>

#include "agents/api/placer.h"

namespace placer {

/// unary[i][c]: cost of node i under choice c. edge[i][a][b] (i >= 1): cost between node
/// i - 1 under a and node i under b (edge[0] unused).
struct PartitionCostTable {
  std::vector<std::vector<double>> unary;
  std::vector<std::vector<std::vector<double>>> edge;
};

struct PartitionDpSolution {
  double cost = std::numeric_limits<double>::infinity();
  std::vector<int> choice;  ///< per node
};

/// Total cost of an assignment under the table.
double partition_cost(const PartitionCostTable& table, const std::vector<int>& choice);

/// Viterbi over the chain: B[i][b] = unary[i][b] + min_a (B[i-1][a] + edge[i][a][b]).
/// O(n c^2). Ties keep the lowest choice index.
PartitionDpSolution solve_partition_dp(const PartitionCostTable& table);

struct PartitionPlacerOptions {
  /// Charge Tofu's re-layout (all-to-all of the tensor between them) when consecutive ops
  /// split differently. The simulator materialises whole outputs after every partition
  /// collective, so this is a modelling bias towards consistent splits, not a simulated cost.
  bool relayout_cost = true;
  /// Also run the DP on the first N/2, N/4, ..., 2 devices (Tofu's recursive halving of the
  /// device set, one degree per run) and keep the plan the simulator finds fastest.
  bool try_smaller_degrees = true;
  /// Also run the DP with a "not split" choice per op (whole op on the group's first device,
  /// OptCNN's degree 1), so small ops avoid a collective; the simulator keeps the faster of
  /// that plan and the every-op-split one. make_partition_chain offers the choice when set.
  bool allow_unsplit = true;
  /// Tofu's recursive halving: on a group of 2^L devices (2 <= L <= max_levels) also run the
  /// DP over per-op level vectors (a dim per halving level) and let the simulator compare.
  /// Off by default (the single-level API keeps its meaning); the registered placer sets it.
  bool try_levels = false;
  int max_levels = 3;
  /// Per op, keep at most this many level vectors (the cheapest by their own cost).
  int max_level_choices = 32;
};

/// The dim recorded in PartitionChain::dims for the "not split" choice.
inline constexpr int kNoSplit = -2;

/// The chain of a problem: the ops, their candidate dims (0, an output-channel dim,
/// OpPartition::kReduceDim, as Plan::validate allows them) and the cost table.
struct PartitionChain {
  std::vector<OpId> ops;
  std::vector<std::vector<int>> dims;  ///< per node: the dim of each choice
  PartitionCostTable table;
};

/// Builds the chain on `devices` (k = devices.size() >= 2).
PartitionChain make_partition_chain(const Problem& problem, const std::vector<int>& devices,
                                    const PartitionPlacerOptions& options = {});

/// Recursive-halving chain on 2^L devices: per node the level vectors (each level one of the
/// node's dims, a dim halved m times must have size >= 2^m; an empty vector = not split when
/// options.allow_unsplit). Cost of a vector: (fwd + bwd) / k + optimizer / 2^(non-batch
/// levels) + per level l its collectives on the pair {devices[0], devices[k >> (l+1)]}
/// with the simulator's per-level byte rule (docs/simulator.md, "Recursive halving");
/// edge between vectors a != b: per differing level l, Tofu's re-layout (2 x reduce-scatter
/// on the level's pair of bytes / 2^l), or one transfer between unsplit and split.
struct LevelChain {
  std::vector<OpId> ops;
  std::vector<std::vector<std::vector<int>>> levels;  ///< per node, per choice
  PartitionCostTable table;
};
LevelChain make_level_chain(const Problem& problem, const std::vector<int>& devices,
                            const PartitionPlacerOptions& options = {});

/// The plan: the ops of the chain partitioned over the chosen device group (all devices, or
/// the best of the halvings) with their DP choice, other ops on the group's first device;
/// simulated (predicted filled). Candidates (degree x split-every-op / unsplit allowed) are
/// compared in the simulator. One device: no partitions.
Plan partition_dp_plan(const Problem& problem, const PartitionPlacerOptions& options = {},
                       PartitionDpSolution* solution = nullptr);

}  // namespace placer
