#pragma once
// `autosync`: a per-variable synchronisation search with the simulator as the environment
// (after AutoSync, Zhang et al. 2020). Not a learned policy: a seeded coordinate descent.
// It starts from the best of the four strategy builders and, unit by unit (the 31 largest
// variables one by one, the rest together), tries each synchronizer (ring / hierarchical
// all-reduce, the PS sharded over all servers (with or without local aggregation) or whole
// on one of up to 4 servers, all-gather for sparse rows, factor broadcasting for FC layers),
// then, when allowed, compressors (fp16, PowerSGD rank 4, top-k 1 %) and staleness bounds
// 1..max, keeping a change when the simulated step gets shorter. Passes repeat in a
// seed-shuffled order until one changes nothing or the budget (default 400 simulations) is
// spent. Same seed, same plan.

#include <memory>

#include "agents/placer.h"

namespace placer {

std::unique_ptr<Placer> make_autosync_placer();

}  // namespace placer
