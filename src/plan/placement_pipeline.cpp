#include "src/plan/placement_pipeline.h"

#include <string>
#include <vector>

#include "src/util/error.h"

namespace placer {

bool needs_placement_pipeline(const Plan& plan) {
  return !plan.pipeline.enabled() && plan.pipeline.micro_batches > 1;
}

Plan pipeline_from_placement(const Plan& plan, const Graph& g) {
  if (plan.placement.size() != g.num_ops()) {
    throw ValidationError("pipeline: micro_batches without stages needs a placement of every op (" +
                          std::to_string(plan.placement.size()) + " of " +
                          std::to_string(g.num_ops()) + " given)");
  }
  if (!plan.partitions.empty()) {
    throw ValidationError(
        "pipeline: micro_batches without stages cannot be combined with partitions; give the "
        "stages explicitly");
  }
  Plan out = plan;
  std::vector<int> stage_of_device;
  for (OpId o : g.topo_order()) {
    if (g.op(o).phase != Phase::kForward) continue;
    const int d = plan.placement[o];
    if (d < 0) throw ValidationError("placement: op '" + g.op(o).name + "' has no device");
    if (static_cast<size_t>(d) >= stage_of_device.size()) stage_of_device.resize(size_t(d) + 1, -1);
    int& s = stage_of_device[size_t(d)];
    if (s < 0) {
      s = static_cast<int>(out.pipeline.stages.size());
      PipelineStage st;
      st.devices = {d};
      out.pipeline.stages.push_back(std::move(st));
    }
    out.pipeline.stages[size_t(s)].ops.push_back(o);
  }
  out.pipeline.virtual_stages = 1;
  return out;
}

}  // namespace placer
