#pragma once
// A hill climb over the settings of a pipelined plan that leave its stages' ops alone: the
// gradient bucket size of its replicated stages, the micro-batch count and each stage's
// replica count. `gdp+stages` runs it on its best pipeline while it fine-tunes
// (agents/staged_methods.cpp): the placement search only proposes cuts, and pipeline-dp fills
// in the rest from an analytic stage cost, so what the simulator says about the rest is
// checked here. Torch-free.

#include <cstdint>
#include <functional>
#include <vector>

#include "agents/api/placer.h"
#include "agents/common/objective.h"

namespace placer {

/// Gradient bucket sizes the polish tries (bytes): PyTorch DDP's default first.
const std::vector<uint64_t>& polish_bucket_sizes();

/// The plans one step away from `plan` (a plan with pipeline stages, each stage on devices of
/// its own, one tensor-parallel rank each, no virtual stages), in a fixed order:
/// - every other size of polish_bucket_sizes (when a stage has more than one replica);
/// - every other micro-batch count that divides the samples of a stage replica (batch /
///   the lcm of the replica counts), at most 64;
/// - one device more or less for a stage, or one device moved between neighbouring stages,
///   where every replica count still divides the batch: the stages keep their order on the
///   devices they used followed by the problem's unused ones, and the micro-batch count
///   becomes the largest that still splits evenly and is at most the current one.
/// A plan of another kind has no neighbours.
std::vector<Plan> pipeline_neighbours(const Problem& problem, const Plan& plan);

struct PolishedPlan {
  Plan plan;      ///< the best plan found, its prediction filled in
  double time{};  ///< its time by the objective (the input plan's when nothing improved)
};

/// Steepest descent over pipeline_neighbours from `plan` (simulated, `time` its time by
/// `objective`): each step simulates every neighbour (critical path off) and moves to the
/// fastest when it beats the current plan; stops when none does or `spend` (called before
/// each simulation) returns false. Neighbours that fail validation or run out of memory are
/// skipped. Deterministic.
PolishedPlan polish_pipeline(const Problem& problem, const Plan& plan, double time,
                             Objective objective, const std::function<bool()>& spend);

}  // namespace placer
