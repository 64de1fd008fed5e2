#include "src/plan/megatron_config_of.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "src/util/error.h"

namespace placer {

namespace {

[[noreturn]] void fail(const std::string& field, const std::string& message) {
  throw ValidationError(format_context("", field, message));
}

std::string stage_field(size_t s) { return "pipeline.stages[" + std::to_string(s) + "]"; }

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

/// The stage's tensor-parallel degree: its own, or the plan's shorthand degree when the
/// stage leaves it at 1 (as the expansion does).
int stage_tp(const Plan& p, const PipelineStage& st) {
  return st.tensor_parallel > 1 ? st.tensor_parallel : std::max(1, p.tensor_parallel.degree);
}

/// Layers per stage, after checking that every layer lies in one stage and the stages hold
/// consecutive layer ranges in stage order.
std::vector<int> layers_per_stage(const Plan& p, const Graph& g, int layers) {
  std::vector<int> stage_of(size_t(layers), -1);
  for (size_t s = 0; s < p.pipeline.stages.size(); ++s) {
    for (OpId o : p.pipeline.stages[s].ops) {
      const int l = g.op(o).layer;
      if (l < 0) continue;
      int& owner = stage_of[size_t(l)];
      if (owner >= 0 && owner != int(s)) {
        fail(stage_field(s), "layer " + std::to_string(l) + " is split between stages " +
                                 std::to_string(owner) + " and " + std::to_string(s) +
                                 " (op '" + g.op(o).name +
                                 "'); frameworks cut pipelines between whole layers");
      }
      owner = int(s);
    }
  }
  std::vector<int> count(p.pipeline.stages.size(), 0);
  int prev = 0;
  for (int l = 0; l < layers; ++l) {
    const int s = stage_of[size_t(l)];
    if (s < 0) fail("pipeline.stages", "layer " + std::to_string(l) + " has no forward op in any stage");
    if (s < prev) {
      fail(stage_field(size_t(s)), "holds layer " + std::to_string(l) + " after stage " +
                                       std::to_string(prev) + " holds layer " + std::to_string(l - 1) +
                                       ": the stages are not contiguous in layer order");
    }
    prev = s;
    ++count[size_t(s)];
  }
  for (size_t s = 0; s < count.size(); ++s) {
    if (count[s] == 0) fail(stage_field(s), "holds no whole layer; every framework stage holds at least one");
  }
  return count;
}

std::string device_names(const std::vector<int>& devices) {
  std::string s;
  for (int d : devices) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
}

/// Compares the plan with megatron_plan's rebuild, stage by stage.
void check_rebuild(const Plan& p, const Plan& r, const Graph& g) {
  for (size_t s = 0; s < p.pipeline.stages.size(); ++s) {
    const PipelineStage& a = p.pipeline.stages[s];
    const PipelineStage& b = r.pipeline.stages[s];
    if (a.devices != b.devices) {
      fail(stage_field(s) + ".devices",
           "devices " + device_names(a.devices) +
               " are not Megatron's rank order, which puts this stage on " +
               device_names(b.devices) +
               " (tensor-parallel fastest, then context-parallel, then data-parallel, then "
               "pipeline)");
    }
    std::vector<OpId> x = a.ops, y = b.ops;
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    if (x == y) continue;
    std::vector<OpId> extra;
    std::set_difference(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(extra));
    const OpId o = extra.empty() ? y.front() : extra.front();
    fail(stage_field(s), "op '" + g.op(o).name + "' " + (extra.empty() ? "is missing" : "does not belong here") +
                             ": Megatron puts the ops before the first layer on the first stage and "
                             "those after the last layer on the last stage");
  }
}

/// Context and expert parallelism as Megatron-LM runs them: the plan's degrees; an explicit
/// expert map is not Megatron's (it places expert e on EP rank e / (experts / ep)).
void read_context_and_expert_parallel(const Plan& p, MegatronConfig* m) {
  m->cp = p.context_parallel.degree;
  m->cp_comm = p.context_parallel.comm;
  m->ep = p.expert_parallel.degree;
  m->etp = p.expert_parallel.tensor_parallel;
  m->dispatcher = p.expert_parallel.dispatcher;
  m->moe_a2a_overlap = p.expert_parallel.overlap;
  if (!p.expert_parallel.layers.empty()) {
    fail("expert_parallel.layers",
         "an explicit expert map of " + std::to_string(p.expert_parallel.layers.size()) +
             " layers; Megatron-LM places expert e on EP rank e / (experts / ep)");
  }
}

}  // namespace

int graph_layers(const Graph& g) {
  int layers = 0;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    if (g.op(o).phase == Phase::kForward) layers = std::max(layers, g.op(o).layer + 1);
  }
  return layers;
}

