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

// One block of one data-parallel group while it is being assembled.
struct BlockOps {
  std::vector<OpId> forward;  // in topological order
  uint64_t gather_bytes = 0;  // parameters in the gathered dtype
};

}  // namespace

void Simulator::Impl::prepare_fsdp_schedule(const Plan& p) {
  t_block.assign(n_tensors, -1);
  block_left.clear();
  fsdp_fwd_wait.assign(static_cast<size_t>(n_dev), 0.0);
  fsdp_bwd_wait.assign(static_cast<size_t>(n_dev), 0.0);
  if (!fsdp) return;
  const FsdpConfig& fs = p.data_parallel.fsdp;
  // Blocks per (sync group, layer), in layer order within a group.
  std::map<std::pair<int32_t, int32_t>, BlockOps> blocks;
  for (OpId f : g.topo_order()) {
    const Op& op = g.op(f);
    if (op_phase[f] != Phase::kForward || op_input[f] || op.layer < 0) continue;
    const int32_t si = pipelined ? stage_sync[op_stage[f]] : (R > 1 ? dev_sync[op_dev[f]] : -2);
    if (si < 0) continue;
    BlockOps& b = blocks[{si, op.layer}];
    b.forward.push_back(f);
    const uint64_t div = op_part[f] >= 0 ? shard_div(p.partitions[op_part[f]]) : 1;
    uint64_t bytes = ceil_div(op_param[f], div);
    if (fs.param_dtype_set) bytes = bytes * dtype_bytes(fs.param_dtype) / dtype_bytes(op.dtype);
    b.gather_bytes += bytes;
  }
  // Gradients: the block of their forward op, and the reduce dtype's bytes.
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
  // The schedule of each group's blocks; its waits go to each block's first ops.
  FsdpScheduleOptions so{fs.forward_prefetch, fs.backward_prefetch, fs.reshard_after_forward};
  auto run_group = [&](std::vector<const BlockOps*>& group, int32_t si) {
    std::vector<FsdpBlockTimes> times;
    for (const BlockOps* b : group) {
      FsdpBlockTimes bt;
      for (OpId f : b->forward) {
        bt.forward += op_dur[f] + op_coll[f];
        for (uint32_t k = bwd_off[f]; k < bwd_off[f + 1]; ++k)
          bt.backward += op_dur[bwd_of[k]] + op_coll[bwd_of[k]];
      }
      bt.gather = cost.group_collective_time(CollectiveKind::kAllGather, groups[gather_group(si)],
                                             b->gather_bytes, SyncScheme::kAuto);
      times.push_back(bt);
    }
    const FsdpTimeline tl = fsdp_timeline(times, so);
    for (size_t i = 0; i < group.size(); ++i) {
      const std::vector<OpId>& fw = group[i]->forward;
      const OpId first = fw.front();
      const double inst = op_multi[first] ? M : 1;
      op_dur[first] += tl.blocks[i].forward_wait;
      fsdp_fwd_wait[static_cast<size_t>(op_dev[first])] += inst * tl.blocks[i].forward_wait;
      // The block's backward starts with the backward of its last forward op that has one.
      for (auto it = fw.rbegin(); it != fw.rend(); ++it) {
        if (bwd_off[*it] == bwd_off[*it + 1]) continue;
        op_dur[bwd_of[bwd_off[*it]]] += tl.blocks[i].backward_wait;
        fsdp_bwd_wait[static_cast<size_t>(op_dev[*it])] += inst * tl.blocks[i].backward_wait;
        break;
      }
    }
  };
  std::vector<const BlockOps*> group;
  int32_t current = -1;
  for (const auto& [key, b] : blocks) {
    if (key.first != current && !group.empty()) run_group(group, current), group.clear();
    current = key.first;
    group.push_back(&b);
  }
  if (!group.empty()) run_group(group, current);
}

}  // namespace placer
