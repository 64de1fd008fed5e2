#pragma once
// Per-op fidelity of a cost profile on PyTorch profiler traces (`placer calibrate check
// --profiler-trace`, docs/calibration.md "Per-op check on profiler traces"): the rows of
// profiled_ops() (profiler_ops.h) predicted with the cost model and summarised per group.
//
//   std::vector<ProfilerTrace> t = {load_profiler_trace("step.json.gz")};
//   ProfiledCheckReport r = check_profiled_ops(cluster, profile, t);   // r.overall.error ...

#include <string>
#include <utility>
#include <vector>

#include "simulator/calibration/profiler_ops.h"
#include "simulator/cost_profile.h"
#include "src/cluster/cluster.h"

namespace placer {

/// Median and p90 (nearest rank) of |rel error|, the signed median, and time sums.
struct ProfiledError {
  FitError error;            ///< median / p90 of |predicted - measured| / measured, points
  double signed_median = 0;  ///< median of (predicted - measured) / measured
  double measured_s = 0;     ///< sum of measured times
  double predicted_s = 0;    ///< sum of predicted times
  /// predicted_s / measured_s: the time-weighted figure (1 = the group's total is right).
  double ratio() const { return measured_s > 0 ? predicted_s / measured_s : 0; }
};

struct ProfiledRow {
  ProfiledOp op;
  std::string group;  ///< "matmul bf16", "elementwise f32", "memcpy DtoD", "memset"
  double predicted_s = 0;
  double rel_error = 0;  ///< (predicted - measured) / measured
};

struct ProfiledCheckReport {
  std::vector<ProfiledRow> rows;
  /// Per group (category + dtype for kernel rows; memcpy / memset kinds), by measured time,
  /// largest first.
  std::vector<std::pair<std::string, ProfiledError>> groups;
  /// Per op name and dtype ("aten::mm bf16"), by measured time, largest first.
  std::vector<std::pair<std::string, ProfiledError>> by_op;
  ProfiledError overall;    ///< every kernel row ("all ops")
  ProfiledError transfers;  ///< memcpy / memset rows (points = 0 when none)
  std::vector<std::string> notes;
};

/// Predicts every row with CostModel(cluster, profile).op_time of an Op of the row's
/// category, dtype and FLOPs with its bytes, on the cluster's first GPU (device 0 when it
/// has none), plus (kernels - 1) x the model's launch overhead for a row of several
/// kernels (the simulator's graph ops are one kernel each). Rows that are not device
/// compute (communication kernels, host <-> device copies) and rows with a zero measured
/// time are left out with a note.
ProfiledCheckReport check_profiled_ops(const Cluster& cluster, const CostProfile& profile,
                                       const std::vector<ProfilerTrace>& traces);

}  // namespace placer
