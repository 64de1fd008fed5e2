#include "src/plan/parallel_layouts.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/graph/moe_attrs.h"
#include "src/util/error.h"

namespace placer {

namespace {

[[noreturn]] void fail(const std::string& field, const std::string& message) {
  throw ValidationError(format_context("", field, message));
}

std::string num(long long v) { return std::to_string(v); }

/// Device groups a section's degree must divide: each stage's tp x cp x dp grid without
/// its TP ranks (cp x dp), or the replicas of an unpipelined plan.
std::vector<std::pair<std::string, int>> copy_groups(const Plan& p) {
  std::vector<std::pair<std::string, int>> out;
  for (size_t s = 0; s < p.pipeline.stages.size(); ++s) {
    out.emplace_back("pipeline.stages[" + num(long(s)) + "]", p.pipeline.stages[s].data_parallel());
  }
  return out;
}

void validate_context_parallel(const Plan& p, const Graph& g) {
  const ContextParallelConfig& cp = p.context_parallel;
  const std::string f = "context_parallel";
  if (cp.degree < 1) fail(f + ".degree", "must be >= 1 (got " + num(cp.degree) + ")");
  if (!cp.enabled()) return;
  if (!p.pipeline.enabled()) {
    fail(f,
         "needs pipeline stages (each a tensor_parallel x context_parallel x data-parallel "
         "grid of devices)");
  }
  for (const auto& [field, copies] : copy_groups(p)) {
    if (copies % cp.degree != 0) {
      fail(f + ".degree", num(cp.degree) + " does not divide the " + num(copies) +
                              " data-parallel copies of " + field +
                              " (its devices / tensor_parallel)");
    }
  }
  if (cp.comm == ContextParallelComm::kAllToAll) {
    const int heads = attention_heads(g);
    int tp = std::max(1, p.tensor_parallel.degree);
    for (const PipelineStage& st : p.pipeline.stages) tp = std::max(tp, st.tensor_parallel);
    if (heads > 0 && heads % (tp * cp.degree) != 0) {
      fail(f + ".comm",
           "a2a splits the " + num(heads) + " attention heads over tensor_parallel x " +
               "context_parallel = " + num(tp * cp.degree) + " ranks, which must divide them");
    }
  }
}

void validate_expert_layer(const ExpertLayerMap& layer, int degree, const std::string& f) {
  if (layer.replicas.empty()) fail(f, "lists no experts");
  std::vector<int> load(size_t(degree), 0);
  for (size_t e = 0; e < layer.replicas.size(); ++e) {
    const std::string ef = f + "[" + num(long(e)) + "]";
    const std::vector<int>& ranks = layer.replicas[e];
    if (ranks.empty()) fail(ef, "expert " + num(long(e)) + " is on no rank");
    for (size_t k = 0; k < ranks.size(); ++k) {
      if (ranks[k] < 0 || ranks[k] >= degree) {
        fail(ef, "rank " + num(ranks[k]) + " is out of range (expert_parallel.degree " +
                     num(degree) + ": ranks 0.." + num(degree - 1) + ")");
      }
      if (std::find(ranks.begin(), ranks.begin() + long(k), ranks[k]) != ranks.begin() + long(k)) {
        fail(ef, "rank " + num(ranks[k]) + " is listed twice");
      }
      ++load[size_t(ranks[k])];
    }
  }
  for (int r = 0; r < degree; ++r) {
    if (load[size_t(r)] == 0) fail(f, "rank " + num(r) + " holds no expert");
  }
}

// What Megatron-core asserts for --overlap-moe-expert-parallel-comm: expert parallelism, and
// micro-batches to pair (virtual stages when there is more than one pipeline rank); no full
// recomputation (a recomputed layer's backward cannot be split into the paired chunks).
void validate_expert_overlap(const Plan& p) {
  const std::string f = "expert_parallel.overlap";
  if (p.expert_parallel.degree < 2) fail(f, "needs expert_parallel.degree > 1");
  if (!p.pipeline.enabled()) {
    fail(f, "needs pipeline stages (it pairs the passes of their micro-batches)");
  }
  if (p.pipeline.ranks() > 1 && p.pipeline.virtual_stages < 2) {
    fail(f, "needs pipeline.virtual_stages > 1 with " + num(p.pipeline.ranks()) +
                " pipeline ranks (Megatron-core's interleaved schedule)");
  }
  bool full = p.recompute == Recompute::kFull;
  for (const PipelineStage& st : p.pipeline.stages) full = full || st.recompute == Recompute::kFull;
  if (full) fail(f, "cannot run with full recomputation");
}

void validate_expert_parallel(const Plan& p, const Graph& g) {
  const ExpertParallelConfig& ep = p.expert_parallel;
  const std::string f = "expert_parallel";
  if (ep.degree < 1) fail(f + ".degree", "must be >= 1 (got " + num(ep.degree) + ")");
  if (ep.tensor_parallel < 1) {
    fail(f + ".tensor_parallel", "must be >= 1 (got " + num(ep.tensor_parallel) + ")");
  }
  if (ep.overlap) validate_expert_overlap(p);
  if (!ep.enabled()) return;
  // Megatron-core's expert grid: etp x ep x edp ranks over the tp x cp x dp ranks of a stage.
  const int ranks = ep.degree * ep.tensor_parallel;
  std::vector<std::pair<std::string, int>> groups;
  for (size_t s = 0; s < p.pipeline.stages.size(); ++s) {
    groups.emplace_back("pipeline.stages[" + num(long(s)) + "]",
                        int(p.pipeline.stages[s].devices.size()));
  }
  if (groups.empty()) groups.emplace_back("data_parallel.replicas", p.data_parallel.replicas);
  for (const auto& [field, devices] : groups) {
    if (devices % ranks != 0) {
      fail(f, "degree x tensor_parallel = " + num(ranks) + " does not divide the " + num(devices) +
                  " devices of " + field);
    }
  }
  const MoeShape moe = graph_moe_shape(g);
  if (moe.present() && moe.experts % ep.degree != 0 && ep.layers.empty()) {
    fail(f + ".degree", num(ep.degree) + " does not divide the graph's " + num(moe.experts) +
                            " experts per layer (give an expert map under layers)");
  }
  if (moe.layers > 0 && !ep.layers.empty() && int(ep.layers.size()) != moe.layers) {
    fail(f + ".layers", "maps " + num(long(ep.layers.size())) + " layers; the graph has " +
                            num(moe.layers) + " mixture-of-experts layers");
  }
  for (size_t l = 0; l < ep.layers.size(); ++l) {
    if (moe.present() && int(ep.layers[l].replicas.size()) != moe.experts) {
      fail(f + ".layers[" + num(long(l)) + "]", "lists " + num(long(ep.layers[l].replicas.size())) +
                                                    " experts; the graph's layers have " +
                                                    num(moe.experts));
    }
    validate_expert_layer(ep.layers[l], ep.degree, f + ".layers[" + num(long(l)) + "]");
  }
}

}  // namespace

MoeShape graph_moe_shape(const Graph& g) {
  MoeShape m;
  for (const Op& o : g.ops()) {
    if (o.phase != Phase::kForward) continue;
    for (const auto& [key, value] : o.attrs) {
      const int v = std::atoi(value.c_str());
      if (key == kMoeExpertsAttr) m.experts = std::max(m.experts, v);
      if (key == kMoeTopKAttr) m.top_k = std::max(m.top_k, v);
      if (key == kMoeLayerAttr) m.layers = std::max(m.layers, v + 1);
    }
  }
  return m;
}

double kv_heads_share(const Op& op) {
  int heads = 0, kv = 0;
  for (const auto& [key, value] : op.attrs) {
    if (key == "heads") heads = std::atoi(value.c_str());
    if (key == "kv_heads") kv = std::atoi(value.c_str());
  }
  return heads > 0 && kv > 0 ? double(kv) / heads : 1.0;
}

int attention_heads(const Graph& g) {
  for (const Op& o : g.ops()) {
    if (o.category != OpCategory::kAttention || o.phase != Phase::kForward) continue;
    for (const auto& [key, value] : o.attrs) {
      if (key == "heads") return std::atoi(value.c_str());
    }
  }
  return 0;
}

void validate_parallel_layouts(const Plan& p, const Graph& g) {
  validate_context_parallel(p, g);
  validate_expert_parallel(p, g);
}

}  // namespace placer
