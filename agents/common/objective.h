#pragma once
// What a search minimises when it compares simulated plans (`--set objective=...`):
//   step        the simulated step time (the default): one training step, pipeline fill and
//               drain included;
//   throughput  the steady-state time per step of pipelined execution (simulator/
//               steady_state.h): the busiest device's occupancy, as when inputs stream
//               through the plan without a flush, the objective of the device-placement
//               literature's pipeline problems.
// A plan that runs out of memory loses either way; under throughput a pipelined plan is also
// tried with one micro-batch (stream_whole_batches). Torch-free.

#include <string>

#include "agents/common/option_table.h"
#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/plan/plan.h"

namespace placer {

enum class Objective { kStepTime, kThroughput };

const char* to_string(Objective o);  ///< "step", "throughput"

/// "step" or "throughput"; else OptionValueError "expected step or throughput, got 'v'".
Objective parse_objective(const std::string& v);

/// The time `objective` minimises for a simulation `r` of a plan on `c`.
double objective_time(Objective objective, const SimResult& r, const Cluster& c);

/// Under the throughput objective inputs stream through the plan, and micro-batches only
/// shorten the fill and drain its steady state leaves out while each costs its smaller
/// kernels: `*plan` with one micro-batch replaces it (its simulation with `options` in *r,
/// its prediction recorded) when that fits and streams faster. Returns whether it did;
/// nothing for the step-time objective or a plan of one micro-batch.
bool stream_whole_batches(Objective objective, Simulator& sim, const Cluster& c,
                          const SimOptions& options, Plan* plan, SimResult* r);

/// Adds the key `objective` (step|throughput) to `table`; `field` returns the options'
/// Objective member; `doc` (when given) says what it changes for this method.
template <class O, class Field>
OptionTable<O>& add_objective_option(OptionTable<O>& table, Field field,
                                     const char* doc = nullptr) {
  return table.add(
      "objective", "step|throughput",
      doc ? doc
          : "what plans are compared by: the simulated step time, or the steady-state time per "
            "step of pipelined execution (the busiest device's occupancy; docs/placers.md)",
      [field](O* o, const std::string& v) { field(*o) = parse_objective(v); },
      [field](const O& o) { return std::string(to_string(field(o))); });
}

}  // namespace placer
