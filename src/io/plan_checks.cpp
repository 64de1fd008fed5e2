#include "src/io/plan_checks.h"

#include "src/plan/megatron_config_of.h"
#include "src/util/error.h"

namespace placer {

PlanExportCheck check_plan_exports(const Plan& p, const Graph& g) {
  PlanExportCheck out;
  try {
    megatron_config_of(p, g);
  } catch (const Error& e) {  // not Megatron-style: no framework format describes it
    if (!p.pipeline.stages.empty()) out.not_megatron_style = e.what();
    return out;
  }
  out.megatron_style = true;
  for (ExportFormat f :
       {ExportFormat::kMegatron, ExportFormat::kDeepSpeed, ExportFormat::kTorchTitan}) {
    try {
      export_megatron_style(p, g, f);
      out.exports.push_back(f);
    } catch (const Error& e) {
      out.refusals.emplace_back(f, e.what());
    }
  }
  return out;
}

std::vector<std::string> plan_export_warnings(const Plan& p, const Graph& g) {
  std::vector<std::string> lines;
  const PlanExportCheck check = check_plan_exports(p, g);
  if (!check.not_megatron_style.empty()) {
    lines.push_back("no Megatron-LM, DeepSpeed or torchtitan configuration can express it: " +
                    check.not_megatron_style);
  }
  for (const auto& [format, why] : check.refusals) {
    lines.push_back(std::string("does not export to ") + to_string(format) + ": " + why);
  }
  return lines;
}

}  // namespace placer
