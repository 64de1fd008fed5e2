// Activation recomputation (Simulator::Impl::prepare_recompute): which activations are
// rematerialised before backward instead of held, and the workspace that costs.
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "simulator/simulator_impl.h"

namespace placer {

// Activation recomputation: the forward ops of a recomputed layer (full), of its attention
// core (selective) or its non-matmul ops (selective_op), in every layer or every
// recompute_every-th, run again (with their collectives) just before their backward ops;
// their activations are not held from forward to backward, except the layer's inputs
// (tensors read by a forward op of another layer).
// While a layer's backward runs, its rematerialised activations are held: every backward
// op of the layer holds them as workspace, so the peak sees one layer at a time.
void Simulator::Impl::prepare_recompute(const Plan& p) {
  op_ws_run = op_ws;
  t_recomp.assign(n_tensors, 0);
  const bool any = p.recompute != Recompute::kNone ||
                   std::any_of(p.pipeline.stages.begin(), p.pipeline.stages.end(),
                               [](const PipelineStage& s) {
                                 return s.recompute != Recompute::kInherit &&
                                        s.recompute != Recompute::kNone;
                               });
  if (!any) return;
  auto same_devices = [&](OpId a, OpId b) {
    int na = 0, nb = 0;
    const int* da = devs_of(a, &na);
    const int* db = devs_of(b, &nb);
    return na == nb && std::equal(da, da + na, db);
  };
  // Rematerialised bytes per (stage, layer) of one micro-batch.
  std::map<std::pair<int32_t, int32_t>, uint64_t> layer_bytes;
  auto key = [&](OpId o) { return std::make_pair(pipelined ? op_stage[o] : 0, g.op(o).layer); };
  for (OpId f = 0; f < n_ops; ++f) {
    if (op_phase[f] != Phase::kForward || op_input[f] || bwd_off[f] == bwd_off[f + 1]) continue;
    const Recompute rc = pipelined ? p.stage_recompute(static_cast<size_t>(op_stage[f])) : p.recompute;
    const Op& op = g.op(f);
    // recompute_every k: layers k-1, 2k-1, ... only (torchtitan counts layers from 1).
    const bool every =
        p.recompute_every <= 1 || (op.layer >= 0 && (op.layer + 1) % p.recompute_every == 0);
    const bool again =
        every &&
        ((rc == Recompute::kFull && op.layer >= 0) ||
         (rc == Recompute::kSelective && op.scope.find("core_attention") != std::string::npos) ||
         (rc == Recompute::kSelectiveOp && op.layer >= 0 && op.category != OpCategory::kMatMul));
    if (!again) continue;
    op_dur[bwd_of[bwd_off[f]]] += op_dur[f] + op_coll[f];
    for (TensorId t : op.outputs) {
      if (t_grad[t]) continue;
      bool dropped = true;
      for (OpId c : g.consumers(t)) {
        const bool other_layer = op_phase[c] == Phase::kForward && g.op(c).layer != op.layer;
        if (other_layer || !same_devices(f, c)) dropped = false;
      }
      if (!dropped) continue;
      t_recomp[t] = 1;
      layer_bytes[key(f)] += t_bytes[t];
    }
  }
  for (OpId b = 0; b < n_ops; ++b) {
    const OpId f = op_fwd[b];
    if (op_phase[b] != Phase::kBackward || f == kNoOp || g.op(f).layer < 0) continue;
    const auto it = layer_bytes.find(key(f));
    if (it != layer_bytes.end()) op_ws_run[b] += it->second;
  }
}

}  // namespace placer
