#pragma once
// The inverse of megatron_plan: the Megatron-style configuration (tp x dp grid per stage,
// pp stages of whole layers, micro-batches, recomputation, ZeRO, ...) that a plan is, so it
// can be written as a framework's configuration (src/io/export_*.h, docs/export.md).
//
// A plan is such a configuration exactly when megatron_plan rebuilds it: the check builds
// megatron_plan(g, config) and compares stage by stage, so whatever an exporter writes
// reads back into the same plan. Anything else is a ValidationError naming the plan field:
//   "pipeline.stages[1]: layer 3 is split between stages 0 and 1; frameworks cut ..."
//
//   MegatronConfig m = megatron_config_of(plan, graph);  // throws when inexpressible

#include "src/graph/graph.h"
#include "src/plan/megatron_plan.h"
#include "src/plan/plan.h"

namespace placer {

/// Layers of a layered graph: 1 + the highest layer index of its forward ops (0 when none).
int graph_layers(const Graph& g);

/// The floating-point type the step computes in: the plan's precision.compute when set,
/// else the type of the graph's forward ops that carry the most FLOPs (f32 for none).
DType plan_compute_dtype(const Plan& p, const Graph& g);

/// The configuration of plan `p` on graph `g` (see above). Throws ValidationError
/// "field: why" for: no pipeline (per-op placement), explicit partitions, replicas,
/// stages of different grids, a tensor_parallel degree that differs from the grid's,
/// per-stage recomputation, a batch that leaves fractional samples per micro-batch and
/// data-parallel rank, layers split between stages or stages that are not contiguous,
/// layer counts that are neither even nor even with a different first / last stage,
/// devices out of Megatron's rank order, a non-ring gradient sync.
MegatronConfig megatron_config_of(const Plan& p, const Graph& g);

}  // namespace placer
