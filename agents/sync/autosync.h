#pragma once
// `autosync-search`: a per-variable synchronisation search with the simulator as the
// environment. Not a learned policy (that is `autosync`, agents/sync/autosync_rl.h): a
// seeded coordinate descent. It starts from the best of the four strategy builders and,
// unit by unit (the 31 largest variables one by one, the rest together), tries each
// synchronizer (ring / hierarchical all-reduce, the PS sharded over all servers (with or
// without local aggregation) or whole on one of up to 4 servers, all-gather for sparse rows,
// factor broadcasting for FC layers), then, when allowed, compressors (fp16, PowerSGD rank
// 4, top-k 1 %) and staleness bounds 1..max, keeping a change when the simulated step gets
// shorter. Passes repeat in a seed-shuffled order until one changes nothing or the budget
// (default 400 simulations) is spent. Same seed, same plan. `autosync` uses the same
// descent to polish its learned plan.

#include <cstdint>
#include <memory>

#include "agents/api/placer.h"

namespace placer {

std::unique_ptr<Placer> make_autosync_placer();

/// The simulated step of a plan for the searches (an OOM plan: 1000 x its step time, so a
/// plan that fits beats any OOM one).
double sync_step_time(const Problem& p, const Plan& plan);

struct CoordinateDescentResult {
  SynchronizationConfig config;  ///< the best section (the start unless beaten)
  double step_time = 0;          ///< its sync_step_time
  int64_t evaluations = 0;       ///< simulations run
};

/// The descent from `start` (whose sync_step_time is `start_time`) within budget's
/// max_evaluations (default 400) / max_seconds, lossy choices as the budget allows.
CoordinateDescentResult autosync_coordinate_descent(const Problem& p, const SearchBudget& budget,
                                                    const SynchronizationConfig& start,
                                                    double start_time);

}  // namespace placer
