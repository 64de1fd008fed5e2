// Curve fits behind the profile fit: alpha-beta lines, efficiency curves over size and the
// collective curves (latency per rank plus a bandwidth ramp) of fit.h.
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "simulator/calibration/fit.h"
#include "simulator/calibration/round_sig.h"
#include "simulator/cost_model.h"
#include "src/io/units.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer {

AlphaBeta fit_alpha_beta(const std::vector<double>& x, const std::vector<double>& t) {
  PLACER_CHECK(x.size() == t.size(),
               "fit_alpha_beta: " << x.size() << " sizes but " << t.size() << " times");
  if (x.empty()) throw ValidationError("alpha-beta fit: no points");
  for (size_t i = 0; i < t.size(); ++i) {
    if (!(t[i] > 0) || !std::isfinite(t[i]) || !(x[i] >= 0) || !std::isfinite(x[i])) {
      throw ValidationError("alpha-beta fit: point " + std::to_string(i) +
                            " needs a size >= 0 and a time > 0");
    }
  }
  const double xmin = *std::min_element(x.begin(), x.end());
  const double xmax = *std::max_element(x.begin(), x.end());
  AlphaBeta ab;
  auto slope_only = [&]() {
    // min sum ((b x_i - t_i) / t_i)^2  ->  b = sum(x_i / t_i) / sum(x_i^2 / t_i^2)
    double num = 0, den = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      num += x[i] / t[i];
      den += (x[i] / t[i]) * (x[i] / t[i]);
    }
    if (!(den > 0)) throw ValidationError("alpha-beta fit: every size is 0");
    AlphaBeta r;
    r.alpha = 0;
    r.beta = num / den;
    return r;
  };
  if (x.size() < 2 || xmax - xmin <= 1e-12 * std::max(1.0, xmax)) {
    ab = slope_only();
  } else {
    const Eigen::Index n = static_cast<Eigen::Index>(x.size());
    Eigen::MatrixXd a(n, 2);
    Eigen::VectorXd rhs = Eigen::VectorXd::Ones(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const double w = 1.0 / t[static_cast<size_t>(i)];
      a(i, 0) = w;
      a(i, 1) = x[static_cast<size_t>(i)] * w;
    }
    const Eigen::Vector2d sol = a.colPivHouseholderQr().solve(rhs);
    ab.alpha = sol(0);
    ab.beta = sol(1);
    if (!(ab.alpha >= 0) || !(ab.beta > 0)) ab = slope_only();
  }
  if (!(ab.beta > 0) || !std::isfinite(ab.beta)) {
    throw ValidationError("alpha-beta fit: time does not grow with size (beta " +
                          format_double(ab.beta) + ")");
  }
  return ab;
}

FitError relative_errors(const std::vector<double>& predicted,
                         const std::vector<double>& measured) {
  PLACER_CHECK(predicted.size() == measured.size(), "relative_errors: sizes differ");
  FitError e;
  e.points = static_cast<int>(measured.size());
  if (measured.empty()) return e;
  std::vector<double> r;
  r.reserve(measured.size());
  for (size_t i = 0; i < measured.size(); ++i) {
    r.push_back(std::abs(predicted[i] - measured[i]) / measured[i]);
  }
  std::sort(r.begin(), r.end());
  const size_t n = r.size();
  e.median = n % 2 ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2]);
  const size_t k = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n)));
  e.p90 = r[std::min(n, std::max<size_t>(k, 1)) - 1];
  return e;
}

