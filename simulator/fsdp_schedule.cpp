#include "simulator/fsdp_schedule.h"

#include <algorithm>

namespace placer {

namespace {

// One pass (forward or backward) over blocks in `order`: compute waits for each block's
// gather, issued `prefetch` blocks ahead; `gathers[k]` says whether block order[k] needs one.
struct PassRun {
  const std::vector<FsdpBlockTimes>& times;
  std::vector<FsdpBlockTimeline>& out;
  double gather_free;  // the all-gather stream

  double run(const std::vector<size_t>& order, const std::vector<bool>& gathers, int prefetch,
             double begin, bool forward) {
    double prev_end = begin;
    std::vector<double> starts(order.size(), begin);
    for (size_t k = 0; k < order.size(); ++k) {
      const FsdpBlockTimes& t = times[order[k]];
      double issue = begin;
      if (prefetch == 0) {
        issue = prev_end;
      } else if (k >= static_cast<size_t>(prefetch)) {
        issue = starts[k - static_cast<size_t>(prefetch)];
      }
      double ready = begin;
      if (gathers[k]) {
        gather_free = std::max(gather_free, issue) + t.gather;
        ready = gather_free;
      }
      const double start = std::max(prev_end, ready);
      starts[k] = start;
      FsdpBlockTimeline& b = out[order[k]];
      const double end = start + (forward ? t.forward : t.backward);
      if (forward) {
        b.forward_gather_end = ready, b.forward_start = start, b.forward_end = end;
        b.forward_wait = start - prev_end;
      } else {
        b.backward_gather_end = ready, b.backward_start = start, b.backward_end = end;
        b.backward_wait = start - prev_end;
      }
      prev_end = end;
    }
    return prev_end;
  }
};

}  // namespace

FsdpTimeline fsdp_timeline(const std::vector<FsdpBlockTimes>& blocks,
                           const FsdpScheduleOptions& o) {
  FsdpTimeline tl;
  const size_t n = blocks.size();
  tl.blocks.resize(n);
  if (n == 0) return tl;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  PassRun pass{blocks, tl.blocks, 0.0};
  const double fwd_end = pass.run(order, std::vector<bool>(n, true), o.forward_prefetch, 0.0, true);
  std::reverse(order.begin(), order.end());
  std::vector<bool> regather(n);
  for (size_t k = 0; k < n; ++k) regather[k] = fsdp_regathers(order[k], n, o);
  const double bwd_end = pass.run(order, regather, o.backward_prefetch, fwd_end, false);
  double reduce_free = 0;
  for (size_t i : order) {
    FsdpBlockTimeline& b = tl.blocks[i];
    b.reduce_start = std::max(reduce_free, b.backward_end);
    b.reduce_end = reduce_free = b.reduce_start + blocks[i].reduce;
  }
  tl.end = std::max(bwd_end, reduce_free);
  for (const FsdpBlockTimeline& b : tl.blocks)
    tl.exposed_gather += b.forward_wait + b.backward_wait;
  tl.exposed_reduce = tl.end - bwd_end;
  return tl;
}

bool fsdp_regathers(size_t block, size_t blocks, const FsdpScheduleOptions& o) {
  return o.reshard_after_forward && block + 1 < blocks;
}

FsdpCopyBytes fsdp_copy_bytes(const FsdpUnitBytes& unit, int shard, bool param_cast) {
  FsdpCopyBytes c;
  const double stored = static_cast<double>(unit.stored);
  const double gathered = static_cast<double>(unit.gathered);
  const double reduced = static_cast<double>(unit.reduced);
  if (shard > 1) {
    c.copy_in = (stored + gathered + (param_cast ? 2 * gathered : 0.0)) / shard;
    c.copy_out = 2 * gathered;
  } else {
    c.copy_out = stored + gathered;
    c.single_rank_reduce = 2 * reduced;
  }
  c.reduce_copy_in = gathered + reduced;
  return c;
}

double HsdpBuffers::sent_shard_level() const {
  const double f = shard > 1 ? double(shard - 1) / shard : 0.0;
  return f * double(gather + reduce_scatter);
}

double HsdpBuffers::sent_replica_level() const {
  return replicas > 1 ? 2.0 * (replicas - 1) / replicas * double(all_reduce) : 0.0;
}

HsdpBuffers hsdp_buffers(uint64_t param_bytes, uint64_t grad_bytes, int shard, int replicas) {
  HsdpBuffers b;
  b.shard = std::max(shard, 1);
  b.replicas = std::max(replicas, 1);
  b.gather = param_bytes;
  b.reduce_scatter = grad_bytes;
  b.all_reduce = b.replicas > 1 ? (grad_bytes + uint64_t(b.shard) - 1) / uint64_t(b.shard) : 0;
  return b;
}

}  // namespace placer
