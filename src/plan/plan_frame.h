#pragma once
// How a placement will run inside a hybrid plan (the outer loop, agents/classical/hybrid_outer.h):
// M micro-batches pipelined through it and R data-parallel replicas of it. A placer that
// honours the frame (Placer::honours_frame) scores its candidate placements inside it, so it
// places for the plan that will actually run, not for one micro-batch on one replica.

#include <vector>

#include "src/plan/plan.h"

namespace placer {

struct PlanFrame {
  int micro_batches = 1;
  int replicas = 1;
  /// As DataParallelConfig::replica_devices (empty = the default stride).
  std::vector<std::vector<int>> replica_devices;
  bool trivial() const { return micro_batches == 1 && replicas == 1; }
};

/// `plan` (a placement: no stages, no partitions) inside `frame`: sets
/// pipeline.micro_batches, data_parallel.replicas and replica_devices. A trivial frame
/// leaves the plan unchanged.
void apply_frame(const PlanFrame& frame, Plan* plan);

}  // namespace placer
