#pragma once
// Folded pipeline stages for pipeline-dp (`--set fold=true`): a stage may hold a leading and a
// trailing segment of the layer chain, as V-shaped schedules place the first and the last
// chunk of a model on the same devices. Stages are taken from the outside in: stage 0 holds
// units [0, c1) and [c_{2S-1}, L), stage 1 the next segment on either side, ..., and the last
// stage the middle that is left. A segment may be empty, so every contiguous pipeline is a
// folded one too (each stage takes only its leading segment). See docs/dp_placers.md.
//
// The DP works on an abstract cost table, as solve_pipeline_dp does, so the tests compare it
// with brute force on the same numbers; make_folded_cost_table (pipeline_dp.h) builds the
// table of a real problem.

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "agents/classical/pipeline_dp.h"

namespace placer {

/// A stage of units [begin, end) and [tail_begin, tail_end) on slots [first, first + replicas).
/// A stage of one segment has tail_begin == tail_end == end.
struct FoldedStageChoice {
  int begin = 0, end = 0;
  int tail_begin = 0, tail_end = 0;
  int first = 0;
  int replicas = 1;
};

struct FoldedCostTable {
  int num_layers = 0;
  int num_devices = 0;
  /// The time of a stage holding units [a, b) and [c, d) (b <= c; c == d: one segment) on
  /// slots [first, first + r), its transfers over its border included; infinity when it does
  /// not fit in memory.
  std::function<double(int a, int b, int c, int d, int first, int r)> stage_time;
};

struct FoldedSolution {
  double bottleneck = std::numeric_limits<double>::infinity();
  std::vector<FoldedStageChoice> stages;
  bool feasible() const { return !stages.empty(); }
};

/// The largest stage time of `stages` under `table`.
double folded_bottleneck(const FoldedCostTable& table,
                         const std::vector<FoldedStageChoice>& stages);

/// F[i][j][d]: the best bottleneck of stages holding units [0, i) and [j, L) on slots [0, d);
/// the next stage takes [i, i') and [j', j) on r slots from d (r in `replica_counts`), the
/// last one the whole middle [i, j). Answer: min over those last stages. Fewer devices win
/// ties. O(L^4 N R / 4). Infeasible (no stages) when nothing fits.
FoldedSolution solve_folded_pipeline(const FoldedCostTable& table,
                                     const std::vector<int>& replica_counts);

/// The tensors of a training step that cross between units of a chain (border_tensors,
/// stage_borders.h, less those of input ops), for the border of any set of units (units as
/// bits of a mask: at most 64 units): each forward activation from its producer's unit to
/// the units of its forward readers, each gradient a backward op sends from its unit to the
/// units of its backward readers.
struct UnitBorders {
  struct Crossing {
    int from = 0;     ///< the producer's unit
    uint64_t to = 0;  ///< the readers' units
    double bytes = 0;
  };
  std::vector<Crossing> crossings;  ///< merged by (from, to)
  /// Bytes moved into the set (produced outside, read inside) and out of it (produced inside,
  /// read by a unit outside), each tensor counted once.
  void in_out(uint64_t set, double* in, double* out) const;
};

/// The crossings of `g` over `chain` (at most 64 units).
UnitBorders unit_borders(const Graph& g, const LayerChain& chain);

/// The units [a, b) and [c, d) as a mask.
uint64_t unit_mask(int a, int b, int c, int d);

/// The folded cost table of a problem (defined beside make_pipeline_cost_table, whose times
/// it shares): a stage's compute share on its first slot's device plus the work every
/// replica does once, the all-reduce of both segments' gradients among its slots, and its
/// share of the bytes unit_borders moves into and out of it over the link to a neighbouring
/// slot; under options.objective throughput the steady state's occupancy (the longer of
/// compute and communication, their sum without copy engines), under the step the compute
/// and all-reduce beside the transfers. Memory as make_pipeline_cost_table's, with every
/// micro-batch's saved activations for a stage of two segments.
FoldedCostTable make_folded_cost_table(const Problem& problem, const LayerChain& chain,
                                       const std::vector<int>& devices,
                                       const PipelinePlacerOptions& options);

/// The DP's steps for a chain of `units` units on `devices` slots with `replicas` replica
/// counts (the search budget of the caller).
long long folded_pipeline_steps(int units, int devices, int replicas);

}  // namespace placer
