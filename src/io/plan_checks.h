#pragma once
// The one plan validator, whichever way a plan came in: a plan file to simulate, the plan a
// placer found, a framework configuration read back (plan_import.h). Its checks are
// Plan::validate (universal: a plan that fails them is refused everywhere) and the framework
// writers' own checks (plan_export.h), which are each framework's: a plan one framework cannot
// run may be another's, so `simulate` and `place` report them as warnings, and only the
// importers refuse them (a configuration must export back to the framework it came from).
// docs/export.md "One validator" lists which checks are which.
//
//   for (const std::string& w : plan_export_warnings(plan, graph)) std::cerr << w << "\n";

#include <string>
#include <utility>
#include <vector>

#include "src/io/plan_export.h"

namespace placer {

/// What each framework writer says of a plan.
struct PlanExportCheck {
  /// megatron_config_of reads the plan. When it does not, a plan with pipeline stages gets
  /// its refusal in `not_megatron_style` (no framework configuration describes the plan);
  /// an op-level plan (no stages; its only export is a device map) is not checked further.
  bool megatron_style = false;
  std::string not_megatron_style;  ///< "field: why" from megatron_config_of
  std::vector<ExportFormat> exports;                           ///< formats it writes to
  std::vector<std::pair<ExportFormat, std::string>> refusals;  ///< format, "field: why"
};

/// Runs the Megatron-LM, DeepSpeed and torchtitan writers on `p` (in that order).
PlanExportCheck check_plan_exports(const Plan& p, const Graph& g);

/// One line per framework that refuses a Megatron-style plan, as the export would say it:
/// "does not export to deepspeed: tensor_parallel.degree: 2: a DeepSpeed config has ...";
/// for a pipeline no framework configuration describes, one line "no Megatron-LM,
/// DeepSpeed or torchtitan configuration can express it: <field>: <why>". Empty for op-level plans and for
/// plans every framework writes.
std::vector<std::string> plan_export_warnings(const Plan& p, const Graph& g);

}  // namespace placer
