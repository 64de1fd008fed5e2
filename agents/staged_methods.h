#pragma once
// Methods that join two families: a learned placer's placement read as pipeline stages,
// whose replicas and device slots pipeline-dp's DP then chooses (the joint space of placement and pipeline).

#include <optional>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "agents/common/objective.h"

namespace placer {

/// The plan of `placement` (a plan with a placement, no stages) read as pipeline stages:
/// its device groups become contiguous stages of the layer chain (cuts_from_groups), and
/// pipeline-dp picks which of those cuts to keep, each stage's replica count, the device
/// slots and the micro-batches (agents/classical/pipeline_dp.h, cut_groups), its stage costs
/// those of `objective` (PipelinePlacerOptions::objective). Throws placer::Error when no such
/// pipeline fits in memory. *sim (when not null) gets the returned plan's simulation
/// (critical path off).
Plan placement_as_pipeline(const Problem& problem, const Plan& placement,
                           Objective objective = Objective::kStepTime, SimResult* sim = nullptr);

/// The better of `placement` run as placed (branches in parallel on their devices) and
/// placement_as_pipeline (the same groups as stages) by `objective`'s time: what
/// `gdp+stages` scores each sample with. Throws placer::Error only when neither runs (the
/// pipeline fits nowhere and the placement runs out of memory). *sim (when not null) gets
/// the chosen plan's simulation (critical path off) where this made one: the placement's,
/// and under the throughput objective the pipeline's; it is left as it was otherwise.
Plan placement_or_pipeline(const Problem& problem, const Plan& placement,
                           Objective objective = Objective::kStepTime,
                           std::optional<SimResult>* sim = nullptr);

/// The shipped policy of `gdp+stages`: models/pretrained/stages.pt (trained with
/// `placer train-policy --set stages=true`, docs/gdp.md).
std::string staged_policy_path();

/// "gdp+stages": the GDP policy (zero-shot, or fine-tuned with `--set finetune=N`) whose
/// every placement is scored as placement_or_pipeline makes it. Nothing without LibTorch.
void add_staged_methods(std::vector<MethodInfo>* out);

}  // namespace placer
