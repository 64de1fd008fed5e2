#pragma once
// Checks of a plan's expert-parallel and context-parallel sections (moe_layout.h), run by
// Plan::validate after the pipeline and data-parallel checks, and what they read from the
// graph (attention heads, the mixture-of-experts shape).

#include "src/graph/graph.h"
#include "src/plan/plan.h"

namespace placer {

/// Throws ValidationError naming the field (`context_parallel.degree`,
/// `expert_parallel.layers[2][5]`, ...) when the sections do not fit the plan or the graph.
void validate_parallel_layouts(const Plan& p, const Graph& g);

/// Attention heads of the graph's fused attention ops (their `heads` attribute); 0 when
/// the graph has none.
int attention_heads(const Graph& g);

/// Key / value heads over query heads of an attention op (its `kv_heads` / `heads`
/// attributes): the KV bytes context parallelism exchanges, over its output's bytes, are
/// twice this. 1 without the attributes (multi-head attention).
double kv_heads_share(const Op& op);

/// The mixture-of-experts shape of a graph, from the attributes its generator puts on the
/// routed-expert ops (src/graph/moe_attrs.h; docs/models.md): routed experts
/// per MoE layer, experts per token and MoE layers. All 0 for a dense graph.
struct MoeShape {
  int experts = 0, top_k = 0, layers = 0;
  bool present() const { return experts > 0; }
};
MoeShape graph_moe_shape(const Graph& g);

}  // namespace placer