EfficiencyCurve fit_efficiency_curve(const std::vector<double>& size,
                                     const std::vector<double>& eff, double knot_step,
                                     double min_eff, double max_eff, bool monotone) {
  PLACER_CHECK(size.size() == eff.size(), "fit_efficiency_curve: sizes differ");
  PLACER_CHECK(knot_step > 0, "fit_efficiency_curve: knot_step must be > 0");
  if (size.empty()) throw ValidationError("efficiency fit: no points");
  std::vector<double> x, e;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] > 0 && eff[i] > 0 && std::isfinite(eff[i])) {
      x.push_back(std::log10(size[i]));
      e.push_back(eff[i]);
    }
  }
  if (x.empty())
    throw ValidationError("efficiency fit: no point with a positive size and efficiency");
  auto clamp = [&](double v) { return std::min(max_eff, std::max(min_eff, v)); };
  const double xmin = *std::min_element(x.begin(), x.end());
  const double xmax = *std::max_element(x.begin(), x.end());
  if (xmax - xmin < 1e-9) {
    // Constant: minimises sum ((v - e_i) / e_i)^2  ->  v = sum(1/e) / sum(1/e^2).
    double num = 0, den = 0;
    for (double v : e) num += 1 / v, den += 1 / (v * v);
    return EfficiencyCurve::constant(clamp(round_sig(num / den)));
  }
  std::vector<double> knots;
  const double k0 = std::floor(xmin / knot_step + 1e-9) * knot_step;
  for (double k = k0; k < xmax + knot_step - 1e-9; k += knot_step) knots.push_back(k);
  if (knots.back() < xmax) knots.push_back(knots.back() + knot_step);
  const Eigen::Index m = static_cast<Eigen::Index>(knots.size());
  const Eigen::Index n = static_cast<Eigen::Index>(x.size());
  // Scale of each knot: the efficiency of its nearest point (for the relative penalty).
  std::vector<double> scale(knots.size(), 1.0);
  for (size_t j = 0; j < knots.size(); ++j) {
    double best = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::abs(x[i] - knots[j]) < best) best = std::abs(x[i] - knots[j]), scale[j] = e[i];
    }
  }
  const Eigen::Index rows = n + std::max<Eigen::Index>(0, m - 2);
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(rows, m);
  Eigen::VectorXd rhs = Eigen::VectorXd::Zero(rows);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double xi = x[static_cast<size_t>(i)], w = 1 / e[static_cast<size_t>(i)];
    size_t j = 0;
    while (j + 2 < knots.size() && knots[j + 1] < xi) ++j;
    const double u = std::min(1.0, std::max(0.0, (xi - knots[j]) / (knots[j + 1] - knots[j])));
    a(i, static_cast<Eigen::Index>(j)) += (1 - u) * w;
    a(i, static_cast<Eigen::Index>(j + 1)) += u * w;
    rhs(i) = 1;
  }
  const double smooth = 1e-3;
  for (Eigen::Index j = 1; j + 1 < m; ++j) {
    const double s = smooth / scale[static_cast<size_t>(j)];
    a(n + j - 1, j - 1) = s;
    a(n + j - 1, j) = -2 * s;
    a(n + j - 1, j + 1) = s;
  }
  const Eigen::VectorXd v = a.colPivHouseholderQr().solve(rhs);
  std::vector<double> vals;
  for (Eigen::Index j = 0; j < m; ++j) {
    double val = v(j);
    if (!std::isfinite(val)) val = scale[static_cast<size_t>(j)];
    vals.push_back(clamp(val));
  }
  if (monotone) {
    // Pool adjacent violators: the closest non-decreasing sequence (efficiency does not
    // drop as messages / ops grow), so that no knot between data points dips.
    std::vector<std::pair<double, int>> blocks;  // (mean, count)
    for (double val : vals) {
      blocks.emplace_back(val, 1);
      while (blocks.size() > 1 && blocks[blocks.size() - 2].first > blocks.back().first) {
        auto b = blocks.back();
        blocks.pop_back();
        auto& a2 = blocks.back();
        a2.first = (a2.first * a2.second + b.first * b.second) / (a2.second + b.second);
        a2.second += b.second;
      }
    }
    vals.clear();
    for (const auto& [mean, count] : blocks)
      vals.insert(vals.end(), static_cast<size_t>(count), mean);
  }
  std::vector<std::pair<double, double>> pts;
  for (size_t j = 0; j < vals.size(); ++j) pts.emplace_back(knots[j], clamp(round_sig(vals[j])));
  return EfficiencyCurve::ramp(std::move(pts));
}

