#include "src/plan/plan_notes.h"

namespace placer {

std::vector<std::string> plan_notes(const Plan& p) {
  std::vector<std::string> out;
  const std::vector<PipelineStage>& stages = p.pipeline.stages;
  bool uneven = false;
  for (const PipelineStage& s : stages) uneven = uneven || s.data_parallel() != stages.front().data_parallel();
  if (uneven) {
    std::string widths;
    for (const PipelineStage& s : stages) widths += (widths.empty() ? "" : ", ") + std::to_string(s.data_parallel());
    out.push_back("uneven stages: data-parallel widths " + widths +
                  " differ across pipeline stages (each stage's replicas split every micro-batch "
                  "evenly); Megatron-LM, DeepSpeed and torchtitan need one width for all stages");
  }
  return out;
}

}  // namespace placer
