#include "src/plan/megatron_plan.h"

#include <algorithm>
#include <string>
#include <vector>

#include "src/util/checked_math.h"
#include "src/util/error.h"

namespace placer {

namespace {
[[noreturn]] void fail(const std::string& m) { throw ValidationError("megatron: " + m); }
}  // namespace

namespace {
// Megatron-core's rank grids: tp x cp x dp per stage, and the expert grid etp x ep x edp
// over the same ranks (expert data parallelism edp = tp x cp x dp / (etp x ep)).
void check_context_and_expert_parallel(const MegatronConfig& m) {
  if (m.cp < 1 || m.ep < 1 || m.etp < 1) fail("cp, ep and etp must be >= 1");
  const int64_t cp_dp = int64_t(m.cp) * m.dp;
  if (cp_dp % m.ep != 0) {
    fail("ep " + std::to_string(m.ep) + " does not divide cp x dp = " + std::to_string(cp_dp));
  }
  const int64_t ranks = int64_t(m.tp) * cp_dp;
  if (ranks % (int64_t(m.ep) * m.etp) != 0) {
    fail("ep x etp = " + std::to_string(int64_t(m.ep) * m.etp) +
         " does not divide tp x cp x dp = " + std::to_string(ranks));
  }
}
}  // namespace

int megatron_micro_batches(const MegatronConfig& m) {
  if (m.tp < 1 || m.pp < 1 || m.dp < 1) fail("tp, pp and dp must be >= 1");
  check_context_and_expert_parallel(m);
  if (m.micro_batch < 1) fail("micro_batch must be >= 1");
  const int64_t per_step = int64_t(m.micro_batch) * m.dp;
  if (m.global_batch < 1 || m.global_batch % per_step != 0) {
    fail("global_batch " + std::to_string(m.global_batch) + " is not a multiple of micro_batch x dp = " +
         std::to_string(per_step));
  }
  return static_cast<int>(m.global_batch / per_step);
}

std::vector<int> megatron_stage_layers(const MegatronConfig& m, int layers) {
  if (m.pp < 1) fail("tp, pp and dp must be >= 1");
  if (m.virtual_stages < 1) fail("virtual_stages must be >= 1");
  const int n = checked_mul(m.pp, m.virtual_stages, "megatron: pp x virtual_stages");
  if (layers < n) {
    fail("pp x virtual_stages = " + std::to_string(n) + " exceeds the graph's " +
         std::to_string(layers) + " layers");
  }
  std::vector<int> count(size_t(n), 0);
  if (m.first_stage_layers == 0 && m.last_stage_layers == 0) {
    // Megatron's even split; uneven counts put the extra layers first (layer l on stage
    // l * n / layers).
    for (int l = 0; l < layers; ++l) ++count[size_t(int64_t(l) * n / layers)];
    return count;
  }
  if (m.first_stage_layers < 0 || m.last_stage_layers < 0) fail("first / last stage layers must be >= 0");
  if (m.virtual_stages > 1) fail("an uneven first / last stage needs virtual_stages 1");
  if (n < 2) fail("an uneven first / last stage needs pp >= 2");
  // The stages not set explicitly share the rest evenly.
  const int fixed = (m.first_stage_layers > 0) + (m.last_stage_layers > 0);
  const int rest = layers - m.first_stage_layers - m.last_stage_layers;
  const int others = n - fixed;
  if (rest < 0 || (others == 0 && rest != 0) || (others > 0 && (rest % others != 0 || rest == 0))) {
    fail("first / last stage layers " + std::to_string(m.first_stage_layers) + " / " +
         std::to_string(m.last_stage_layers) + " leave " + std::to_string(rest) + " of " +
         std::to_string(layers) + " layers, not a positive multiple of the other " +
         std::to_string(others) + " stages");
  }
  for (int s = 0; s < n; ++s) count[size_t(s)] = others > 0 ? rest / others : 0;
  if (m.first_stage_layers > 0) count.front() = m.first_stage_layers;
  if (m.last_stage_layers > 0) count.back() = m.last_stage_layers;
  return count;
}

bool megatron_fit_stage_layers(MegatronConfig* m, const std::vector<int>& count, int layers) {
  if (count.empty()) return false;
  const int n = static_cast<int>(count.size());
  std::vector<std::pair<int, int>> candidates = {{count.front(), 0}, {0, count.back()}, {count.front(), count.back()}};
  // The even split first when Megatron-LM accepts it (layers divisible by the stages), last
  // otherwise: 5 layers on 2 stages are then "first stage 3", which Megatron-LM can run.
  if (layers % n == 0) {
    candidates.insert(candidates.begin(), {0, 0});
  } else {
    candidates.push_back({0, 0});
  }
  for (const auto& [first, last] : candidates) {
    if ((first > 0 || last > 0) && (m->virtual_stages > 1 || n < 2)) continue;
    MegatronConfig c = *m;
    c.first_stage_layers = first;
    c.last_stage_layers = last;
    try {
      if (megatron_stage_layers(c, layers) != count) continue;
    } catch (const ValidationError&) {
      continue;
    }
    *m = c;
    return true;
  }
  return false;
}

Plan megatron_plan(const Graph& g, const MegatronConfig& m) {
  const int M = megatron_micro_batches(m);
  if (m.zero_stage < 0 || m.zero_stage > 3) fail("zero_stage must be 0..3");
  if (g.batch_size() > 0 && g.batch_size() != m.global_batch) {
    fail("graph '" + g.name() + "' is built for batch " + std::to_string(g.batch_size()) +
         ", the configuration's global batch is " + std::to_string(m.global_batch));
  }
  // Forward ops in topological order; layers numbered 0..L-1.
  std::vector<OpId> fwd;
  int layers = 0;
  for (OpId o : g.topo_order()) {
    if (g.op(o).phase != Phase::kForward) continue;
    fwd.push_back(o);
    layers = std::max(layers, g.op(o).layer + 1);
  }
  const std::vector<int> stage_layers = megatron_stage_layers(m, layers);
  const int n_stages = static_cast<int>(stage_layers.size());
  // first_layer[s]: the first layer of stage s; first_layer[n_stages] = layers.
  std::vector<int> first_layer(size_t(n_stages) + 1, 0);
  for (int s = 0; s < n_stages; ++s) first_layer[size_t(s) + 1] = first_layer[size_t(s)] + stage_layers[size_t(s)];
  if (m.virtual_stages > 1 && M % m.pp != 0) {
    fail("interleaved 1F1B needs micro-batches (" + std::to_string(M) +
         ") to be a multiple of pp " + std::to_string(m.pp));
  }
  Plan p;
  p.graph_name = g.name();
  p.method = "megatron";
  p.pipeline.micro_batches = M;
  p.pipeline.schedule = m.schedule;
  p.pipeline.virtual_stages = m.virtual_stages;
  p.pipeline.scatter_gather = m.scatter_gather;
  p.pipeline.stages.resize(size_t(n_stages));
  const int per_stage =
      checked_mul(checked_mul(m.tp, m.cp, "megatron: tp x cp"), m.dp, "megatron: tp x cp x dp");
  checked_add(m.first_device, checked_mul(per_stage, m.pp, "megatron: tp x cp x dp x pp"),
              "megatron: first_device + tp x cp x dp x pp");
  for (int s = 0; s < n_stages; ++s) {
    PipelineStage& st = p.pipeline.stages[size_t(s)];
    const int rank = s % m.pp;
    for (int k = 0; k < per_stage; ++k) st.devices.push_back(m.first_device + rank * per_stage + k);
    st.tensor_parallel = m.tp;
  }
  // Layer l goes to the stage (model chunk) whose layer range holds it. Ops outside layers
  // go to the first stage before the first layer and to the last stage after it.
  bool seen_layer = false;
  for (OpId o : fwd) {
    const int l = g.op(o).layer;
    int s;
    if (l >= 0) {
      seen_layer = true;
      s = static_cast<int>(std::upper_bound(first_layer.begin(), first_layer.end(), l) - first_layer.begin()) - 1;
    } else {
      s = seen_layer ? n_stages - 1 : 0;
    }
    p.pipeline.stages[size_t(s)].ops.push_back(o);
  }
  for (int s = 0; s < n_stages; ++s) {
    if (p.pipeline.stages[size_t(s)].ops.empty()) fail("stage " + std::to_string(s) + " has no ops");
  }
  // Placement (informational under a pipeline): every op on its stage's first device.
  p.placement.assign(g.num_ops(), m.first_device);
  for (const PipelineStage& st : p.pipeline.stages) {
    for (OpId o : st.ops) p.placement[o] = st.devices[0];
  }
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const OpId f = g.op(o).forward_op;
    if (f < g.num_ops() && g.op(o).phase != Phase::kForward) p.placement[o] = p.placement[f];
  }
  if (m.tp > 1) p.tensor_parallel.degree = m.tp;
  p.tensor_parallel.sequence_parallel = m.sequence_parallel && m.tp > 1;
  p.recompute = m.recompute;
  p.data_parallel.zero_stage = m.zero_stage;
  p.data_parallel.overlap = m.overlap_grad_reduce;
  p.precision.loss_scaling = m.loss_scaling;
  p.precision.grad_clipping = m.grad_clipping;
  p.precision.fp8 = m.fp8;
  p.recompute_every = m.recompute_every;
  p.data_parallel.fsdp = m.fsdp;
  p.context_parallel.degree = m.cp;
  p.context_parallel.comm = m.cp_comm;
  if (m.ep > 1 || m.etp > 1) {
    p.expert_parallel.degree = m.ep;
    p.expert_parallel.tensor_parallel = m.etp;
    p.expert_parallel.dispatcher = m.dispatcher;
    p.expert_parallel.overlap = m.moe_a2a_overlap;
  }
  return p;
}

}  // namespace placer
