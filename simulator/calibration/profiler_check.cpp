#include "simulator/calibration/profiler_check.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "simulator/cost_model.h"

namespace placer {

namespace {

double nearest_rank(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  i = std::clamp<size_t>(i, 1, v.size()) - 1;
  return v[i];
}

ProfiledError summarize(const std::vector<const ProfiledRow*>& rows) {
  ProfiledError e;
  std::vector<double> abs_err, signed_err;
  for (const ProfiledRow* r : rows) {
    abs_err.push_back(std::fabs(r->rel_error));
    signed_err.push_back(r->rel_error);
    e.measured_s += r->op.measured_s;
    e.predicted_s += r->predicted_s;
  }
  e.error.points = static_cast<int>(rows.size());
  e.error.median = nearest_rank(abs_err, 0.5);
  e.error.p90 = nearest_rank(abs_err, 0.9);
  e.signed_median = nearest_rank(signed_err, 0.5);
  return e;
}

}  // namespace

ProfiledCheckReport check_profiled_ops(const Cluster& cluster, const CostProfile& profile,
                                       const std::vector<ProfilerTrace>& traces) {
  const CostModel cost(cluster, profile);
  int gpu = 0;
  for (int i = 0; i < cluster.num_devices(); ++i) {
    if (cluster.device(i).spec.kind == DeviceKind::kGpu) {
      gpu = i;
      break;
    }
  }
  ProfiledCheckReport rep;
  std::map<std::string, int> skipped;
  for (const ProfilerTrace& t : traces) {
    for (ProfiledOp& op : profiled_ops(t, &rep.notes)) {
      if (op.kind != "kernel" && op.kind != "memcpy DtoD" && op.kind != "memset") {
        ++skipped[op.kind + " rows (host <-> device or peer copies, not device ops)"];
        continue;
      }
      if (op.category == OpCategory::kCommunication) {
        ++skipped["communication kernels (collectives are checked with --measurements)"];
        continue;
      }
      if (!(op.measured_s > 0)) {
        ++skipped["rows with a zero measured time"];
        continue;
      }
      ProfiledRow row;
      Op g;
      g.category = op.category;
      g.dtype = op.dtype;
      g.flops = op.flops;
      g.phase = op.phase;
      g.attrs = op.attrs;
      // Kernel durations leave out the gaps between kernels, which the model's launch
      // overhead stands for: compare them with the op's time less that overhead.
      row.predicted_s = cost.op_time(g, static_cast<uint64_t>(std::llround(op.bytes)), gpu) -
                        cost.launch_overhead(gpu);
      row.rel_error = (row.predicted_s - op.measured_s) / op.measured_s;
      row.group = op.kind == "kernel" ? std::string(to_string(op.category)) + " " + to_string(op.dtype)
                                      : op.kind;
      row.op = std::move(op);
      rep.rows.push_back(std::move(row));
    }
  }
  for (const auto& [why, n] : skipped) {
    rep.notes.push_back(std::to_string(n) + " " + why + ": left out");
  }
  auto grouped = [&](auto key) {
    std::map<std::string, std::vector<const ProfiledRow*>> m;
    for (const ProfiledRow& r : rep.rows) {
      const std::string k = key(r);
      if (!k.empty()) m[k].push_back(&r);
    }
    std::vector<std::pair<std::string, ProfiledError>> out;
    for (const auto& [k, rows] : m) out.emplace_back(k, summarize(rows));
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
      return a.second.measured_s > b.second.measured_s;
    });
    return out;
  };
  rep.groups = grouped([](const ProfiledRow& r) { return r.group; });
  rep.by_op = grouped([](const ProfiledRow& r) {
    return r.op.kind == "kernel" ? r.op.op + " " + to_string(r.op.dtype) : r.op.op + " " + r.op.kind;
  });
  std::vector<const ProfiledRow*> kernels, copies;
  for (const ProfiledRow& r : rep.rows) (r.op.kind == "kernel" ? kernels : copies).push_back(&r);
  rep.overall = summarize(kernels);
  rep.transfers = summarize(copies);
  return rep;
}

}  // namespace placer
