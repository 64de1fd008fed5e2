// export_plan: the format names and the dispatch to the writers (src/io/export_*.cpp).
#include "src/io/plan_export.h"

#include "src/plan/megatron_config_of.h"

namespace placer {

const char* to_string(ExportFormat f) {
  switch (f) {
    case ExportFormat::kMegatron: return "megatron";
    case ExportFormat::kDeepSpeed: return "deepspeed";
    case ExportFormat::kTorchTitan: return "torchtitan";
    case ExportFormat::kDeviceMap: return "device-map";
  }
  return "?";
}

bool parse_export_format(const std::string& s, ExportFormat* out) {
  for (ExportFormat f : {ExportFormat::kMegatron, ExportFormat::kDeepSpeed, ExportFormat::kTorchTitan,
                         ExportFormat::kDeviceMap}) {
    if (s == to_string(f)) {
      *out = f;
      return true;
    }
  }
  return false;
}

std::string export_plan(const Plan& p, const Graph& g, const Cluster& c, ExportFormat f,
                        std::vector<std::string>* notes) {
  if (f == ExportFormat::kDeviceMap) return accelerate_device_map(p, g, c, notes);
  return export_megatron_style(p, g, f);
}

std::string export_megatron_style(const Plan& p, const Graph& g, ExportFormat f) {
  const MegatronConfig m = megatron_config_of(p, g);
  const int layers = graph_layers(g);
  const DType dtype = plan_compute_dtype(p, g);
  switch (f) {
    case ExportFormat::kMegatron:
      return megatron_arguments(m, layers, dtype, graph_moe_shape(g));
    case ExportFormat::kDeepSpeed: return deepspeed_config(m, layers, dtype);
    case ExportFormat::kTorchTitan: return torchtitan_config(m, p, g, dtype);
    case ExportFormat::kDeviceMap: break;
  }
  return "";
}

}  // namespace placer
