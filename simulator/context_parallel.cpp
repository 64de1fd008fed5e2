// Context parallelism (docs/parallelism.md#context-parallelism): a stage's tp x cp x dp
// grid runs every op on 1/(cp x dp) of the micro-batch's tokens (the batch share the stage
// copies already give), gradients are all-reduced over all cp x dp copies (the stage's
// sync group), activations shrink with the share; what the attention adds is the exchange
// of keys and values between the cp ranks of a TP rank (devices tp apart in the grid),
// charged here into the attention op's duration as the time no compute hides:
//  - p2p (Megatron-core / Transformer Engine ring attention, causal load balancing: each
//    rank holds chunks i and 2cp-1-i, so every ring step is 1/cp of its attention work c):
//    forward cp steps, the KV chunk (x seconds to the ring neighbour) sent during each
//    block but the last: exposed (cp-1) x max(0, x - c/cp); backward the KV and its
//    gradient travel together (2x per step) and the last gradient returns after the
//    ring: (cp-1) x max(0, 2x - c_b/cp) + x;
//  - a2a (Ulysses): all-to-all of q, k, v to a head split before the attention and of the
//    output back after it, nothing overlapped; the backward mirrors it;
//  - allgather: all-gather of the KV chunks before the attention; backward all-gathers
//    them again and reduce-scatters their gradients.
#include <algorithm>

#include "simulator/context_parallel.h"
#include "simulator/simulator_impl.h"
#include "src/plan/parallel_layouts.h"

namespace placer {

double context_parallel_p2p_exposed(int cp, double block_compute, double kv_transfer,
                                    bool backward) {
  if (cp < 2) return 0;
  if (!backward) return (cp - 1) * std::max(0.0, kv_transfer - block_compute);
  return (cp - 1) * std::max(0.0, 2 * kv_transfer - block_compute) + kv_transfer;
}

/// Pairwise all-to-all of `local` bytes per rank over `ring`: cp-1 rounds, each sending
/// local / cp to one peer over the slowest pair.
double Simulator::Impl::cp_all_to_all_time(const std::vector<int>& ring, double local) const {
  const size_t n = ring.size();
  const uint64_t part = uint64_t(local / double(n));
  double slowest = 0;
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      if (a != b) slowest = std::max(slowest, cost.transfer_time(ring[a], ring[b], part));
    }
  }
  return double(n - 1) * slowest;
}

/// Seconds of one attention instance (forward op f, or its backward op when `backward`)
/// that no compute hides, for the exchange `comm` over `ring`.
double Simulator::Impl::cp_exposed_time(OpId f, OpId o, bool backward, const std::vector<int>& ring,
                                        ContextParallelComm comm) const {
  const int cp = static_cast<int>(ring.size());
  const Op& op = g.op(f);
  // The op's first output is its context [b, s, h]: q and the output have its bytes, k and
  // v together 2 x kv_heads / heads of it; op_frac is one instance's share on one device.
  const TensorId ctx = op.outputs.empty() ? kNoTensor : op.outputs[0];
  if (ctx == kNoTensor) return 0;
  const double out = double(t_raw[ctx]) * op_frac[f];
  const double kv = 2 * out * kv_heads_share(op);
  switch (comm) {
    case ContextParallelComm::kP2P: {
      double x = 0;
      for (int k = 0; k < cp; ++k) {
        x = std::max(x,
                     cost.transfer_time(ring[size_t(k)], ring[size_t((k + 1) % cp)], uint64_t(kv)));
      }
      return context_parallel_p2p_exposed(cp, op_dur[o] / cp, x, backward);
    }
    case ContextParallelComm::kAllToAll:
      return cp_all_to_all_time(ring, out + kv) + cp_all_to_all_time(ring, out);
    case ContextParallelComm::kAllGather: {
      const uint64_t all = uint64_t(kv * cp);
      const double gather =
          cost.collective_time(CollectiveKind::kAllGather, ring, all, SyncScheme::kAuto);
      if (!backward) return gather;
      return gather +
             cost.collective_time(CollectiveKind::kReduceScatter, ring, all, SyncScheme::kAuto);
    }
  }
  return 0;
}

void Simulator::Impl::prepare_context_parallel(const Plan& p) {
  cp_fwd_wait.assign(size_t(n_dev), 0.0);
  cp_bwd_wait.assign(size_t(n_dev), 0.0);
  const int cp = p.context_parallel.degree;
  if (cp < 2 || !pipelined) return;
  std::vector<int> ring;
  for (OpId f = 0; f < n_ops; ++f) {
    if (op_phase[f] != Phase::kForward || g.op(f).category != OpCategory::kAttention) continue;
    const PipelineStage& st = p.pipeline.stages[size_t(op_stage[f])];
    // The CP ranks of TP rank 0 in data-parallel copy 0: devices tp apart.
    ring.clear();
    for (int k = 0; k < cp; ++k) ring.push_back(st.devices[size_t(k * st.tensor_parallel)]);
    const double inst = op_multi[f] ? M : 1;
    const double fw = cp_exposed_time(f, f, false, ring, p.context_parallel.comm);
    double bw = 0;
    if (bwd_off[f] < bwd_off[f + 1]) {
      const OpId b = bwd_of[bwd_off[f]];
      bw = cp_exposed_time(f, b, true, ring, p.context_parallel.comm);
      op_dur[b] += bw;
      cp_bwd_wait[size_t(op_dev[b])] += inst * bw;
    }
    op_dur[f] += fw;
    cp_fwd_wait[size_t(op_dev[f])] += inst * fw;
  }
}

}  // namespace placer
