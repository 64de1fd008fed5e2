#pragma once
// A plan as the configuration of the framework that will run it (docs/export.md):
//  - megatron:   Megatron-LM command-line arguments;
//  - deepspeed:  a DeepSpeed config (JSON) with the pipeline's layer boundaries;
//  - torchtitan: the TOML sections of a torchtitan job config;
//  - device-map: a Hugging Face Accelerate device_map (JSON, module name -> device) for the
//    op-level placement of a model imported from a PyTorch ONNX export.
// The first three describe a Megatron-style plan (src/plan/megatron_config_of.h), so what
// is written reads back (src/io/plan_import.h) into the same plan. A plan the target cannot
// express throws ValidationError "field: why" naming the part.
//
//   std::string text = export_plan(plan, graph, cluster, ExportFormat::kMegatron);

#include <string>
#include <vector>

#include "src/plan/megatron_plan.h"
#include "src/plan/parallel_layouts.h"

namespace placer {

class Cluster;

enum class ExportFormat : uint8_t { kMegatron, kDeepSpeed, kTorchTitan, kDeviceMap };
/// "megatron", "deepspeed", "torchtitan", "device-map".
const char* to_string(ExportFormat f);
bool parse_export_format(const std::string& s, ExportFormat* out);

/// The plan in format `f`. `notes` (when given) receives what the reader should know but
/// is no error (a device map's module split over devices whose own ops follow their inputs).
std::string export_plan(const Plan& p, const Graph& g, const Cluster& c, ExportFormat f,
                        std::vector<std::string>* notes = nullptr);

/// export_plan for the formats that describe a Megatron-style plan (all but kDeviceMap, for
/// which it returns ""); needs no cluster.
std::string export_megatron_style(const Plan& p, const Graph& g, ExportFormat f);

/// The writers behind export_plan (`layers` = the model's layers, `dtype` = the compute type,
/// `moe` = its mixture-of-experts shape).
std::string megatron_arguments(const MegatronConfig& m, int layers, DType dtype,
                               const MoeShape& moe = {});
std::string deepspeed_config(const MegatronConfig& m, int layers, DType dtype);
std::string torchtitan_config(const MegatronConfig& m, const Plan& p, const Graph& g, DType dtype);
std::string accelerate_device_map(const Plan& p, const Graph& g, const Cluster& c,
                                  std::vector<std::string>* notes);

}  // namespace placer
