// placer-calibrate: measurement rows, their statistics and the CSV writer (host-only).
// The format is the contract read by `placer calibrate fit` (docs/formats/measurements.md).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace placer::calibrate {

struct Stats {
  double median = 0, min = 0, max = 0;
  int count = 0;
};
// Median (mean of the two middle values for an even count), min and max. Throws
// std::invalid_argument on an empty sample.
Stats summarize(std::vector<double> seconds);

struct Measurement {
  std::string kind, op, dtype, shape;
  std::uint64_t flops = 0;  // FLOPs of one execution (0 when not compute)
  std::uint64_t bytes = 0;  // compute: read + written; memcpy: copied; collective: message size
  int devices = 1;
  int hosts = 1;
  Stats time;  // seconds; time.count is the `iters` column
};

// The commented header block: machine, library versions, date and command.
struct RunInfo {
  std::string host, device;
  int device_count = 0;
  std::string compute_capability, driver, cuda_runtime, cublas, cudnn, nccl, date, command;
  int hosts = 1;
  int world_size = 1;
};

constexpr const char* kCsvColumns =
    "kind,op,dtype,shape,flops,bytes,devices,hosts,time_s,min_s,max_s,iters";

void write_header(std::ostream& out, const RunInfo& info);
// One data row (no newline inside; fields never contain commas by construction, checked).
std::string format_row(const Measurement& m);

// Rows collected during a run, written at the end (or on demand) by rank 0.
class CsvSink {
 public:
  void add(Measurement m) { rows_.push_back(std::move(m)); }
  const std::vector<Measurement>& rows() const { return rows_; }
  void write(std::ostream& out, const RunInfo& info) const;

 private:
  std::vector<Measurement> rows_;
};

// UTC now as 2026-11-22T10:00:00Z.
std::string utc_now();

}  // namespace placer::calibrate
