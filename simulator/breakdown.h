#pragma once
// Where each device's step time goes (`placer simulate --breakdown`): computing (forward,
// backward with any recomputation, optimizer), collectives and transfers that no compute
// hides, waiting for the host to issue kernels, and the rest (pipeline bubble, waiting for
// inputs). Every instant of a device's step is counted once, by the first of these that is
// active then, so the parts add up to the step time:
//   forward > backward > optimizer > op collectives (tensor-parallel by kind, all-to-all) >
//   data-parallel gradient sync > step barrier > transfers > host wait > idle.
// FSDP's parameter all-gather waits (inside the forward / backward op times) are taken out
// of forward and backward as their own part.
// Built from a run with SimOptions::record_events.

#include <array>
#include <vector>

#include "simulator/cost_profile.h"
#include "simulator/simulator.h"

namespace placer {

struct DeviceBreakdown {
  int device = 0;
  std::vector<int> stages;  ///< pipeline stages it runs (TP rank of the first copy)
  double forward = 0, backward = 0, optimizer = 0;
  /// Exposed collectives of ops, by CollectiveKind: tensor-parallel partitions, and the
  /// expert-parallel all-to-all of MoE dispatch / combine (CollectiveKind::kAllToAll).
  std::array<double, kNumCollectiveKinds> collective{};
  double gradient_sync = 0;  ///< exposed data-parallel gradient all-reduces
  double fsdp_gather = 0;    ///< compute waiting for FSDP parameter all-gathers
  double barrier = 0;        ///< exposed step barrier (loss scale, grad norm, tied embeddings)
  double transfer = 0;       ///< exposed point-to-point transfers (sent or received)
  double host_wait = 0;      ///< idle while the host issues the next kernel
  double idle = 0;           ///< the rest: pipeline bubble, waiting for inputs
  double total() const;
};

/// One row per device that computes in the simulated timeline, in device order (data-
/// parallel copies and TP ranks > 0 of a copy only mirror another device and are left out). Throws ValidationError when `r`
/// has no events (run without record_events).
std::vector<DeviceBreakdown> step_breakdown(const SimResult& r, const Graph& g, const Plan& p);

}  // namespace placer
