#pragma once
// The steady-state time per step of a simulated plan: the throughput of pipelined execution,
// the objective of the device-placement literature (inputs stream through the plan and its
// stages never drain), read from one simulation of the step.
//
// A device is occupied by its compute and by its transfers and collectives. With copy engines
// (DeviceSpec::overlap_transfers, the default) the two run side by side and the device is
// busy for the longer of them; without (`overlap: false`) they add. When steps follow each
// other without a flush, a new step can start every time the busiest device has done its
// share, so the time per step is the largest occupancy; pipeline fill and drain, and any
// idling on a dependency, are left out. Every cost is the simulator's own: op times at the
// plan's micro-batch size (so more, smaller micro-batches cost what they cost), transfers,
// gradient all-reduces, optimizer ops. A single device's steady state is its step time.

#include "simulator/simulator.h"
#include "src/cluster/cluster.h"

namespace placer {

/// The largest occupancy over the devices of `r` (compute and communication time per device,
/// as the simulator records them), added or overlapped as `c`'s devices say.
double steady_state_time(const SimResult& r, const Cluster& c);

}  // namespace placer
