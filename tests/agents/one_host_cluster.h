#pragma once
// One host of `devices` identical GPUs for the agents' tests: 10 TFLOP/s f32 (and `f16`
// FLOP/s when > 0), 1 TB/s memory, `memory` bytes each, one intra-host link; transfers
// overlap the compute unless `overlap_transfers` is false.
#include <string>

#include "src/cluster/cluster.h"

namespace placer {
namespace testing {

inline Cluster one_host_cluster(int devices, uint64_t memory = 16ull << 30,
                                LinkSpec link = LinkSpec{"pcie", 10e-6, 10e9,
                                                         LinkSharing::kPerPair},
                                double f16 = 0, bool overlap_transfers = true) {
  DeviceSpec s;
  s.model = "gpu";
  s.peak_flops[static_cast<int>(DType::kF32)] = 10e12;
  if (f16 > 0) s.peak_flops[static_cast<int>(DType::kF16)] = f16;
  s.memory_bandwidth = 1e12;
  s.memory_bytes = memory;
  s.overlap_transfers = overlap_transfers;
  Cluster c;
  c.name = "test";
  c.add_host("host", s, devices);
  c.set_link(LinkLevel::kIntraHost, link);
  return c;
}

}  // namespace testing
}  // namespace placer
