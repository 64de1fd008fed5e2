// plan_of_framework_config: a parsed framework configuration as a plan.
#include "src/io/plan_import.h"

#include "src/plan/megatron_config_of.h"
#include "src/plan/parallel_layouts.h"
#include "src/util/error.h"

namespace placer {

namespace {

/// One validator whichever way a plan came in: the export-side checks run on the plan read.
/// A pipeline split the framework cannot write names the argument that set it.
void check_exports_back(const FrameworkConfig& f, const Plan& p, const Graph& g) {
  try {
    export_megatron_style(p, g, *f.format);
  } catch (const ValidationError& e) {
    const std::string what = e.what();
    const std::string field = what.rfind("pipeline.", 0) == 0 ? f.stages_field : "";
    throw ValidationError(format_context("", field,
                                         std::string("the plan read does not export back to ") +
                                             to_string(*f.format) + ": " + what));
  }
}

/// The configuration's mixture-of-experts shape must be the graph's (like its layers).
void check_moe_shape(const FrameworkConfig& f, const Graph& g) {
  if (f.experts == 0) return;
  const MoeShape moe = graph_moe_shape(g);
  if (moe.experts != f.experts || (f.top_k > 0 && moe.top_k != f.top_k)) {
    throw ValidationError("experts: " + std::to_string(f.experts) + " routed experts, top " +
                          std::to_string(f.top_k) + ", but graph '" + g.name() + "' has " +
                          std::to_string(moe.experts) + ", top " + std::to_string(moe.top_k));
  }
}

}  // namespace

Plan plan_of_framework_config(const FrameworkConfig& f, const Graph& g) {
  const int layers = graph_layers(g);
  if (f.layers > 0 && f.layers != layers) {
    throw ValidationError(f.layers_field + ": " + std::to_string(f.layers) + ", but graph '" + g.name() +
                          "' has " + std::to_string(layers) + " layers");
  }
  if (g.batch_size() > 0 && g.batch_size() != f.config.global_batch) {
    throw ValidationError(f.batch_field + ": " + std::to_string(f.config.global_batch) + ", but graph '" +
                          g.name() + "' is built for batch " + std::to_string(g.batch_size()));
  }
  check_moe_shape(f, g);
  Plan p = megatron_plan(g, f.config);
  // Tensor sizes are the graph's; a configuration that computes in another type sets the
  // compute type (the peak FLOP/s it runs at).
  if (f.dtype != plan_compute_dtype(p, g)) {
    p.precision.compute_set = true;
    p.precision.compute = f.dtype;
  }
  if (f.format) check_exports_back(f, p, g);
  return p;
}

}  // namespace placer
