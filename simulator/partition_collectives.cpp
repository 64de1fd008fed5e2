// Operator partitioning (Simulator::Impl::prepare_partition_collectives): the collective
// group of each partition and the collective (kind, bytes, seconds) that every instance of
// a partitioned op ends with (docs/simulator.md, "Operator partitioning").
#include <algorithm>
#include <vector>

#include "simulator/cost_model.h"
#include "simulator/partition_collective_rules.h"
#include "simulator/simulator_impl.h"

namespace placer {

namespace {

// The kind the counters record for a partitioned instance's collectives: all-reduce when a
// level sums partial results (backward: an output-dim level; forward: a contraction level),
// and for a one-level backward split with no input gradients to gather.
CollectiveKind recorded_kind(const OpPartition& q, bool backward, uint64_t act) {
  if (q.levels.empty() && backward && (act == 0 || q.sharded_input)) {
    return CollectiveKind::kAllReduce;
  }
  const std::vector<int> levels = q.levels.empty() ? std::vector<int>{q.dim} : q.levels;
  const bool any_reduce = std::any_of(levels.begin(), levels.end(), [&](int dl) {
    return backward ? dl >= 1 : dl == OpPartition::kReduceDim;
  });
  return any_reduce ? CollectiveKind::kAllReduce : CollectiveKind::kAllGather;
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
    auto_partition_collective(o, q, level_group[op_part[o]], act, grad);
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

// The `auto` collectives (partition_collective_rules.h), back to back: their time and bytes,
// and the kind the counters record (all-reduce when any level sums partial results).
void Simulator::Impl::auto_partition_collective(OpId o, const OpPartition& q,
                                                const std::vector<uint32_t>& lg, uint64_t act,
                                                uint64_t grad) {
  const bool backward = g.op(o).phase == Phase::kBackward;
  double t = 0;
  uint64_t total = 0;
  for (const PartitionCollectiveStep& s : auto_partition_collectives(q, backward, act, grad)) {
    const CollectiveGroup& pg =
        groups[s.level < 0 ? op_group[o] : lg[static_cast<size_t>(s.level)]];
    t += cost.group_collective_time(s.kind, pg, s.bytes, SyncScheme::kAuto);
    total += s.bytes;
  }
  op_coll[o] = t;
  op_coll_bytes[o] = total;
  op_coll_kind[o] = static_cast<uint8_t>(recorded_kind(q, backward, act));
}

}  // namespace placer
