#include "src/plan/megatron_plan.h"

#include <algorithm>
#include <string>
#include <vector>

#include "src/util/error.h"

namespace placer {

namespace {
[[noreturn]] void fail(const std::string& m) { throw ValidationError("megatron: " + m); }
}  // namespace

int megatron_micro_batches(const MegatronConfig& m) {
  if (m.tp < 1 || m.pp < 1 || m.dp < 1) fail("tp, pp and dp must be >= 1");
  if (m.micro_batch < 1) fail("micro_batch must be >= 1");
  const int64_t per_step = int64_t(m.micro_batch) * m.dp;
  if (m.global_batch < 1 || m.global_batch % per_step != 0) {
    fail("global_batch " + std::to_string(m.global_batch) + " is not a multiple of micro_batch x dp = " +
         std::to_string(per_step));
  }
  return static_cast<int>(m.global_batch / per_step);
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
  if (m.virtual_stages < 1) fail("virtual_stages must be >= 1");
  const int n_stages = m.pp * m.virtual_stages;
  if (layers < n_stages) {
    fail("pp x virtual_stages = " + std::to_string(n_stages) + " exceeds the graph's " +
         std::to_string(layers) + " layers");
  }
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
  p.pipeline.stages.resize(size_t(n_stages));
  const int per_stage = m.tp * m.dp;
  for (int s = 0; s < n_stages; ++s) {
    PipelineStage& st = p.pipeline.stages[size_t(s)];
    const int rank = s % m.pp;
    for (int k = 0; k < per_stage; ++k) st.devices.push_back(m.first_device + rank * per_stage + k);
    st.tensor_parallel = m.tp;
  }
  // Layer l goes to stage (model chunk) l * stages / layers (Megatron's even split; uneven
  // counts put the extra layers first). Ops outside layers go to the first stage before the
  // first layer and to the last stage after it.
  bool seen_layer = false;
  for (OpId o : fwd) {
    const int l = g.op(o).layer;
    int s;
    if (l >= 0) {
      seen_layer = true;
      s = static_cast<int>(int64_t(l) * n_stages / layers);
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
  return p;
}

}  // namespace placer
