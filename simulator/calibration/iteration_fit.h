#pragma once
// Fitting a cost profile's physical parameters to measured iteration times
// (`placer calibrate fit --iterations`, docs/calibration.md).
//
// The free parameters (iteration_fit_parameters) are per-category host dispatch times,
// the GEMM compute-efficiency curve, the memory-efficiency curve of element-wise ops and
// constant memory efficiencies of norms, softmax, embeddings and the optimizer, and the
// compute/communication overlap slowdown, the host's per-micro-batch overhead and its work
// after each MoE token-count sync (moe_sync_host_time): 22 numbers, each bounded.
// Collectives keep their curves (fitted from collective tables first). The fit minimises the
// squared log error of the predicted iteration times over the runs with a Levenberg-Marquardt loop whose
// finite-difference steps are wide enough for a piecewise-smooth simulator (Eigen's
// unsupported LevenbergMarquardt uses machine-epsilon steps, which see the simulator's
// event ordering as noise).
//
//   IterationFitResult r = fit_iteration_times(cluster, start, runs, {});
//   save_cost_profile(r.profile, "fitted.profile.yaml");

#include <functional>
#include <string>
#include <vector>

#include "simulator/calibration/iteration_runs.h"
#include "simulator/cost_profile.h"
#include "src/cluster/cluster.h"

namespace placer {

/// One bounded parameter of the profile.
struct ProfileParameter {
  std::string name;  ///< "ops.matmul.dispatch", "ops.matmul.compute@1e10", ...
  double lo = 0, hi = 1;
  std::function<double(const CostProfile&)> get;
  std::function<void(CostProfile&, double)> set;
  /// The value to report (default: get): curve knots are fitted as their rise above the
  /// previous knot, reported as the efficiency itself.
  std::function<double(const CostProfile&)> report;
};

/// The parameters fitted from iteration times (see the header comment).
std::vector<ProfileParameter> iteration_fit_parameters();

/// The parameters a fit of `runs` moves: `only` by name (ValidationError for an unknown
/// one), or when empty all of iteration_fit_parameters() that the runs respond to (the MoE
/// sync's host time only when some run has experts).
std::vector<ProfileParameter> parameters_to_fit(const std::vector<IterationRun>& runs,
                                                const std::vector<std::string>& only);

/// Error summary of predictions against measurements.
struct FidelitySummary {
  int n = 0;
  double mape = 0, median = 0, p90 = 0, signed_mean = 0, spearman = 0;
};
FidelitySummary summarize_fidelity(const std::vector<double>& measured,
                                   const std::vector<double>& predicted);
double spearman_correlation(const std::vector<double>& a, const std::vector<double>& b);

/// Predicted seconds of every run, on `threads` threads (each with its own graph cache).
std::vector<double> predict_runs(const Cluster& cluster, const CostProfile& profile,
                                 const std::vector<IterationRun>& runs, int threads = 2);

struct IterationFitOptions {
  int max_iterations = 20;  ///< Levenberg-Marquardt iterations
  int threads = 2;
  /// Weight of the prior that keeps parameters near their starting values (in the bounded
  /// parameters' logit coordinates); 0 = none.
  double prior_weight = 0.1;
  /// Names of the parameters to fit (iteration_fit_parameters()); empty = all of them.
  std::vector<std::string> only;
  /// Called after each iteration with (iteration, RMS log error); may be empty.
  std::function<void(int, double)> progress;
};

struct IterationFitResult {
  CostProfile profile;
  std::vector<std::pair<std::string, double>> values;  ///< fitted parameter values
  double rms_log_error = 0;
  int iterations = 0, simulations = 0;
  double seconds = 0;
};

/// The starting profile of an iteration fit from `base`: intra-host all-gather and
/// reduce-scatter take the intra-host all-reduce curve when they have none (NVLink rings
/// reach the same bus bandwidth for the three), the host synchronises on pipeline p2p and
/// runs MoE layers eagerly with the token dispatcher's sync (the runs are Megatron's:
/// p2p_host_sync, moe_host_sync), and parameters the base leaves at zero start from typical values
/// (12 us dispatch per op, 200 us per micro-batch).
CostProfile iteration_fit_start(const CostProfile& base);

/// Fits iteration_fit_parameters() of `start` to `runs` on `cluster`. Throws
/// ValidationError when `runs` is empty.
IterationFitResult fit_iteration_times(const Cluster& cluster, const CostProfile& start,
                                       const std::vector<IterationRun>& runs,
                                       const IterationFitOptions& options = {});

/// Cross-validation of the fit: for each fold f, fits on the runs outside it (every
/// `fit_every`-th of them) from `start` and predicts the runs with fold_of[i] == f. K-fold
/// is fold_of[i] = i % K; leave one model out is fold_of[i] = the run's model. Returns one
/// held-out prediction per run; `on_fold(f, fit)` (may be empty) sees each fold's fit.
/// Throws ValidationError when fold_of and runs differ in size or a fold holds every run.
std::vector<double> cross_validated_predictions(
    const Cluster& cluster, const CostProfile& start, const std::vector<IterationRun>& runs,
    const std::vector<int>& fold_of, int fit_every, const IterationFitOptions& options,
    const std::function<void(int, const IterationFitResult&)>& on_fold = {});

}  // namespace placer
