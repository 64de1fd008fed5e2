// Operator partitioning (Simulator::Impl::prepare_partition_collectives): the collective
// group of each partition and the collective (kind, bytes, seconds) that every instance of
// a partitioned op ends with (docs/simulator.md, "Operator partitioning").
#include <algorithm>
#include <vector>

#include "simulator/cost_model.h"
#include "simulator/simulator_impl.h"

namespace placer {

namespace {

// 2^(number of levels before `skip` for which `shards(level dim)` holds). Level l's
// collective works on what the earlier levels left: a recursive all-gather of [0, 0, 0]
// over 8 devices costs B/2 + B/4 + B/8 per device (= an 8-way ring's 7/8 B), not 3 x B/8.
template <typename Pred>
uint64_t other_levels_div(const OpPartition& q, size_t skip, Pred shards) {
  uint64_t d = 1;
  for (size_t l = 0; l < skip && l < q.levels.size(); ++l) d *= shards(q.levels[l]) ? 2 : 1;
  return d;
}

}  // namespace

void Simulator::Impl::prepare_partition_collectives(const Plan& p) {
  // Partition groups and the collective each partitioned instance ends with.
  part_group.resize(p.partitions.size());
  for (size_t i = 0; i < p.partitions.size(); ++i) {
    part_group[i] = group_index(p.partitions[i].devices);
  }
  // Recursive halving: level l's collective runs between the 2 devices that differ at that
  // level; all pairs run at once, so the pair of the first device stands for them.
  std::vector<std::vector<uint32_t>> level_group(p.partitions.size());
  for (size_t i = 0; i < p.partitions.size(); ++i) {
    const OpPartition& q = p.partitions[i];
    for (size_t l = 0; l < q.levels.size(); ++l) {
      const size_t stride = q.devices.size() >> (l + 1);
      level_group[i].push_back(group_index({q.devices[0], q.devices[stride]}));
    }
  }
  op_coll.assign(n_ops, 0.0);
  op_coll_bytes.assign(n_ops, 0);
  op_coll_kind.assign(n_ops, 0);
  op_group.assign(n_ops, 0);
  for (OpId o = 0; o < n_ops; ++o) {
    if (op_part[o] < 0) continue;
    const OpPartition& q = p.partitions[op_part[o]];
    if (q.devices.size() < 2 || q.replicated) continue;
    const Op& op = g.op(o);
    if (op.phase == Phase::kOptimizer) continue;  // each device updates its shard / copy
    op_group[o] = part_group[op_part[o]];
    const PartitionCollective pc =
        op.phase == Phase::kBackward ? q.backward_collective : q.forward_collective;
    if (pc != PartitionCollective::kAuto) {
      named_partition_collective(o, pc);
      continue;
    }
    uint64_t act = 0, grad = 0;
    for (TensorId t : op.outputs) (g.tensor(t).is_param_grad ? grad : act) += t_bytes[t];
    if (!q.levels.empty()) {
      halving_partition_collective(o, q, level_group[op_part[o]], act, grad);
    } else {
      split_partition_collective(o, q, act, grad);
    }
  }
}

// A named collective moves the whole tensor of one micro-batch share: forward, the op's
// output; backward, the gradient of the forward op's first input.
void Simulator::Impl::named_partition_collective(OpId o, PartitionCollective pc) {
  if (pc == PartitionCollective::kNone) return;
  const Op& op = g.op(o);
  const OpId f = op.phase == Phase::kBackward ? op_fwd[o] : o;
  if (f == kNoOp) return;
  const Op& fop = g.op(f);
  const std::vector<TensorId>& ts = op.phase == Phase::kBackward ? fop.inputs : fop.outputs;
  if (ts.empty()) return;
  const TensorId t = ts[0];
  const uint64_t b = t_scaled[t] ? ceil_div(t_raw[t], static_cast<uint64_t>(op_bdiv[f])) : t_raw[t];
  const CollectiveKind k = pc == PartitionCollective::kAllReduce   ? CollectiveKind::kAllReduce
                           : pc == PartitionCollective::kAllGather ? CollectiveKind::kAllGather
                                                                   : CollectiveKind::kReduceScatter;
  op_coll_bytes[o] = b;
  op_coll_kind[o] = static_cast<uint8_t>(k);
  op_coll[o] = cost.group_collective_time(k, groups[op_group[o]], b, SyncScheme::kAuto);
}

// Recursive halving: one collective per level, back to back, each on the level's share of
// the tensor: its bytes divided by 2 per OTHER level that shards it.
void Simulator::Impl::halving_partition_collective(OpId o, const OpPartition& q,
                                                   const std::vector<uint32_t>& lg, uint64_t act,
                                                   uint64_t grad) {
  const bool backward = g.op(o).phase == Phase::kBackward;
  double t = 0;
  uint64_t total = 0;
  for (size_t l = 0; l < q.levels.size(); ++l) {
    const CollectiveGroup& pg = groups[lg[l]];
    const int dl = q.levels[l];
    if (backward) {
      // Input gradients are sliced by batch / contraction levels, partial sums otherwise.
      const uint64_t b = ceil_div(act, other_levels_div(q, l, [](int d) { return d <= 0; }));
      const CollectiveKind k = dl >= 1 ? CollectiveKind::kAllReduce : CollectiveKind::kAllGather;
      if (b > 0) t += cost.group_collective_time(k, pg, b, SyncScheme::kAuto);
      total += b;
      // Parameter gradients: partial sums across batch levels only; t_bytes already
      // holds the shard left by the non-batch levels.
      if (dl == 0 && grad > 0) {
        t += cost.group_collective_time(CollectiveKind::kAllReduce, pg, grad, SyncScheme::kAuto);
        total += grad;
      }
    } else {
      // Outputs are sliced by every level except contraction ones (partial sums).
      const uint64_t b = ceil_div(
          act + grad, other_levels_div(q, l, [](int d) { return d != OpPartition::kReduceDim; }));
      const CollectiveKind k =
          dl == OpPartition::kReduceDim ? CollectiveKind::kAllReduce : CollectiveKind::kAllGather;
      if (b > 0) t += cost.group_collective_time(k, pg, b, SyncScheme::kAuto);
      total += b;
    }
  }
  op_coll_bytes[o] = total;
  op_coll[o] = t;
  const bool any_reduce = std::any_of(q.levels.begin(), q.levels.end(), [&](int dl) {
    return backward ? dl >= 1 : dl == OpPartition::kReduceDim;
  });
  op_coll_kind[o] =
      static_cast<uint8_t>(any_reduce ? CollectiveKind::kAllReduce : CollectiveKind::kAllGather);
}

// One split over all the partition's devices.
void Simulator::Impl::split_partition_collective(OpId o, const OpPartition& q, uint64_t act,
                                                 uint64_t grad) {
  const CollectiveGroup& grp = groups[op_group[o]];
  double t = 0;
  if (g.op(o).phase == Phase::kBackward) {
    // Input gradients: partial sums over an output-dim split (all-reduce), slices of a
    // batch or contraction split (all-gather). Parameter gradients: partial sums only
    // under a batch split (all-reduce); sharded otherwise.
    // Under sharded_input the input gradients stay sharded (no collective).
    const CollectiveKind k = q.dim >= 1 ? CollectiveKind::kAllReduce : CollectiveKind::kAllGather;
    op_coll_kind[o] =
        static_cast<uint8_t>(act > 0 && !q.sharded_input ? k : CollectiveKind::kAllReduce);
    if (q.sharded_input) act = 0;
    if (act > 0) t += cost.group_collective_time(k, grp, act, SyncScheme::kAuto);
    if (q.dim == 0 && grad > 0) {
      t += cost.group_collective_time(CollectiveKind::kAllReduce, grp, grad, SyncScheme::kAuto);
    }
    op_coll_bytes[o] = act + (q.dim == 0 ? grad : 0);
  } else {
    const CollectiveKind k =
        q.dim == OpPartition::kReduceDim ? CollectiveKind::kAllReduce : CollectiveKind::kAllGather;
    const uint64_t b = q.sharded_output ? 0 : act + grad;
    op_coll_kind[o] = static_cast<uint8_t>(k);
    if (b > 0) t = cost.group_collective_time(k, grp, b, SyncScheme::kAuto);
    op_coll_bytes[o] = b;
  }
  op_coll[o] = t;
}

}  // namespace placer
