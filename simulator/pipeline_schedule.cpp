// Pipeline schedules (Simulator::Impl, set-up part): per pipeline rank, the order its
// forward and backward passes run in (the ready-queue priority slot of each instance) and
// the gates that hold a pass back (GPipe's flush; 1F1B's in-flight limit, interleaved or
// not). The gates are checked and opened by the event loop (simulator_engine.cpp).
#include <algorithm>
#include <array>
#include <vector>

#include "simulator/simulator_impl.h"

namespace placer {

void Simulator::Impl::prepare_pipeline_ranks() {
  gpipe = pipelined && plan->pipeline.schedule == PipelineSchedule::kGPipe;
  // Forward passes before a rank's first backward: Megatron's 1F1B warm-up, and for the
  // interleaved schedule 2 (ranks - r - 1) + (v - 1) ranks (all of them when M = ranks).
  // With the expert all-to-all overlap one more (Megatron-core's combined 1F1B): each
  // backward then runs beside the forward of another micro-batch (pass_order).
  paired_passes = pipelined && plan->expert_parallel.overlap;
  const int64_t paired = paired_passes ? 1 : 0;
  rank_warmup.assign(static_cast<size_t>(n_ranks), 0);
  rank_gated.assign(static_cast<size_t>(n_ranks), 0);
  for (int r = 0; r < n_ranks; ++r) {
    const int64_t total = int64_t(M) * vstages;
    int64_t w = vstages == 1 ? n_ranks - r - 1 : 2 * (n_ranks - r - 1) + int64_t(vstages - 1) * n_ranks;
    if (vstages > 1 && M == n_ranks) w = total;
    w += paired;
    rank_warmup[size_t(r)] = static_cast<int32_t>(std::min(w, total));
  }
}

uint64_t Simulator::Impl::schedule_slot(OpId o, uint32_t j) const {
  const Phase phase = op_phase[o];
  // The order a rank runs its passes in: m passes of each kind, the first w forward
  // passes (warm-up), then one backward, one forward, ..., then the last backwards.
  const int64_t m = int64_t(M) * vstages;
  if (!op_multi[o]) return phase == Phase::kForward ? 0 : static_cast<uint64_t>(2 * m);
  if (gpipe) return phase == Phase::kForward ? j : static_cast<uint64_t>(m + j);
  const int st = op_stage[o];
  const int64_t w = rank_warmup[stage_rank(st)];
  if (phase == Phase::kForward) {
    const int64_t k = fwd_vindex(st, static_cast<int>(j));
    return static_cast<uint64_t>(k < w ? k : w + 2 * (k - w));
  }
  const int64_t k = bwd_vindex(st, static_cast<int>(j));
  // Paired passes: the steady-state backward k shares the slot of forward w + k.
  if (k < m - w) return static_cast<uint64_t>(w + 2 * k + (paired_passes ? 0 : 1));
  return static_cast<uint64_t>(m + k);
}

// The order of a slot's ready ops. Alone, a pass runs in topological order. Paired (the
// expert all-to-all overlap) a forward and a backward pass share a slot and run interleaved
// as Megatron-core's combined 1F1B runs them, layer by layer (the forward's layer i beside the
// backward's layer L - 1 - i): each op is ordered by its place in its pass, the share of its
// stage's ops of its phase before it in topological order.
std::vector<uint32_t> Simulator::Impl::pass_order() const {
  const std::vector<uint32_t>& topo = g.topo_rank();
  if (!paired_passes) return topo;
  std::vector<OpId> by_topo(n_ops);
  for (OpId o = 0; o < n_ops; ++o) by_topo[topo[o]] = o;
  // [stage][backward]: ops of the phase seen so far, then the phase's total.
  std::vector<std::array<uint64_t, 2>> seen(size_t(std::max(n_stages, 1)), {0, 0});
  std::vector<uint64_t> place(n_ops, 0);
  for (OpId o : by_topo) {
    if (!op_multi[o]) continue;
    place[o] = seen[size_t(op_stage[o])][op_phase[o] == Phase::kBackward]++;
  }
  std::vector<uint32_t> order(topo);
  for (OpId o = 0; o < n_ops; ++o) {
    if (!op_multi[o]) continue;
    const bool bwd = op_phase[o] == Phase::kBackward;
    const uint64_t total = seen[size_t(op_stage[o])][bwd];
    // A fraction of 2^30 in the upper bits, the phase in the lowest: distinct per slot.
    order[o] = static_cast<uint32_t>(((place[o] << 30) / total) << 1 | (bwd ? 1 : 0));
  }
  return order;
}

void Simulator::Impl::prepare_pipeline_gates() {
  const size_t ns = static_cast<size_t>(std::max(n_stages, 1));
  bwd_left.assign(ns * M, 0);
  fwd_left.assign(ns * M, 0);
  fwd_left_stage.assign(ns, 0);
  if (held.size() < ns) held.resize(ns);
  for (auto& h : held) h.clear();
  if (pipelined && M > 1) {
    std::vector<int32_t>& bwd_ops = stage_ops_scratch;
    bwd_ops.assign(2 * ns, 0);  // [stage]: backward ops, [ns + stage]: forward ops
    for (OpId o = 0; o < n_ops; ++o) {
      if (!op_multi[o]) continue;
      ++bwd_ops[(op_phase[o] == Phase::kBackward ? 0 : ns) + op_stage[o]];
    }
    for (int s = 0; s < n_stages; ++s) {
      // 1F1B: a rank's forward k waits for its backward k - warmup - 1.
      const int r = stage_rank(s);
      if (!gpipe && bwd_ops[s] > 0 && rank_warmup[r] + 1 < int64_t(M) * vstages) rank_gated[r] = 1;
      fwd_left_stage[s] = bwd_ops[ns + s] * M;
      for (int m = 0; m < M; ++m) {
        bwd_left[static_cast<size_t>(s) * M + m] = bwd_ops[s];
        fwd_left[static_cast<size_t>(s) * M + m] = bwd_ops[ns + s];
      }
    }
  }

}

// Stage-boundary transfers as Megatron-LM sends them: with tensor parallelism the k-th TP
// rank of a stage sends to the k-th TP rank of the next (or, in backward, the previous)
// stage over its own link, instead of every copy leaving through the primary source. A
// tensor each rank holds whole (not a sequence-parallel shard) is sent 1/tp from each rank
// and all-gathered inside the receiving group when the plan keeps scatter / gather on.
void Simulator::Impl::prepare_boundary_transfers() {
  site_sender.resize(sites.size());
  site_wire.resize(sites.size());
  site_gather.assign(sites.size(), 0.0);
  for (TensorId t = 0; t < n_tensors; ++t) {
    for (uint32_t s = site_off[t]; s < site_off[t + 1]; ++s) {
      site_sender[s] = sites[site_off[t]].dev;  // the primary source
      site_wire[s] = t_bytes[t];
    }
    const OpId pr = t_producer[t];
    if (!pipelined || pr == kNoOp || op_part[pr] < 0) continue;
    const OpPartition& q = plan->partitions[op_part[pr]];
    const size_t tp = q.devices.size();
    const bool fwd = op_phase[pr] == Phase::kForward;
    const bool whole = !(fwd ? q.sharded_output : q.sharded_input);
    const bool scatter = whole && plan->pipeline.scatter_gather && tp > 1;
    for (OpId cns : g.consumers(t)) {
      if (op_stage[cns] == op_stage[pr] || op_part[cns] < 0) continue;
      const std::vector<int>& cd = plan->partitions[op_part[cns]].devices;
      if (cd.size() != tp) continue;
      const double gather =
          scatter ? cost.group_collective_time(CollectiveKind::kAllGather, groups[group_index(cd)],
                                               t_bytes[t], SyncScheme::kAuto)
                  : 0.0;
      const size_t run = part_devs(op_part[cns]).size();  // < tp in a symmetric simulation
      for (size_t k = 0; k < run; ++k) {
        const uint32_t s = find_site(t, cd[k]);
        if (sites[s].source || site_sender[s] != sites[site_off[t]].dev) continue;
        site_sender[s] = q.devices[k];
        if (scatter) site_wire[s] = ceil_div(t_bytes[t], tp), site_gather[s] = gather;
      }
    }
  }
}

}  // namespace placer
