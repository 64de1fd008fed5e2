// placer-calibrate: the benchmark families. Each appends Measurement rows to the sink and
// prints one progress line per row to stderr.
#pragma once

#include <vector>

#include "args.h"
#include "csv.h"

namespace placer::calibrate {

struct BenchContext {
  const Options& opts;
  CsvSink& sink;
  int hosts = 1;
  // Adds the row and prints "kind op dtype shape: time (rate)".
  void record(Measurement m) const;
};

// Single-GPU compute on `device` (devices = 1 in every row).
void bench_gemm(const BenchContext& ctx, int device);
void bench_conv(const BenchContext& ctx, int device);  // no-op without cuDNN (says so)
void bench_elementwise(const BenchContext& ctx, int device);
void bench_reduction(const BenchContext& ctx, int device);
void bench_softmax(const BenchContext& ctx, int device);

// H2D (pinned), D2H and D2D on devices[0]; peer-to-peer between every ordered pair of
// `devices` with peer access (--quick: from devices[0] only).
void bench_memcpy(const BenchContext& ctx, const std::vector<int>& devices);

}  // namespace placer::calibrate