DType plan_compute_dtype(const Plan& p, const Graph& g) {
  if (p.precision.compute_set) return p.precision.compute;
  std::map<DType, double> flops;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const Op& op = g.op(o);
    if (op.phase != Phase::kForward) continue;
    if (op.dtype == DType::kF32 || op.dtype == DType::kF16 || op.dtype == DType::kBF16) flops[op.dtype] += op.flops;
  }
  DType best = DType::kF32;
  double most = -1;
  for (const auto& [t, f] : flops) {
    if (f > most) most = f, best = t;
  }
  return best;
}

MegatronConfig megatron_config_of(const Plan& p, const Graph& g) {
  const PipelineConfig& pl = p.pipeline;
  if (!pl.enabled()) {
    fail("pipeline", "none: the plan places ops one by one (placement); a framework configuration "
                     "describes pipeline stages of whole layers");
  }
  if (!p.partitions.empty()) {
    fail("partitions", std::to_string(p.partitions.size()) + " explicit per-op partitions (first: op '" +
                           g.op(p.partitions.front().op).name +
                           "'); only the tensor_parallel shorthand is a framework's tensor parallelism");
  }
  if (p.data_parallel.replicas != 1) {
    fail("data_parallel.replicas", std::to_string(p.data_parallel.replicas) +
                                       " replicas of the whole plan; data parallelism must be the stage grid "
                                       "(a stage's devices / tensor_parallel)");
  }
  if (p.data_parallel.sync != SyncScheme::kRing && p.data_parallel.sync != SyncScheme::kAuto) {
    fail("data_parallel.sync", std::string(to_string(p.data_parallel.sync)) +
                                   ": frameworks all-reduce gradients with NCCL (ring)");
  }
  const int layers = graph_layers(g);
  if (layers == 0) fail("graph", "'" + g.name() + "' has no layered forward ops (op layer indices)");

  MegatronConfig m;
  m.virtual_stages = pl.virtual_stages;
  m.scatter_gather = pl.scatter_gather;
  m.pp = pl.ranks();
  m.tp = stage_tp(p, pl.stages[0]);
  read_context_and_expert_parallel(p, &m);
  m.dp = static_cast<int>(pl.stages[0].devices.size()) / (m.tp * m.cp);
  for (size_t s = 0; s < pl.stages.size(); ++s) {
    const PipelineStage& st = pl.stages[s];
    if (stage_tp(p, st) != m.tp || int(st.devices.size()) != m.tp * m.cp * m.dp) {
      fail(stage_field(s),
           std::to_string(st.devices.size()) + " devices with tensor_parallel " +
               std::to_string(stage_tp(p, st)) + ", stage 0 has " +
               std::to_string(m.tp * m.cp * m.dp) + " with " + std::to_string(m.tp) +
               "; every stage must use the same tensor x context x data-parallel grid");
    }
    if (st.recompute != Recompute::kInherit && st.recompute != p.recompute) {
      fail(stage_field(s) + ".recompute", std::string(to_string(st.recompute)) + " differs from the plan's " +
                                              to_string(p.recompute) + "; one recomputation for all stages");
    }
  }
  if (m.tp > 1 && p.tensor_parallel.degree != m.tp) {
    fail("tensor_parallel.degree", std::to_string(p.tensor_parallel.degree) +
                                       " differs from the stages' tensor_parallel " + std::to_string(m.tp));
  }
  const int64_t batch = g.batch_size();
  const int64_t per_micro = int64_t(m.dp) * pl.micro_batches;
  if (batch <= 0) fail("graph", "'" + g.name() + "' has no batch size; a framework needs the global batch");
  if (batch % per_micro != 0) {
    fail("pipeline.micro_batches",
         std::to_string(pl.micro_batches) + " micro-batches x " + std::to_string(m.dp) +
             " data-parallel ranks do not divide the batch " + std::to_string(batch) + ": " +
             std::to_string(double(batch) / double(per_micro)) +
             " samples per micro-batch and rank (frameworks need whole samples)");
  }
  m.global_batch = static_cast<int>(batch);
  m.micro_batch = static_cast<int>(batch / per_micro);
  m.recompute = p.recompute;
  m.sequence_parallel = p.tensor_parallel.sequence_parallel && m.tp > 1;
  m.zero_stage = p.data_parallel.zero_stage;
  m.overlap_grad_reduce = p.data_parallel.overlap;
  m.schedule = pl.schedule;
  m.first_device = pl.stages[0].devices.front();
  m.loss_scaling = p.precision.loss_scaling;
  m.grad_clipping = p.precision.grad_clipping;
  m.fp8 = p.precision.fp8;
  m.recompute_every = p.recompute_every;
  m.fsdp = p.data_parallel.fsdp;
  const std::vector<int> count = layers_per_stage(p, g, layers);
  if (!megatron_fit_stage_layers(&m, count, layers)) {
    fail("pipeline.stages", "layers per stage {" + join(count) +
                                "} are neither an even split nor an even split with a different "
                                "first / last stage" +
                                (m.virtual_stages > 1 ? " (virtual stages must be even)" : ""));
  }
  check_rebuild(p, megatron_plan(g, m), g);
  return m;
}

}  // namespace placer
