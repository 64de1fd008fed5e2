#pragma once
// Measurements for calibration: rows of the placer-calibrate CSV (docs/formats/measurements.md)
// and of NVIDIA nccl-tests logs (all_reduce_perf, all_gather_perf, ...), in one shape.
//
//   MeasurementSet m = load_measurements("a100.csv");          // CSV or nccl-tests log
//   MeasurementSet n = parse_nccl_tests_log(text, "ar.log");   // collective rows
//
// Parsers never crash on bad input: they throw FormatError "file:line: ..." naming the line.

#include <map>
#include <string>
#include <vector>

#include "src/graph/types.h"

namespace placer {

enum class MeasureKind : uint8_t {
  kGemm,
  kConv,
  kElementwise,
  kReduction,
  kSoftmax,
  kMemcpy,
  kCollective,
};
/// "gemm", "conv", "elementwise", "reduction", "softmax", "memcpy", "collective".
const char* to_string(MeasureKind k);
bool parse_measure_kind(const std::string& s, MeasureKind* out);

/// One measured row.
struct Measurement {
  MeasureKind kind = MeasureKind::kGemm;
  std::string op;     ///< gemm, conv2d, add, ...; h2d|d2h|d2d|p2p; all_reduce|...|send_recv
  std::string dtype;  ///< fp32, tf32, fp16, bf16, u8 (as in the file)
  std::string shape;  ///< "m=4096;n=4096;k=4096"
  double flops = 0;   ///< of one execution; 0 when not compute
  double bytes = 0;   ///< compute: read + written; memcpy: copied; collective: nccl-tests size
  int devices = 1;    ///< GPUs taking part (ranks for collectives)
  int hosts = 1;      ///< hosts taking part; 0 = unknown (a log that lists only some ranks)
  double time_s = 0;  ///< median (CSV) or out-of-place time (nccl-tests), seconds
  double min_s = 0, max_s = 0;
  int iters = 0;
  std::string source;  ///< file name
  int line = 0;        ///< 1-based line in `source`

  std::string where() const { return source + ":" + std::to_string(line); }
};

struct MeasurementSet {
  std::string source;                         ///< file name
  std::string format;                         ///< "csv" or "nccl-tests"
  std::map<std::string, std::string> header;  ///< "# key: value" lines / nccl-tests header
  std::vector<Measurement> rows;
};

/// The placer-calibrate CSV. Errors: FormatError "file:line: ..." for a missing column in
/// the header row, a row with the wrong number of fields, an unknown kind, a bad number.
MeasurementSet parse_measurements_csv(const std::string& text, const std::string& file);

/// An nccl-tests log (any version since 2.0: with or without the root column, "#wrong" or
/// "error", lines prefixed by "[0]", NCCL INFO lines in between). `op` names the collective
/// (all_reduce, all_gather, reduce_scatter, broadcast, send_recv); empty = from the log
/// ("# Collective test starting: X_perf", an "X_perf" command line) or the file name.
/// Ranks = the "# Rank" lines, or, when the log lists fewer ranks than ran (busbw / algbw
/// tells), the count that busbw / algbw implies; hosts = distinct host names (0 = unknown).
/// time_s = the out-of-place time; min_s / max_s = the smaller / larger of out-of-place and
/// in-place. Errors: FormatError "file:line: ..." for a malformed table row, no table.
MeasurementSet parse_nccl_tests_log(const std::string& text, const std::string& file,
                                    const std::string& op = "");

/// An nccl-tests table saved as CSV: a header "size(B),count,type,time(ns),busbw(GB/s),
/// time(ns),busbw(GB/s)" (out-of-place, then in-place; `#` lines are comments), one row per
/// size. The file does not name the rank count: it is the p that busbw / algbw = 2(p-1)/p
/// implies for an all-reduce (the only collective these tables hold unless `op` says
/// otherwise); hosts = 1. Errors: FormatError "file:line: ..." naming the column.
MeasurementSet parse_nccl_tests_csv(const std::string& text, const std::string& file,
                                    const std::string& op = "");
/// True when `text` is such a table (its first non-comment line starts with "size(B),").
bool looks_like_nccl_tests_csv(const std::string& text);

/// True when `text` looks like nccl-tests output rather than a CSV.
bool looks_like_nccl_tests(const std::string& text);

/// Reads `path` (FileError if it cannot) and parses it as a CSV or an nccl-tests log.
/// `spec` may be "OP=path" to name the collective of an nccl-tests log.
MeasurementSet load_measurements(const std::string& spec);

/// OpCategory of a compute row (gemm -> matmul, conv -> conv, ...); false for others.
bool measure_category(MeasureKind k, OpCategory* out);
/// DType of a file dtype (fp32 / tf32 -> f32, fp16 -> f16, bf16, u8); false when unknown.
bool measure_dtype(const std::string& dtype, DType* out);
/// Normalises collective names: "allreduce", "all_reduce_perf", "sendrecv" -> "all_reduce",
/// "send_recv"; "" when not a collective.
std::string normalize_collective_name(const std::string& s);

}  // namespace placer
