// Memory copies: host-to-device (pinned), device-to-host, device-to-device, peer-to-peer.
#include <algorithm>
#include <iostream>
#include <string>
#include <utility>

#include "bench.h"
#include "cuda_util.h"
#include "grid.h"

namespace placer::calibrate {
namespace {

Measurement copy_row(const std::string& op, std::size_t n, const std::string& src,
                     const std::string& dst, int devices, const std::vector<double>& seconds,
                     int hosts) {
  Measurement m;
  m.kind = "memcpy";
  m.op = op;
  m.dtype = "u8";
  m.shape = "n=" + std::to_string(n) + ";src=" + src + ";dst=" + dst;
  m.bytes = n;
  m.devices = devices;
  m.hosts = hosts;
  m.time = summarize(seconds);
  return m;
}

// The largest copy size that leaves room for `buffers` buffers on every device in `devs`.
std::size_t cap_bytes(std::size_t max_bytes, const std::vector<int>& devs, int buffers) {
  std::size_t cap = max_bytes;
  for (int d : devs) cap = std::min(cap, free_memory(d) / 10 * 8 / buffers);
  if (cap < max_bytes) {
    std::cerr << "note: memcpy sizes capped at " << format_size(cap) << " by free GPU memory"
              << std::endl;
  }
  return cap;
}

}  // namespace

void bench_memcpy(const BenchContext& ctx, const std::vector<int>& devices) {
  const Options& o = ctx.opts;
  const int d0 = devices.front();
  {
    const std::size_t max = cap_bytes(o.max_bytes, {d0}, 2);
    const auto sizes = size_sweep(std::min(o.min_bytes, max), max, o.step);
    Stream stream(d0);
    const std::vector<StreamRef> streams = {{d0, stream.get()}};
    PinnedBuffer host(max);
    DeviceBuffer a(d0, max), b(d0, max);
    const std::string dev = std::to_string(d0);
    for (const std::size_t n : sizes) {
      auto s = time_on_streams(streams, o.warmup, o.iters, [&] {
        PC_CUDA(cudaMemcpyAsync(a.get(), host.get(), n, cudaMemcpyHostToDevice, stream.get()));
      });
      ctx.record(copy_row("h2d", n, "host", dev, 1, s, ctx.hosts));
    }
    for (const std::size_t n : sizes) {
      auto s = time_on_streams(streams, o.warmup, o.iters, [&] {
        PC_CUDA(cudaMemcpyAsync(host.get(), a.get(), n, cudaMemcpyDeviceToHost, stream.get()));
      });
      ctx.record(copy_row("d2h", n, dev, "host", 1, s, ctx.hosts));
    }
    for (const std::size_t n : sizes) {
      auto s = time_on_streams(streams, o.warmup, o.iters, [&] {
        PC_CUDA(cudaMemcpyAsync(b.get(), a.get(), n, cudaMemcpyDeviceToDevice, stream.get()));
      });
      ctx.record(copy_row("d2d", n, dev, dev, 1, s, ctx.hosts));
    }
  }
  if (devices.size() < 2) return;

  // Peer-to-peer between every ordered pair with peer access (--quick: from the first only).
  const std::size_t max = cap_bytes(o.max_bytes, devices, 2);
  const auto sizes = size_sweep(std::min(o.min_bytes, max), max, std::max(o.step, 4));
  std::vector<DeviceBuffer> bufs;
  for (int d : devices) bufs.emplace_back(d, max);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (o.quick && i > 0) break;
    for (std::size_t j = 0; j < devices.size(); ++j) {
      if (i == j) continue;
      const int src = devices[i], dst = devices[j];
      int can = 0, back = 0;
      PC_CUDA(cudaDeviceCanAccessPeer(&can, src, dst));
      PC_CUDA(cudaDeviceCanAccessPeer(&back, dst, src));
      if (!can || !back) {
        std::cerr << "skip p2p " << src << " -> " << dst << ": no peer access" << std::endl;
        continue;
      }
      std::string refused;
      for (auto [from, to] : {std::pair{src, dst}, std::pair{dst, src}}) {
        PC_CUDA(cudaSetDevice(from));
        const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
        if (e != cudaSuccess) cudaGetLastError();  // not sticky; clear it
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled && refused.empty())
          refused = cudaGetErrorString(e);
      }
      if (!refused.empty()) {
        std::cerr << "skip p2p " << src << " -> " << dst
                  << ": cudaDeviceEnablePeerAccess failed: " << refused << std::endl;
        continue;
      }
      Stream stream(src);
      const std::vector<StreamRef> streams = {{src, stream.get()}};
      for (const std::size_t n : sizes) {
        auto s = time_on_streams(streams, o.warmup, o.iters, [&] {
          PC_CUDA(cudaMemcpyPeerAsync(bufs[j].get(), dst, bufs[i].get(), src, n, stream.get()));
        });
        ctx.record(copy_row("p2p", n, std::to_string(src), std::to_string(dst), 2, s, ctx.hosts));
      }
    }
  }
}

}  // namespace placer::calibrate
