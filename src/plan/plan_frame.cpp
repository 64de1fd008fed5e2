#include "src/plan/plan_frame.h"

namespace placer {

void apply_frame(const PlanFrame& frame, Plan* plan) {
  if (frame.trivial()) return;
  plan->pipeline.micro_batches = frame.micro_batches;
  plan->data_parallel.replicas = frame.replicas;
  plan->data_parallel.replica_devices = frame.replica_devices;
}

}  // namespace placer
