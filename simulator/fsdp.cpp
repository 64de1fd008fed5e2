// FSDP / FSDP2 / HSDP in the simulator (data_parallel.fsdp, docs/parallelism.md): the
// parameters of each transformer block (graph layer) are all-gathered as one collective,
// ahead of the block's compute by the schedule of simulator/fsdp_schedule.h; the compute
// wait that schedule finds is charged to the block's first forward and backward op. The
// block's gradients are reduce-scattered as one bucket when its backward is done (the
// engine overlaps it with the next block's backward); HSDP then all-reduces the shard
// across the replicas. Ops outside layers keep ZeRO-3's per-op gathers.
#include <algorithm>
#include <map>
#include <utility>

#include "simulator/fsdp_schedule.h"
#include "simulator/simulator_impl.h"

namespace placer {

uint64_t Simulator::Impl::shard_ways(OpId o) const {
  const int dp = std::max(1, op_dp[o]);
  return static_cast<uint64_t>(fsdp && fsdp_shard > 1 ? std::min(fsdp_shard, dp) : dp);
}

uint32_t Simulator::Impl::gather_group(int32_t sync_index) const {
  return fsdp ? sync_shard_group[static_cast<size_t>(sync_index)]
              : syncs[static_cast<size_t>(sync_index)].group;
}

// Data-parallel ranks in device order; shard groups are runs of fsdp_shard consecutive
// ranks, the replica group of rank 0 every fsdp_shard-th rank.
void Simulator::Impl::prepare_fsdp_groups(const Plan&) {
  sync_shard_group.assign(syncs.size(), kNoInst);
  sync_replica_group.assign(syncs.size(), kNoInst);
  if (!fsdp) return;
  for (size_t si = 0; si < syncs.size(); ++si) {
    const std::vector<int> devs = group_devs[syncs[si].group];  // a copy: groups may grow
    const size_t shard =
        fsdp_shard > 1 ? std::min(static_cast<size_t>(fsdp_shard), devs.size()) : devs.size();
    sync_shard_group[si] = shard == devs.size()
                               ? syncs[si].group
                               : group_index(std::vector<int>(devs.begin(), devs.begin() + shard));
    if (shard == devs.size()) continue;
    std::vector<int> replica;
    for (size_t k = 0; k < devs.size(); k += shard) replica.push_back(devs[k]);
    sync_replica_group[si] = group_index(replica);
  }
}

double Simulator::Impl::fsdp_reduce_time(uint32_t sync_index, uint64_t bytes) const {
  double t =
      cost.group_collective_time(CollectiveKind::kReduceScatter,
                                 groups[sync_shard_group[sync_index]], bytes, SyncScheme::kAuto);
  const uint32_t rg = sync_replica_group[sync_index];
  if (rg != kNoInst) {
    const uint64_t shard = static_cast<uint64_t>(groups[sync_shard_group[sync_index]].size);
    t += cost.group_collective_time(CollectiveKind::kAllReduce, groups[rg], ceil_div(bytes, shard),
                                    sync);
  }
  return t;
}

bool Simulator::Impl::fsdp_block_done(TensorId t) {
  const int32_t b = t_block[t];
  return b >= 0 && --block_left[static_cast<size_t>(b)] == 0;
}

namespace {

// (group, layer): the group is the sync index, or -1 - device for a device without one
// (FSDP on one rank); units of a group are in layer order.
using UnitKey = std::pair<int64_t, int32_t>;

// The first backward op of a unit (that of its last forward op with one) and the last (of
// its first forward op with one): where its backward starts and where its gradients are done.
OpId first_backward(const std::vector<OpId>& fw, const std::vector<uint32_t>& off,
                    const std::vector<OpId>& of) {
  for (auto it = fw.rbegin(); it != fw.rend(); ++it)
    if (off[*it] < off[*it + 1]) return of[off[*it]];
  return kNoOp;
}

OpId last_backward(const std::vector<OpId>& fw, const std::vector<uint32_t>& off,
                   const std::vector<OpId>& of) {
  for (OpId f : fw)
    if (off[f] < off[f + 1]) return of[off[f + 1] - 1];
  return kNoOp;
}

}  // namespace

// Seconds of one memory-bound copy moving `bytes` (read + written) on device d, at the
// profile's element-wise memory rate for `dtype`.
double Simulator::Impl::fsdp_copy_time(double bytes, DType dtype, int d) const {
  if (bytes <= 0) return 0;
  Op copy;
  copy.category = OpCategory::kElementwise;
  copy.dtype = dtype;
  return cost.op_time(copy, static_cast<uint64_t>(bytes), d);
}

// The copies of one unit in seconds, on `shard` ranks, on the device of its first op.
Simulator::Impl::FsdpCopyTimes Simulator::Impl::fsdp_copy_times(const FsdpUnitBytes& u, OpId first,
                                                                int shard) const {
  const FsdpConfig& fs = plan->data_parallel.fsdp;
  const FsdpCopyBytes b = fsdp_copy_bytes(u, shard, fs.param_dtype_set);
  const DType dt = fs.param_dtype_set ? fs.param_dtype : g.op(first).dtype;
  const int d = op_dev[first];
  FsdpCopyTimes t;
  t.copy_in = fsdp_copy_time(b.copy_in, dt, d);
  t.copy_out = fsdp_copy_time(b.copy_out, dt, d);
  t.reduce = fsdp_copy_time(b.reduce_copy_in, dt, d) + fsdp_copy_time(b.single_rank_reduce, dt, d);
  return t;
}

void Simulator::Impl::prepare_fsdp_schedule(const Plan& p) {
  t_block.assign(n_tensors, -1);
  block_left.clear();
  fsdp_fwd_wait.assign(static_cast<size_t>(n_dev), 0.0);
  fsdp_bwd_wait.assign(static_cast<size_t>(n_dev), 0.0);
  if (!fsdp) return;
  const FsdpConfig& fs = p.data_parallel.fsdp;
  // Units per (group, layer), the root's under layer -1.
  std::map<UnitKey, FsdpUnitOps> units;
  for (OpId f : g.topo_order()) {
    const Op& op = g.op(f);
    if (op_phase[f] != Phase::kForward || op_input[f]) continue;
    if (op.layer < 0 && op_param[f] == 0) continue;
    const int32_t si = pipelined ? stage_sync[op_stage[f]] : (R > 1 ? dev_sync[op_dev[f]] : -2);
    const int64_t group = si >= 0 ? si : -1 - int64_t{op_dev[f]};
    FsdpUnitOps& u = units[{group, std::max(op.layer, int32_t{-1})}];
    u.forward.push_back(f);
    const uint64_t div = op_part[f] >= 0 ? shard_div(p.partitions[op_part[f]]) : 1;
    const uint64_t stored = ceil_div(op_param[f], div);
    const uint64_t elem = dtype_bytes(op.dtype);
    u.bytes.stored += stored;
    u.bytes.gathered += fs.param_dtype_set ? stored * dtype_bytes(fs.param_dtype) / elem : stored;
    u.bytes.reduced += fs.reduce_dtype_set ? stored * dtype_bytes(fs.reduce_dtype) / elem : stored;
  }
  assign_gradient_blocks(fs);
  std::vector<const FsdpUnitOps*> group;
  int64_t current = 0;
  for (const auto& [key, u] : units) {
    if (key.second < 0) {
      charge_fsdp_root(u.forward, u.bytes, key.first);
      continue;
    }
    if (key.first != current && !group.empty()) charge_fsdp_blocks(group, current), group.clear();
    current = key.first;
    group.push_back(&u);
  }
  if (!group.empty()) charge_fsdp_blocks(group, current);
}

// Gradients: the block of their forward op, and the reduce dtype's bytes.
void Simulator::Impl::assign_gradient_blocks(const FsdpConfig& fs) {
  std::map<std::pair<int32_t, int32_t>, int32_t> block_index;
  for (TensorId t = 0; t < n_tensors; ++t) {
    if (t_sync[t] < 0) continue;
    if (fs.reduce_dtype_set) {
      t_sync_bytes[t] =
          t_sync_bytes[t] * dtype_bytes(fs.reduce_dtype) / dtype_bytes(g.tensor(t).dtype);
    }
    const OpId f = op_fwd[t_producer[t]];
    if (f == kNoOp || f >= n_ops || g.op(f).layer < 0) continue;
    const auto key = std::make_pair(t_sync[t], g.op(f).layer);
    auto [it, added] = block_index.emplace(key, static_cast<int32_t>(block_left.size()));
    if (added) block_left.push_back(0);
    t_block[t] = it->second;
    ++block_left[static_cast<size_t>(it->second)];
  }
}

// Ranks a group's parameters are sharded over: its shard group, 1 for a device without one.
int Simulator::Impl::fsdp_group_shard(int64_t group) const {
  return group >= 0 ? groups[gather_group(static_cast<int32_t>(group))].size : 1;
}

// The root: unsharded before the first forward and kept for the backward (FSDP2 does not
// reshard the root), its gradients packed once its backward is done. Outside blocks the
// all-gathers stay ZeRO-3's per-op ones.
void Simulator::Impl::charge_fsdp_root(const std::vector<OpId>& fw, const FsdpUnitBytes& bytes,
                                       int64_t group) {
  const FsdpCopyTimes c = fsdp_copy_times(bytes, fw.front(), fsdp_group_shard(group));
  const double hook = cost.profile().fsdp_hook_host_time;
  op_dur[fw.front()] += c.copy_out;
  op_disp[fw.front()] += hook;
  if (const OpId last = last_backward(fw, bwd_off, bwd_of); last != kNoOp) {
    op_dur[last] += c.reduce;
    op_disp[last] += hook;
  }
}

// The schedule of one group's blocks with their copies; its waits and the copies go to
// each block's first forward op, first backward op and last backward op (once per
// micro-batch), the hooks' host time to the same ops' issue.
void Simulator::Impl::charge_fsdp_blocks(const std::vector<const FsdpUnitOps*>& blocks,
                                         int64_t group) {
  const FsdpConfig& fs = plan->data_parallel.fsdp;
  const FsdpScheduleOptions so{fs.forward_prefetch, fs.backward_prefetch, fs.reshard_after_forward};
  const int shard = fsdp_group_shard(group);
  const size_t n = blocks.size();
  std::vector<FsdpBlockTimes> times(n);
  std::vector<FsdpCopyTimes> copies(n);
  for (size_t i = 0; i < n; ++i) {
    const std::vector<OpId>& fw = blocks[i]->forward;
    copies[i] = fsdp_copy_times(blocks[i]->bytes, fw.front(), shard);
    FsdpBlockTimes& bt = times[i];
    for (OpId f : fw) {
      bt.forward += op_dur[f] + op_coll[f];
      for (uint32_t k = bwd_off[f]; k < bwd_off[f + 1]; ++k)
        bt.backward += op_dur[bwd_of[k]] + op_coll[bwd_of[k]];
    }
    copies[i].regathered = fsdp_regathers(i, n, so);
    bt.forward += copies[i].copy_out;
    bt.backward += (copies[i].regathered ? copies[i].copy_out : 0) + copies[i].reduce;
    if (group >= 0) {
      bt.gather = copies[i].copy_in +
                  cost.group_collective_time(CollectiveKind::kAllGather,
                                             groups[gather_group(static_cast<int32_t>(group))],
                                             blocks[i]->bytes.gathered, SyncScheme::kAuto);
    }
  }
  const FsdpTimeline tl = fsdp_timeline(times, so);
  for (size_t i = 0; i < n; ++i) charge_fsdp_block(blocks[i]->forward, copies[i], tl.blocks[i]);
}

void Simulator::Impl::charge_fsdp_block(const std::vector<OpId>& fw, const FsdpCopyTimes& c,
                                        const FsdpBlockTimeline& tl) {
  const double hook = cost.profile().fsdp_hook_host_time;
  const OpId first = fw.front();
  const double inst = op_multi[first] ? M : 1;
  op_dur[first] += tl.forward_wait + c.copy_out;
  op_disp[first] += hook;
  fsdp_fwd_wait[static_cast<size_t>(op_dev[first])] += inst * tl.forward_wait;
  const OpId begin = first_backward(fw, bwd_off, bwd_of);
  if (begin == kNoOp) return;
  op_dur[begin] += tl.backward_wait + (c.regathered ? c.copy_out : 0);
  op_disp[begin] += hook;
  fsdp_bwd_wait[static_cast<size_t>(op_dev[first])] += inst * tl.backward_wait;
  const OpId end = last_backward(fw, bwd_off, bwd_of);
  op_dur[end] += c.reduce;
  op_disp[end] += hook;
}

}  // namespace placer
