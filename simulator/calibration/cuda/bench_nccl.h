// placer-calibrate: NCCL collectives (all_reduce, all_gather, reduce_scatter, broadcast,
// send_recv) over message sizes, fp32 sum, nccl-tests' "size" convention for `bytes`.
#pragma once

#include <vector>

#include "bench.h"
#include "bootstrap.h"

namespace placer::calibrate {

// Every GPU in `devices` in this process: ncclCommInitAll, one stream per GPU, group calls.
void bench_collectives_local(const BenchContext& ctx, const std::vector<int>& devices);

// One GPU per process (`device`), communicator over every rank of `boot` (ncclUniqueId from
// rank 0 through the bootstrap). Every rank times; rank 0 records the rows (ctx.hosts set).
void bench_collectives_ranks(const BenchContext& ctx, Bootstrap& boot, int device);

}  // namespace placer::calibrate
