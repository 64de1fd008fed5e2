#include "simulator/calibration/iteration_fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>
#include <thread>

#include "simulator/calibration/tensor_scale_fit.h"
#include "src/util/error.h"

namespace placer {

namespace {

// Knots (log10 of FLOPs / bytes) of the fitted curves: GEMMs of the transformer runs span
// 1e8..1e12 FLOPs, element-wise tensors 1e6..1e9 bytes.
constexpr double kGemmKnots[] = {8, 9, 10, 11, 12};
constexpr double kMemKnots[] = {6, 7, 8, 9};

ProfileParameter dispatch(OpCategory c) {
  ProfileParameter p;
  p.name = std::string("ops.") + to_string(c) + ".dispatch";
  p.lo = 0;
  p.hi = 300e-6;
  p.get = [c](const CostProfile& pr) { return pr.op(c).dispatch; };
  p.set = [c](CostProfile& pr, double v) { pr.op(c).dispatch = v; };
  return p;
}

// Knot k of a curve whose knots are exactly `knots`, fitted so the curve cannot fall with
// size (efficiency rises with work until it saturates): knot 0 is its efficiency, knot k > 0
// the fraction of the way from knot k - 1 to 1 (parameters are set in knot order).
ProfileParameter knot(OpCategory c, bool compute, const double* knots, size_t nk, size_t k) {
  ProfileParameter p;
  p.name = std::string("ops.") + to_string(c) + (compute ? ".compute" : ".memory") + "@1e" +
           std::to_string(static_cast<int>(knots[k]));
  p.lo = k == 0 ? 0.02 : 0.0;
  p.hi = 1.0;
  const std::vector<double> xs(knots, knots + nk);
  auto curve = [c, compute](CostProfile& pr) -> EfficiencyCurve& {
    return compute ? pr.op(c).compute : pr.op(c).memory;
  };
  auto value = [c, compute, xs](const CostProfile& pr, size_t i) {
    const EfficiencyCurve& e = compute ? pr.op(c).compute : pr.op(c).memory;
    return e.at(std::pow(10.0, xs[i]));
  };
  p.report = [value, k](const CostProfile& pr) { return value(pr, k); };
  p.get = [value, k](const CostProfile& pr) {
    if (k == 0) return value(pr, 0);
    const double prev = value(pr, k - 1), cur = value(pr, k);
    return prev >= 1 ? 0.0 : std::clamp((cur - prev) / (1 - prev), 0.0, 1.0);
  };
  p.set = [curve, xs, k](CostProfile& pr, double v) {
    EfficiencyCurve& e = curve(pr);
    if (e.points.size() != xs.size()) {  // re-knot, keeping the curve's values
      std::vector<std::pair<double, double>> pts;
      for (double x : xs) pts.emplace_back(x, e.at(std::pow(10.0, x)));
      e.points = pts;
    }
    if (k == 0) {
      e.points[0].second = v;
    } else {
      const double prev = e.points[k - 1].second;
      e.points[k].second = prev + (1 - prev) * v;
    }
  };
  return p;
}

ProfileParameter constant_memory(OpCategory c) {
  ProfileParameter p;
  p.name = std::string("ops.") + to_string(c) + ".memory";
  p.lo = 0.02;
  p.hi = 1.0;
  p.get = [c](const CostProfile& pr) { return pr.op(c).memory.at(1e8); };
  p.set = [c](CostProfile& pr, double v) { pr.op(c).memory = EfficiencyCurve::constant(v); };
  return p;
}

// Each thread predicts every threads-th run with its own graph cache.
class ParallelPredictor {
 public:
  ParallelPredictor(const Cluster& cluster, int threads) {
    for (int t = 0; t < std::max(1, threads); ++t) {
      predictors_.push_back(std::make_unique<RunPredictor>(cluster));
    }
  }
  std::vector<double> predict(const CostProfile& profile, const std::vector<IterationRun>& runs) {
    std::vector<double> out(runs.size(), 0);
    const size_t nt = predictors_.size();
    std::vector<std::string> errors(nt);
    auto work = [&](size_t t) {
      try {
        for (size_t i = t; i < runs.size(); i += nt) out[i] = predictors_[t]->predict(runs[i], profile);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    };
    std::vector<std::thread> pool;
    for (size_t t = 1; t < nt; ++t) pool.emplace_back(work, t);
    work(0);
    for (std::thread& th : pool) th.join();
    for (const std::string& e : errors) {
      if (!e.empty()) throw Error(e);
    }
    return out;
  }

 private:
  std::vector<std::unique_ptr<RunPredictor>> predictors_;
};

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

std::vector<ProfileParameter> iteration_fit_parameters() {
  std::vector<ProfileParameter> ps;
  for (OpCategory c : {OpCategory::kMatMul, OpCategory::kElementwise, OpCategory::kNormalization,
                       OpCategory::kSoftmax, OpCategory::kOptimizer}) {
    ps.push_back(dispatch(c));
  }
  for (size_t k = 0; k < std::size(kGemmKnots); ++k) {
    ps.push_back(knot(OpCategory::kMatMul, true, kGemmKnots, std::size(kGemmKnots), k));
  }
  for (size_t k = 0; k < std::size(kMemKnots); ++k) {
    ps.push_back(knot(OpCategory::kElementwise, false, kMemKnots, std::size(kMemKnots), k));
  }
  for (OpCategory c : {OpCategory::kNormalization, OpCategory::kSoftmax, OpCategory::kEmbedding,
                       OpCategory::kOptimizer}) {
    ps.push_back(constant_memory(c));
  }
  ProfileParameter mb;
  mb.name = "micro_batch_overhead";
  mb.lo = 0;
  mb.hi = 2e-3;
  mb.get = [](const CostProfile& pr) { return pr.micro_batch_overhead; };
  mb.set = [](CostProfile& pr, double v) { pr.micro_batch_overhead = v; };
  ps.push_back(mb);
  ProfileParameter sh;  // only runs with moe_host_sync and MoE layers respond to it
  sh.name = "moe_sync_host_time";
  sh.lo = 0;
  sh.hi = kMaxSyncHost;
  sh.get = [](const CostProfile& pr) { return pr.moe_sync_host_time; };
  sh.set = [](CostProfile& pr, double v) { pr.moe_sync_host_time = v; };
  ps.push_back(sh);
  ProfileParameter ov;
  ov.name = "overlap_slowdown";
  ov.lo = 1.0;
  ov.hi = 2.0;
  ov.get = [](const CostProfile& pr) { return pr.overlap_slowdown; };
  ov.set = [](CostProfile& pr, double v) { pr.overlap_slowdown = v; };
  ps.push_back(ov);
  return ps;
}

double spearman_correlation(const std::vector<double>& a, const std::vector<double>& b) {
  auto ranks = [](const std::vector<double>& v) {
    std::vector<size_t> idx(v.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < idx.size();) {
      size_t j = i;
      while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
      for (size_t k = i; k <= j; ++k) r[idx[k]] = 0.5 * double(i + j);
      i = j + 1;
    }
    return r;
  };
  if (a.size() < 2 || a.size() != b.size()) return 0;
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = double(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0;
}

FidelitySummary summarize_fidelity(const std::vector<double>& measured,
                                   const std::vector<double>& predicted) {
  FidelitySummary s;
  s.n = static_cast<int>(measured.size());
  if (measured.empty()) return s;
  std::vector<double> ape;
  for (size_t i = 0; i < measured.size(); ++i) {
    const double e = (predicted[i] - measured[i]) / measured[i];
    ape.push_back(std::fabs(e));
    s.signed_mean += e;
  }
  s.signed_mean /= double(ape.size());
  s.mape = std::accumulate(ape.begin(), ape.end(), 0.0) / double(ape.size());
  std::sort(ape.begin(), ape.end());
  s.median = ape[ape.size() / 2];
  s.p90 = ape[std::min(ape.size() - 1, size_t(std::ceil(0.9 * double(ape.size()))) - 1)];
  s.spearman = spearman_correlation(measured, predicted);
  return s;
}

std::vector<double> predict_runs(const Cluster& cluster, const CostProfile& profile,
                                 const std::vector<IterationRun>& runs, int threads) {
  ParallelPredictor p(cluster, threads);
  return p.predict(profile, runs);
}

CostProfile iteration_fit_start(const CostProfile& base) {
  CostProfile start = base;
  if (const auto& ar = start.curve(CollectiveKind::kAllReduce, LinkLevel::kIntraHost)) {
    for (CollectiveKind k : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
      if (!start.curve(k, LinkLevel::kIntraHost)) start.curve(k, LinkLevel::kIntraHost) = ar;
    }
  }
  start.p2p_host_sync = true;
  start.moe_host_sync = true;
  for (int c = 0; c < kNumOpCategories; ++c) {
    if (start.ops[size_t(c)].dispatch == 0) start.ops[size_t(c)].dispatch = 12e-6;
  }
  if (start.micro_batch_overhead == 0) start.micro_batch_overhead = 200e-6;
  return start;
}

std::vector<ProfileParameter> parameters_to_fit(const std::vector<IterationRun>& runs,
                                                const std::vector<std::string>& only) {
  std::vector<ProfileParameter> params = iteration_fit_parameters();
  if (only.empty()) {
    // Without MoE layers no run responds to the sync's host time: it stays as the profile
    // has it instead of moving to the bounded fit's starting point.
    const bool any_moe = std::any_of(runs.begin(), runs.end(),
                                     [](const IterationRun& r) { return r.num_experts > 0; });
    if (!any_moe) {
      params.erase(
          std::remove_if(params.begin(), params.end(),
                         [](const ProfileParameter& p) { return p.name == "moe_sync_host_time"; }),
          params.end());
    }
    return params;
  }
  std::vector<ProfileParameter> kept;
  for (const std::string& name : only) {
    auto it = std::find_if(params.begin(), params.end(),
                           [&](const ProfileParameter& p) { return p.name == name; });
    if (it == params.end())
      throw ValidationError("iteration fit: unknown parameter '" + name + "'");
    kept.push_back(*it);
  }
  return kept;
}

IterationFitResult fit_iteration_times(const Cluster& cluster, const CostProfile& start,
                                       const std::vector<IterationRun>& runs,
                                       const IterationFitOptions& options) {
  if (runs.empty()) throw ValidationError("iteration fit: no runs");
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<ProfileParameter> params = parameters_to_fit(runs, options.only);
  const int np = static_cast<int>(params.size());
  const int n = static_cast<int>(runs.size());
  ParallelPredictor predictor(cluster, options.threads);
  IterationFitResult result;

  // Unconstrained coordinates: value = lo + (hi - lo) * sigmoid(x).
  auto to_profile = [&](const Eigen::VectorXd& x) {
    CostProfile p = start;
    for (int j = 0; j < np; ++j) {
      params[size_t(j)].set(p, params[size_t(j)].lo + (params[size_t(j)].hi - params[size_t(j)].lo) * sigmoid(x[j]));
    }
    return p;
  };
  // A weak prior keeps each parameter near its starting value where the runs do not tell
  // (dispatch time and small-GEMM efficiency trade off against each other): one residual
  // per parameter, prior_weight * (x - x0), next to the n log errors.
  Eigen::VectorXd x0(np);
  auto residuals = [&](const Eigen::VectorXd& x) {
    const std::vector<double> pred = predictor.predict(to_profile(x), runs);
    ++result.simulations;
    Eigen::VectorXd r(n + np);
    for (int i = 0; i < n; ++i) r[i] = std::log(pred[size_t(i)] / runs[size_t(i)].measured);
    for (int j = 0; j < np; ++j) r[n + j] = options.prior_weight * (x[j] - x0[j]);
    return r;
  };
  Eigen::VectorXd x(np);
  for (int j = 0; j < np; ++j) {
    const ProfileParameter& p = params[size_t(j)];
    const double u = std::clamp((p.get(start) - p.lo) / (p.hi - p.lo), 0.02, 0.98);
    x[j] = std::log(u / (1 - u));
  }
  x0 = x;
  Eigen::VectorXd r = residuals(x);
  double cost = r.squaredNorm();
  double lambda = 1e-2;
  double fd_step = 0.05;  // finite-difference step in logit space, halved when stuck
  for (int it = 0; it < options.max_iterations; ++it) {
    Eigen::MatrixXd J(n + np, np);
    for (int j = 0; j < np; ++j) {
      Eigen::VectorXd xs = x;
      xs[j] += fd_step;
      J.col(j) = (residuals(xs) - r) / fd_step;
    }
    const Eigen::MatrixXd A = J.transpose() * J;
    const Eigen::VectorXd g = J.transpose() * r;
    bool accepted = false, improved = false;
    for (int tries = 0; tries < 8 && !accepted; ++tries) {
      Eigen::MatrixXd M = A;
      for (int j = 0; j < np; ++j) M(j, j) += lambda * A(j, j) + 1e-9;
      const Eigen::VectorXd delta = M.ldlt().solve(-g);
      const Eigen::VectorXd xn = x + delta.cwiseMax(-3.0).cwiseMin(3.0);
      const Eigen::VectorXd rn = residuals(xn);
      const double cn = rn.squaredNorm();
      if (cn < cost) {
        x = xn;
        r = rn;
        improved = cost - cn > 1e-4 * cost;  // stop once a step gains < 0.01 %
        cost = cn;
        lambda = std::max(lambda / 3, 1e-6);
        accepted = true;
      } else {
        lambda *= 4;
      }
    }
    result.iterations = it + 1;
    if (options.progress) options.progress(it + 1, std::sqrt(r.head(n).squaredNorm() / n));
    if (!accepted && fd_step > 0.01) {
      // No step helped: the slopes may be off at this resolution; retry with finer ones.
      fd_step /= 2;
      lambda = 1e-2;
      continue;
    }
    if (!improved) break;
  }
  result.profile = to_profile(x);
  for (const ProfileParameter& p : params) {
    result.values.emplace_back(p.name, p.report ? p.report(result.profile) : p.get(result.profile));
  }
  result.rms_log_error = std::sqrt(r.head(n).squaredNorm() / n);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

std::vector<double> cross_validated_predictions(
    const Cluster& cluster, const CostProfile& start, const std::vector<IterationRun>& runs,
    const std::vector<int>& fold_of, int fit_every, const IterationFitOptions& options,
    const std::function<void(int, const IterationFitResult&)>& on_fold) {
  if (fold_of.size() != runs.size()) throw ValidationError("cross-validation: one fold per run");
  std::vector<int> folds = fold_of;
  std::sort(folds.begin(), folds.end());
  folds.erase(std::unique(folds.begin(), folds.end()), folds.end());
  std::vector<double> predicted(runs.size(), 0.0);
  for (int f : folds) {
    std::vector<IterationRun> train, test;
    std::vector<size_t> test_index;
    for (size_t i = 0; i < runs.size(); ++i) {
      if (fold_of[i] == f) {
        test.push_back(runs[i]);
        test_index.push_back(i);
      } else {
        train.push_back(runs[i]);
      }
    }
    if (train.empty())
      throw ValidationError("cross-validation: fold " + std::to_string(f) + " holds every run");
    std::vector<IterationRun> subsample;
    for (size_t i = 0; i < train.size(); i += size_t(std::max(1, fit_every))) {
      subsample.push_back(train[i]);
    }
    const IterationFitResult fit = fit_iteration_times(cluster, start, subsample, options);
    if (on_fold) on_fold(f, fit);
    const std::vector<double> p = predict_runs(cluster, fit.profile, test, options.threads);
    for (size_t j = 0; j < p.size(); ++j) predicted[test_index[j]] = p[j];
  }
  return predicted;
}

}  // namespace placer