namespace {

double size_weighted_error(const std::vector<double>& pred, const std::vector<double>& t,
                           const std::vector<double>& bytes) {
  double sum = 0, w = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    sum += std::abs(pred[i] - t[i]) / t[i] / bytes[i];
    w += 1 / bytes[i];
  }
  return w > 0 ? sum / w : 0;
}

double rms_relative_error(const std::vector<double>& pred, const std::vector<double>& t) {
  double sum = 0;
  for (size_t i = 0; i < pred.size(); ++i)
    sum += (pred[i] - t[i]) * (pred[i] - t[i]) / (t[i] * t[i]);
  return std::sqrt(sum / double(pred.size()));
}

// The points of one collective fit as the fits read them.
struct CollectiveData {
  CollectiveKind kind;
  const std::vector<CollectivePoint>& points;
  std::vector<double> x, t, bytes;  // bus bytes (bytes x bus factor), seconds, bytes
  int max_ranks = 0;
  std::vector<int> sizes;  // the distinct group sizes

  CollectiveData(CollectiveKind k, const std::vector<CollectivePoint>& pts) : kind(k), points(pts) {
    for (const CollectivePoint& p : points) {
      if (p.ranks < 2) throw ValidationError("collective fit: a point with fewer than 2 ranks");
      x.push_back(p.bytes * bus_factor(kind, p.ranks));
      t.push_back(p.time_s);
      bytes.push_back(p.bytes);
    }
    for (const CollectivePoint& p : points) max_ranks = std::max(max_ranks, p.ranks);
    for (const CollectivePoint& p : points) {
      if (std::find(sizes.begin(), sizes.end(), p.ranks) == sizes.end()) sizes.push_back(p.ranks);
    }
  }

  std::vector<double> predict(const CollectiveCurve& c) const {
    std::vector<double> pred;
    for (const CollectivePoint& p : points) pred.push_back(c.time(kind, p.ranks, p.bytes));
    return pred;
  }
};

// Several group sizes: latency grows with the ring's steps. The bandwidth term from the
// large messages (>= 64 MiB, where latency is negligible), then alpha + gamma (p - 2) from
// the small ones (<= 8 MiB) by least squares of the relative residuals; it replaces *line
// (and *line_err) when its RMS relative error over all points beats the plain line (the
// small sizes, where the latency matters, are a minority and do not move the median).
// Returns (alpha, gamma) when fitted with gamma > 0, else (-1, 0).
std::pair<double, double> fit_ranked_latency(const CollectiveData& d, CollectiveCurve* line,
                                             FitError* line_err) {
  std::pair<double, double> ranked_latency{-1, 0};
  std::vector<double> xl, tl;
  for (size_t i = 0; i < d.points.size(); ++i) {
    if (d.points[i].bytes >= double(64 << 20)) xl.push_back(d.x[i]), tl.push_back(d.t[i]);
  }
  if (d.sizes.size() < 2 || xl.size() < 2) return ranked_latency;
  const double beta = fit_alpha_beta(xl, tl).beta;
  double s11 = 0, s12 = 0, s22 = 0, b1 = 0, b2 = 0;
  for (size_t i = 0; i < d.points.size(); ++i) {
    if (d.points[i].bytes > double(8 << 20)) continue;
    const double w = 1 / (d.t[i] * d.t[i]), q = d.points[i].ranks - 2, r = d.t[i] - beta * d.x[i];
    s11 += w, s12 += w * q, s22 += w * q * q, b1 += w * r, b2 += w * q * r;
  }
  const double det = s11 * s22 - s12 * s12;
  if (!(det > 0 && beta > 0)) return ranked_latency;
  const double alpha = (b1 * s22 - b2 * s12) / det, gamma = (s11 * b2 - s12 * b1) / det;
  CollectiveCurve ranked = *line;
  ranked.latency = round_sig(std::max(0.0, alpha));
  ranked.latency_per_rank = round_sig(std::max(0.0, gamma));
  ranked.bus_bandwidth = round_sig(1 / beta);
  if (ranked.latency_per_rank > 0 &&
      rms_relative_error(d.predict(ranked), d.t) < rms_relative_error(d.predict(*line), d.t)) {
    *line = ranked;
    *line_err = relative_errors(d.predict(ranked), d.t);
  }
  if (ranked.latency_per_rank > 0) ranked_latency = {ranked.latency, ranked.latency_per_rank};
  return ranked_latency;
}

