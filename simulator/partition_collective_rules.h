#pragma once
// The collectives an instance of a partitioned op ends with when its partition's collectives
// are `auto` (docs/simulator.md, "Operator partitioning"): which kind, over which level's
// group, on how many bytes. The simulator times them (simulator/partition_collectives.cpp);
// the stage-load model of plans with split ops charges the same ones
// (agents/classical/pipeline_ideals_load.cpp).

#include <cstdint>
#include <vector>

#include "simulator/cost_profile.h"
#include "src/plan/plan.h"

namespace placer {

/// One collective of a partitioned op's instance: on the partition's whole group (level -1,
/// a one-level split) or on recursive halving's level `level` (the 2 devices that differ
/// there), moving `bytes`.
struct PartitionCollectiveStep {
  int level = -1;
  CollectiveKind kind = CollectiveKind::kAllReduce;
  uint64_t bytes = 0;
};

/// The collectives, back to back, of an instance of an op of partition `q` (2 or more
/// devices, not replicated): forward (`backward` false) on its outputs' `act` + `grad` bytes,
/// backward on its input gradients' `act` bytes and its parameter gradients' `grad` bytes.
/// Steps of 0 bytes are left out.
std::vector<PartitionCollectiveStep> auto_partition_collectives(const OpPartition& q, bool backward,
                                                                uint64_t act, uint64_t grad);

}  // namespace placer
