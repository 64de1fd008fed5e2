#pragma once
// What a reader of a plan file should know about it that the fields only imply, written as
// `predicted: {notes: [...]}` (src/io/plan_writer.cpp) and printed by `placer place`. Today: a
// pipeline whose stages have different data-parallel widths (pipeline-dp replicates each
// stage on its own count of devices), which runs in placer's simulator and in a runtime with
// per-stage groups, but not in Megatron-LM / DeepSpeed / torchtitan, whose pipeline stages
// share one data-parallel width (`placer export` refuses such plans).

#include <string>
#include <vector>

#include "src/plan/plan.h"

namespace placer {

std::vector<std::string> plan_notes(const Plan& p);

}  // namespace placer