// A ramp candidate: bus bandwidth `best_bw` scaled by an efficiency curve over the bytes,
// after a latency of `latency` + `per_rank` (p - 2). False when a point is not slower than
// that latency.
bool ramp_curve(const CollectiveData& d, double latency, double per_rank, double best_bw,
                double knot_step, CollectiveCurve* c) {
  c->latency = latency;
  c->latency_per_rank = per_rank;
  c->bus_bandwidth = round_sig(best_bw);
  c->ranks = d.max_ranks;
  std::vector<double> eff;
  bool ok = true;
  for (size_t i = 0; i < d.x.size(); ++i) {
    const double busy = d.t[i] - c->latency - c->latency_per_rank * (d.points[i].ranks - 2);
    ok = ok && busy > 0;
    eff.push_back(d.x[i] / (std::max(busy, 1e-12) * best_bw));
  }
  if (!ok) return false;
  c->efficiency = fit_efficiency_curve(d.bytes, eff, knot_step, 1e-9, 2.0);
  return true;
}

}  // namespace

CollectiveCurve fit_collective_curve(CollectiveKind kind,
                                     const std::vector<CollectivePoint>& points,
                                     double line_tolerance, FitError* error, std::string* model,
                                     double knot_step) {
  if (points.empty()) throw ValidationError("collective fit: no points");
  const CollectiveData d(kind, points);
  const std::vector<double>& t = d.t;
  const AlphaBeta ab = fit_alpha_beta(d.x, t);
  CollectiveCurve line;
  line.latency = round_sig(ab.alpha);
  line.bus_bandwidth = round_sig(1 / ab.beta);
  line.efficiency = EfficiencyCurve::constant(1.0);
  line.ranks = d.max_ranks;
  FitError line_err = relative_errors(d.predict(line), t);
  const std::pair<double, double> ranked_latency = fit_ranked_latency(d, &line, &line_err);
  if (line_err.median <= line_tolerance || points.size() < 3) {
    if (error) *error = line_err;
    if (model) *model = "alpha-beta";
    return line;
  }
  double best_bw = 0, tmin = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < d.x.size(); ++i) {
    best_bw = std::max(best_bw, d.x[i] / t[i]);
    tmin = std::min(tmin, t[i]);
  }
  CollectiveCurve best = line;
  FitError best_err = line_err;
  std::string best_model = "alpha-beta";
  // Ramps under a fraction of the fastest time as latency, and (several group sizes) under
  // the per-rank latency fitted above (fraction -1).
  for (double frac : {0.0, 0.25, 0.5, 0.75, 0.9, -1.0}) {
    if (frac < 0 && ranked_latency.first < 0) continue;
    CollectiveCurve c;
    const bool fitted = frac < 0 ? ramp_curve(d, ranked_latency.first, ranked_latency.second,
                                              best_bw, knot_step, &c)
                                 : ramp_curve(d, round_sig(frac * tmin), 0, best_bw, knot_step, &c);
    if (!fitted) continue;
    const FitError err = relative_errors(d.predict(c), t);
    // Several group sizes (tables of linearly spaced sizes): candidates compete on the mean
    // relative error weighted by 1 / bytes, i.e. evenly per decade of message size, so the
    // small and middle sizes where latency and ramp matter count as much as the large ones.
    const bool better =
        d.sizes.size() >= 2
            ? size_weighted_error(d.predict(c), t, d.bytes) <
                  size_weighted_error(d.predict(best), t, d.bytes)
            : err.median < best_err.median - 1e-12 ||
                  (std::abs(err.median - best_err.median) <= 1e-12 && err.p90 < best_err.p90);
    if (better) {
      best = c;
      best_err = err;
      best_model = "curve(" + std::to_string(c.efficiency.points.size()) + " knots)";
    }
  }
  if (error) *error = best_err;
  if (model) *model = best_model;
  return best;
}

}  // namespace placer
