#include "bench_nccl.h"

#include <algorithm>
#include <iostream>
#include <string>

#include "cuda_util.h"
#include "grid.h"
#include "kernels.h"

namespace placer::calibrate {

#ifndef PLACER_CALIBRATE_NCCL

void bench_collectives_local(const BenchContext&, const std::vector<int>&) {
  std::cerr << "skip collective: placer-calibrate was built without NCCL" << std::endl;
}

void bench_collectives_ranks(const BenchContext&, Bootstrap&, int) {
  throw LibraryError("collectives across processes need NCCL; placer-calibrate was built without it");
}

#else

namespace {

// The communicators of this process: one per local GPU, `nranks` ranks in all.
struct Comms {
  std::vector<int> devices;      // local GPU per local rank
  std::vector<int> ranks;        // global rank per local rank
  std::vector<ncclComm_t> comms;
  std::vector<Stream> streams;
  int nranks = 0;
  ~Comms() {
    for (auto c : comms)
      if (c) ncclCommDestroy(c);
  }
};

enum class Op { AllReduce, AllGather, ReduceScatter, Broadcast, SendRecv };
const char* op_name(Op op) {
  switch (op) {
    case Op::AllReduce: return "all_reduce";
    case Op::AllGather: return "all_gather";
    case Op::ReduceScatter: return "reduce_scatter";
    case Op::Broadcast: return "broadcast";
    case Op::SendRecv: return "send_recv";
  }
  return "?";
}

// Largest message size whose buffers (send + receive, max_bytes each) fit on every GPU.
std::size_t cap_message(std::size_t max_bytes, const std::vector<int>& devices) {
  std::size_t cap = max_bytes;
  for (int d : devices) cap = std::min(cap, free_memory(d) / 10 * 8 / 2);
  return cap;
}

void run(const BenchContext& ctx, Comms& c, bool record) {
  const Options& o = ctx.opts;
  const int n = c.nranks;
  // The same sizes on every rank: the cap is agreed by rank 0's caller (max_bytes fits).
  const std::size_t max = o.max_bytes;
  std::vector<DeviceBuffer> send, recv;
  for (std::size_t l = 0; l < c.devices.size(); ++l) {
    send.emplace_back(c.devices[l], max);
    recv.emplace_back(c.devices[l], max);
    PC_CUDA(launch_fill_random(send.back().get(), max / 4, DType::F32, 9 + c.ranks[l],
                               c.streams[l].get()));
  }
  std::vector<StreamRef> streams;
  for (auto& s : c.streams) streams.push_back({s.device(), s.get()});
  const auto sizes = size_sweep(o.min_bytes, max, o.step);
  for (Op op : {Op::AllReduce, Op::AllGather, Op::ReduceScatter, Op::Broadcast, Op::SendRecv}) {
    if (op == Op::SendRecv && n < 2) continue;
    for (const std::size_t requested : sizes) {
      // Elements per rank's piece; all_gather / reduce_scatter split the message n ways.
      const bool split = op == Op::AllGather || op == Op::ReduceScatter;
      const std::size_t piece = split ? requested / 4 / n : requested / 4;
      if (piece == 0) continue;
      const std::size_t count = split ? piece * n : piece;  // total elements (nccl-tests count)
      const std::size_t bytes = count * 4;
      auto launch = [&] {
        PC_NCCL(ncclGroupStart());
        for (std::size_t l = 0; l < c.comms.size(); ++l) {
          void* s = send[l].get();
          void* r = recv[l].get();
          cudaStream_t st = c.streams[l].get();
          switch (op) {
            case Op::AllReduce:
              PC_NCCL(ncclAllReduce(s, r, count, ncclFloat, ncclSum, c.comms[l], st));
              break;
            case Op::AllGather:
              PC_NCCL(ncclAllGather(s, r, piece, ncclFloat, c.comms[l], st));
              break;
            case Op::ReduceScatter:
              PC_NCCL(ncclReduceScatter(s, r, piece, ncclFloat, ncclSum, c.comms[l], st));
              break;
            case Op::Broadcast:
              PC_NCCL(ncclBroadcast(s, r, count, ncclFloat, 0, c.comms[l], st));
              break;
            case Op::SendRecv: {
              const int me = c.ranks[l];
              PC_NCCL(ncclSend(s, count, ncclFloat, (me + 1) % n, c.comms[l], st));
              PC_NCCL(ncclRecv(r, count, ncclFloat, (me + n - 1) % n, c.comms[l], st));
              break;
            }
          }
        }
        PC_NCCL(ncclGroupEnd());
      };
      const auto seconds = time_on_streams(streams, o.warmup, o.iters, launch);
      if (!record) continue;
      Measurement m;
      m.kind = "collective";
      m.op = op_name(op);
      m.dtype = "fp32";
      m.shape = "count=" + std::to_string(count);
      m.bytes = bytes;
      m.devices = n;
      m.hosts = ctx.hosts;
      m.time = summarize(seconds);
      ctx.record(std::move(m));
    }
  }
}

}  // namespace

void bench_collectives_local(const BenchContext& ctx, const std::vector<int>& devices) {
  std::vector<int> counts = ctx.opts.ranks;
  if (counts.empty()) counts.push_back(static_cast<int>(devices.size()));
  if (counts.back() > static_cast<int>(devices.size())) {
    throw UsageError("--ranks: " + std::to_string(counts.back()) + " is more than the " +
                     std::to_string(devices.size()) + " GPUs in use");
  }
  if (counts.back() < 2) {
    std::cerr << "skip collective: one GPU in this process (collectives over one rank move no "
                 "data); use --devices with 2+ GPUs, or one process per GPU across hosts"
              << std::endl;
    return;
  }
  for (const int k : counts) {
    const std::vector<int> group(devices.begin(), devices.begin() + k);
    Options capped = ctx.opts;
    capped.max_bytes = cap_message(ctx.opts.max_bytes, group);
    if (capped.max_bytes < ctx.opts.max_bytes)
      std::cerr << "note: collective sizes capped at " << format_size(capped.max_bytes)
                << " by free GPU memory" << std::endl;
    if (capped.min_bytes > capped.max_bytes) capped.min_bytes = capped.max_bytes;
    const BenchContext local{capped, ctx.sink, ctx.hosts};
    Comms c;
    c.devices = group;
    c.nranks = k;
    c.comms.assign(group.size(), nullptr);
    for (std::size_t l = 0; l < group.size(); ++l) {
      c.ranks.push_back(static_cast<int>(l));
      c.streams.emplace_back(group[l]);
    }
    PC_NCCL(ncclCommInitAll(c.comms.data(), c.nranks, group.data()));
    run(local, c, true);
  }
}

void bench_collectives_ranks(const BenchContext& ctx, Bootstrap& boot, int device) {
  // Agree on one size cap: every rank's own cap, the smallest wins (sizes must match).
  // Also check that every rank sweeps the same way (else the collectives would not match
  // up and NCCL would hang).
  const Options& o = ctx.opts;
  const std::string sweep = "--min-bytes " + std::to_string(o.min_bytes) + " --max-bytes " +
                            std::to_string(o.max_bytes) + " --step " + std::to_string(o.step) +
                            " --warmup " + std::to_string(o.warmup) + " --iters " +
                            std::to_string(o.iters);
  const std::size_t mine = cap_message(o.max_bytes, {device});
  std::size_t cap = mine;
  const auto all = boot.all_gather(std::to_string(mine) + " " + sweep);
  for (std::size_t r = 0; r < all.size(); ++r) {
    const auto space = all[r].find(' ');
    if (space == std::string::npos || all[r].substr(space + 1) != sweep) {
      throw LibraryError("rank " + std::to_string(r) + " runs the collectives with other options (" +
                         (space == std::string::npos ? all[r] : all[r].substr(space + 1)) +
                         ") than rank " + std::to_string(boot.rank()) + " (" + sweep +
                         "): start every rank with the same command line");
    }
    cap = std::min<std::size_t>(cap, std::stoull(all[r].substr(0, space)));
  }
  Options capped = ctx.opts;
  capped.max_bytes = cap;
  if (capped.min_bytes > capped.max_bytes) capped.min_bytes = capped.max_bytes;
  if (boot.rank() == 0 && cap < ctx.opts.max_bytes)
    std::cerr << "note: collective sizes capped at " << format_size(cap) << " by free GPU memory"
              << std::endl;
  const BenchContext local{capped, ctx.sink, ctx.hosts};

  ncclUniqueId id{};
  if (boot.rank() == 0) PC_NCCL(ncclGetUniqueId(&id));
  boot.broadcast(&id, sizeof id);
  Comms c;
  c.devices = {device};
  c.ranks = {boot.rank()};
  c.nranks = boot.size();
  c.streams.emplace_back(device);
  c.comms.assign(1, nullptr);
  PC_CUDA(cudaSetDevice(device));
  PC_NCCL(ncclCommInitRank(&c.comms[0], boot.size(), id, boot.rank()));
  run(local, c, boot.rank() == 0);
  PC_CUDA(cudaDeviceSynchronize());
  boot.barrier();
}

#endif

}  // namespace placer::calibrate
