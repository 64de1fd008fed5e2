#pragma once
// Micro-batched execution of any placement (graph pipelining, as GPipe / PipeDream run a
// placed model): a plan with `pipeline: {micro_batches: M}` and no stages runs M
// micro-batches of the step through its placement. The simulator turns it into a staged
// plan first: one stage per device that runs forward ops, in the order the devices first
// appear in the graph's topological order, each stage holding that device's forward ops
// (backward and optimizer ops run with their forward op, as in every staged plan). A
// placement that is a chain of contiguous stages therefore simulates exactly like the
// equivalent staged plan; a placement whose data goes back and forth between devices still
// runs, with each device's passes ordered by the plan's schedule (1F1B by default).

#include "src/graph/graph.h"
#include "src/plan/plan.h"

namespace placer {

/// Whether `plan` asks for micro-batches without giving stages.
bool needs_placement_pipeline(const Plan& plan);

/// The staged plan `plan` stands for (see above). Throws ValidationError naming the field
/// when the placement does not cover the graph or the plan also partitions ops.
Plan pipeline_from_placement(const Plan& plan, const Graph& g);

}  // namespace placer
