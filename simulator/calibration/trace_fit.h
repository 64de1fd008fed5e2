#pragma once
// Fitting the simulator's transfer constants (per link level latency and bandwidth) to a
// measured execution trace, the way Placeto calibrated its simulator: simulate the plan,
// compare every op's start and end with the trace, and minimise the error with a seeded
// Nelder-Mead search over log(latency), log(bandwidth) of each link level in use.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "simulator/cost_profile.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/plan/plan.h"

namespace placer {

/// One measured op execution.
struct TracedOp {
  std::string name;  ///< graph op name
  int device = 0;    ///< device index in the cluster
  double start = 0;  ///< seconds
  double end = 0;
};

/// Reads op intervals from Chrome-trace JSON: our simulator's traces (simulator/trace.h:
/// cat "compute" / "optimizer", pid = device index) or any trace whose complete ("X")
/// events are named after graph ops (pid = device index when it is one, else 0). Events
/// named after no op of `graph` are ignored. Errors: FormatError naming the file.
std::vector<TracedOp> parse_op_trace(const std::string& json_text, const std::string& file,
                                     const Graph& graph, const Cluster& cluster);
std::vector<TracedOp> load_op_trace(const std::string& path, const Graph& graph,
                                    const Cluster& cluster);

/// Minimises f over R^n from x0 (Nelder-Mead; the initial simplex steps are `step` times a
/// seeded random factor in [0.75, 1.25]); stops after `max_evals` evaluations or when the
/// simplex's values differ by less than `tol`. Returns the best point; *best_f its value.
std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                std::vector<double> x0, double step, int max_evals, double tol,
                                uint64_t seed, double* best_f, int* evals);

struct TraceFitOptions {
  int max_evaluations = 400;
  uint64_t seed = 1;
  /// Levels to fit; empty = every level that the plan's transfers use (intra_host,
  /// host_device, inter_host as the cluster has them).
  std::vector<LinkLevel> levels;
};

struct TraceFitResult {
  CostProfile profile;            ///< base with links.<level>.latency / bandwidth fitted
  std::vector<LinkLevel> levels;  ///< fitted levels
  double initial_error = 0;       ///< RMS of start/end differences / measured span, at start
  double final_error = 0;
  int evaluations = 0;
  int matched = 0;  ///< measured ops matched to simulated ones
};

/// The error minimised: sqrt(mean over matched ops of ((ds^2 + de^2) / 2)) / measured span,
/// ops matched by (name, device, occurrence). Throws ValidationError when no op matches.
double trace_error(const Graph& graph, const Cluster& cluster, const Plan& plan,
                   const CostProfile& profile, const std::vector<TracedOp>& measured,
                   int* matched = nullptr);

TraceFitResult fit_transfer_constants(const Graph& graph, const Cluster& cluster, const Plan& plan,
                                      const CostProfile& base,
                                      const std::vector<TracedOp>& measured,
                                      const TraceFitOptions& options = {});

}  // namespace placer
