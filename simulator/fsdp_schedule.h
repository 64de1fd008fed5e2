#pragma once
// The per-block schedule of FSDP / FSDP2 (docs/parallelism.md "FSDP, FSDP2 and HSDP"), on
// one device, as three streams: compute, parameter all-gathers, gradient reduce-scatters
// (FSDP2 gives each collective kind its own CUDA stream; the two are not slowed by each
// other here).
//
// Forward runs blocks 0..n-1. Block i's all-gather is issued when the forward of block
// i - forward_prefetch starts (with prefetch 0: when block i - 1 ends), at time 0 for the
// first blocks, and runs after the previous all-gather; block i computes when both block
// i - 1 and its all-gather are done. Backward runs blocks n-1..0 the same way with
// backward_prefetch, starting when the forward ends; with reshard_after_forward the
// parameters were freed after the forward and are gathered again, except those of the
// last block, which torchtitan keeps (its backward follows at once). Each block's
// reduce-scatter starts when its backward is done and the previous one has finished, so it
// overlaps the next block's backward; the step ends when the last one does.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace placer {

/// Seconds of one block on one device.
struct FsdpBlockTimes {
  double forward = 0;   ///< forward compute
  double backward = 0;  ///< backward compute (with any recomputation)
  double gather = 0;    ///< all-gather of its parameters
  double reduce = 0;    ///< reduce-scatter (and HSDP all-reduce) of its gradients
};

struct FsdpBlockTimeline {
  double forward_gather_end = 0, forward_start = 0, forward_end = 0;
  double backward_gather_end = 0, backward_start = 0, backward_end = 0;
  double reduce_start = 0, reduce_end = 0;
  double forward_wait = 0;   ///< compute idle before the forward, waiting for the gather
  double backward_wait = 0;  ///< ... before the backward
};

struct FsdpTimeline {
  std::vector<FsdpBlockTimeline> blocks;  ///< indexed by block
  double end = 0;                         ///< last compute or reduce-scatter
  double exposed_gather = 0;              ///< sum of the waits
  double exposed_reduce = 0;              ///< end - the last backward's end
};

struct FsdpScheduleOptions {
  int forward_prefetch = 1;
  int backward_prefetch = 1;
  bool reshard_after_forward = true;
};

FsdpTimeline fsdp_timeline(const std::vector<FsdpBlockTimes>& blocks, const FsdpScheduleOptions& o);

/// Whether block `block` of `blocks` is all-gathered again for its backward: under
/// reshard_after_forward, every block but the last (whose backward follows at once).
bool fsdp_regathers(size_t block, size_t blocks, const FsdpScheduleOptions& o);

/// One FSDP unit's parameters (a block, or the root: the parameters outside blocks), whole.
struct FsdpUnitBytes {
  uint64_t stored = 0;    ///< as stored (the sharded parameters' dtype)
  uint64_t gathered = 0;  ///< in the gathered dtype (param_dtype); autograd's gradients too
  uint64_t reduced = 0;   ///< the gradients in the reduce dtype
};

/// Bytes read + written by FSDP2's memory-bound copies around one unit's collectives
/// (torch.distributed.fsdp.fully_shard: foreach_all_gather, foreach_all_gather_copy_out,
/// foreach_reduce), on `shard` ranks; `param_cast` when param_dtype is set.
struct FsdpCopyBytes {
  /// Before each all-gather, on the copy-in stream: the local shard into the all-gather
  /// buffer (with param_cast, first cast into a flat buffer, then copied). 0 on one rank,
  /// where FSDP2 skips the all-gather.
  double copy_in = 0;
  /// On the compute stream before the unit runs: the gathered buffer split into the
  /// parameters (split_with_sizes_copy); on one rank the shards copied into them.
  double copy_out = 0;
  /// On the compute stream after the unit's backward: its gradients packed into the
  /// reduce-scatter input in the reduce dtype (chunk_cat).
  double reduce_copy_in = 0;
  /// One rank only: the reduce-scatter input copied to its output (no collective). It runs
  /// on the reduce-scatter stream, but the next unit's copies wait for it (both are copy
  /// engine memcpys), so it is charged to the compute stream.
  double single_rank_reduce = 0;
};
FsdpCopyBytes fsdp_copy_bytes(const FsdpUnitBytes& unit, int shard, bool param_cast);

/// HSDP's collective buffers for `param_bytes` / `grad_bytes` (in the gathered parameter /
/// reduced gradient dtypes) over shard groups of `shard` devices replicated `replicas`
/// times: the all-gather and reduce-scatter inside a shard group move the whole buffer, the
/// all-reduce across replicas one shard of the gradient.
struct HsdpBuffers {
  uint64_t gather = 0;          ///< all-gather buffer, shard group
  uint64_t reduce_scatter = 0;  ///< reduce-scatter buffer, shard group
  uint64_t all_reduce = 0;      ///< all-reduce buffer across replicas (0 when replicas == 1)
  /// Bytes each device sends per level with ring collectives: (s-1)/s of the buffer for the
  /// all-gather and the reduce-scatter, 2 (r-1)/r of it for the all-reduce.
  double sent_shard_level() const;
  double sent_replica_level() const;
  int shard = 1, replicas = 1;
};
HsdpBuffers hsdp_buffers(uint64_t param_bytes, uint64_t grad_bytes, int shard, int replicas);

}  // namespace placer
