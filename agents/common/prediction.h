#pragma once
// A searched plan's `predicted` section (step time, peak memory per device, OOM), filled the
// same way by every placer: one simulation without the critical path. Torch-free.

#include "agents/api/placer.h"

namespace placer {

/// Records `r` in plan->predicted.
void record_prediction(const SimResult& r, Plan* plan);

/// Simulates `plan` on the problem (no critical path), records it and returns the result.
SimResult predict(const Problem& problem, Plan* plan);

}  // namespace placer
