#include "simulator/calibration/trace_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <unordered_map>

#include "simulator/cost_model.h"
#include "simulator/simulator.h"
#include "src/io/json_read.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"

namespace placer {

std::vector<TracedOp> parse_op_trace(const std::string& json_text, const std::string& file,
                                     const Graph& graph, const Cluster& cluster) {
  const nlohmann::json root = parse_json_text(json_text, file);
  const nlohmann::json* events = nullptr;
  if (root.is_array()) {
    events = &root;
  } else if (root.is_object() && root.contains("traceEvents") && root["traceEvents"].is_array()) {
    events = &root["traceEvents"];
  } else {
    throw FormatError(file + ": not a Chrome trace (expected an object with a traceEvents array)");
  }
  std::unordered_map<std::string, int> names;
  for (size_t i = 0; i < graph.num_ops(); ++i) {
    names.emplace(graph.op(static_cast<OpId>(i)).name, static_cast<int>(i));
  }
  std::vector<TracedOp> out;
  for (size_t i = 0; i < events->size(); ++i) {
    const nlohmann::json& e = (*events)[i];
    if (!e.is_object() || e.value("ph", std::string()) != "X") continue;
    const std::string cat =
        e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : std::string();
    if (cat == "transfer" || cat == "collective") continue;
    if (!e.contains("name") || !e["name"].is_string()) continue;
    const std::string name = e["name"].get<std::string>();
    if (!names.count(name)) continue;
    const std::string where = file + ": traceEvents[" + std::to_string(i) + "]";
    if (!e.contains("ts") || !e["ts"].is_number() || !e.contains("dur") || !e["dur"].is_number()) {
      throw FormatError(where + ": event '" + name + "' needs numeric ts and dur (microseconds)");
    }
    TracedOp t;
    t.name = name;
    int dev = 0;
    if (e.contains("pid") && e["pid"].is_number_integer()) {
      const long long pid = e["pid"].get<long long>();
      if (pid >= 0 && pid < cluster.num_devices()) dev = static_cast<int>(pid);
    }
    t.device = dev;
    t.start = e["ts"].get<double>() * 1e-6;
    t.end = t.start + e["dur"].get<double>() * 1e-6;
    out.push_back(std::move(t));
  }
  if (out.empty()) {
    throw FormatError(file + ": no complete (\"X\") event is named after an op of graph '" +
                      graph.name() + "'");
  }
  return out;
}

std::vector<TracedOp> load_op_trace(const std::string& path, const Graph& graph,
                                    const Cluster& cluster) {
  return parse_op_trace(read_text_file(path, "trace"), path, graph, cluster);
}

std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                std::vector<double> x0, double step, int max_evals, double tol,
                                uint64_t seed, double* best_f, int* evals) {
  const size_t n = x0.size();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> jitter(0.75, 1.25);
  std::vector<std::vector<double>> s(n + 1, x0);
  for (size_t i = 0; i < n; ++i) s[i + 1][i] += step * jitter(rng);
  std::vector<double> fv(n + 1);
  int count = 0;
  for (size_t i = 0; i <= n; ++i) fv[i] = f(s[i]), ++count;
  std::vector<size_t> idx(n + 1);
  while (count < max_evals) {
    for (size_t i = 0; i <= n; ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return fv[a] < fv[b]; });
    const size_t best = idx[0], worst = idx[n], second = idx[n > 0 ? n - 1 : 0];
    if (std::abs(fv[worst] - fv[best]) <= tol) break;
    std::vector<double> c(n, 0.0);
    for (size_t i = 0; i <= n; ++i) {
      if (i == worst) continue;
      for (size_t d = 0; d < n; ++d) c[d] += s[i][d] / static_cast<double>(n);
    }
    auto along = [&](double t) {
      std::vector<double> p(n);
      for (size_t d = 0; d < n; ++d) p[d] = c[d] + t * (s[worst][d] - c[d]);
      return p;
    };
    const std::vector<double> xr = along(-1.0);
    const double fr = f(xr);
    ++count;
    if (fr < fv[best]) {
      const std::vector<double> xe = along(-2.0);
      const double fe = f(xe);
      ++count;
      if (fe < fr) {
        s[worst] = xe, fv[worst] = fe;
      } else {
        s[worst] = xr, fv[worst] = fr;
      }
    } else if (fr < fv[second]) {
      s[worst] = xr, fv[worst] = fr;
    } else {
      const bool outside = fr < fv[worst];
      const std::vector<double> xc = along(outside ? -0.5 : 0.5);
      const double fc = f(xc);
      ++count;
      if (fc < (outside ? fr : fv[worst])) {
        s[worst] = xc, fv[worst] = fc;
      } else {
        for (size_t i = 0; i <= n; ++i) {  // shrink towards the best
          if (i == best) continue;
          for (size_t d = 0; d < n; ++d) s[i][d] = s[best][d] + 0.5 * (s[i][d] - s[best][d]);
          fv[i] = f(s[i]);
          ++count;
        }
      }
    }
  }
  size_t b = 0;
  for (size_t i = 1; i <= n; ++i) {
    if (fv[i] < fv[b]) b = i;
  }
  if (best_f) *best_f = fv[b];
  if (evals) *evals = count;
  return s[b];
}

double trace_error(const Graph& graph, const Cluster& cluster, const Plan& plan,
                   const CostProfile& profile, const std::vector<TracedOp>& measured,
                   int* matched) {
  CostModel cost(cluster, profile);
  Simulator sim(graph, cluster, cost);
  SimOptions opts;
  opts.record_events = true;
  opts.critical_path = false;
  const SimResult r = sim.run(plan, opts);
  // Simulated intervals by (op, device), in start order.
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> sim_ops;
  for (const SimEvent& e : r.events) {
    if (e.kind != SimEvent::kCompute && e.kind != SimEvent::kOptimizer) continue;
    sim_ops[{static_cast<int>(e.op), e.device}].emplace_back(e.start, e.end);
  }
  for (auto& [k, v] : sim_ops) std::sort(v.begin(), v.end());
  std::unordered_map<std::string, int> names;
  for (size_t i = 0; i < graph.num_ops(); ++i) {
    names.emplace(graph.op(static_cast<OpId>(i)).name, static_cast<int>(i));
  }
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> meas_ops;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const TracedOp& t : measured) {
    auto it = names.find(t.name);
    if (it == names.end()) continue;
    meas_ops[{it->second, t.device}].emplace_back(t.start, t.end);
    lo = std::min(lo, t.start);
    hi = std::max(hi, t.end);
  }
  double sum = 0;
  int n = 0;
  for (auto& [k, v] : meas_ops) {
    std::sort(v.begin(), v.end());
    auto it = sim_ops.find(k);
    if (it == sim_ops.end()) continue;
    const size_t m = std::min(v.size(), it->second.size());
    for (size_t i = 0; i < m; ++i) {
      // Measured times relative to the trace's first op.
      const double ds = it->second[i].first - (v[i].first - lo);
      const double de = it->second[i].second - (v[i].second - lo);
      sum += 0.5 * (ds * ds + de * de);
      ++n;
    }
  }
  if (matched) *matched = n;
  if (n == 0) {
    throw ValidationError("trace fit: no traced op matches a simulated op (by name and device)");
  }
  const double span = hi > lo ? hi - lo : 1.0;
  return std::sqrt(sum / n) / span;
}

TraceFitResult fit_transfer_constants(const Graph& graph, const Cluster& cluster, const Plan& plan,
                                      const CostProfile& base,
                                      const std::vector<TracedOp>& measured,
                                      const TraceFitOptions& options) {
  cluster.validate();
  TraceFitResult res;
  res.profile = base;
  std::vector<LinkLevel> levels = options.levels;
  if (levels.empty()) {
    // Levels the plan's device pairs use.
    std::vector<bool> used(kNumLinkLevels, false);
    std::vector<bool> dev_used(static_cast<size_t>(cluster.num_devices()), false);
    for (int d : plan.placement) {
      if (d >= 0 && d < cluster.num_devices()) dev_used[static_cast<size_t>(d)] = true;
    }
    for (const TracedOp& t : measured) dev_used[static_cast<size_t>(t.device)] = true;
    for (int a = 0; a < cluster.num_devices(); ++a) {
      for (int b = 0; b < cluster.num_devices(); ++b) {
        if (a != b && dev_used[static_cast<size_t>(a)] && dev_used[static_cast<size_t>(b)]) {
          used[static_cast<size_t>(cluster.level(a, b))] = true;
        }
      }
    }
    for (int l = 1; l < kNumLinkLevels; ++l) {
      if (used[static_cast<size_t>(l)]) levels.push_back(static_cast<LinkLevel>(l));
    }
  }
  if (levels.empty()) {
    throw ValidationError("trace fit: the plan uses one device; there are no transfers to fit");
  }
  res.levels = levels;
  std::vector<double> x0;
  for (LinkLevel l : levels) {
    const LinkOverride& o = base.link(l);
    const LinkSpec& s = cluster.link(l);
    const double lat = o.latency >= 0 ? o.latency : s.latency;
    const double bw = (o.bandwidth > 0 ? o.bandwidth : s.bandwidth) * o.bandwidth_efficiency;
    x0.push_back(std::log(std::max(lat, 1e-9)));
    x0.push_back(std::log(std::max(bw, 1.0)));
  }
  auto apply = [&](const std::vector<double>& x) {
    CostProfile p = base;
    for (size_t i = 0; i < levels.size(); ++i) {
      LinkOverride& o = p.link(levels[i]);
      o.latency = std::exp(std::min(10.0, std::max(-40.0, x[2 * i])));
      o.bandwidth = std::exp(std::min(80.0, std::max(0.0, x[2 * i + 1])));
      o.bandwidth_efficiency = 1.0;
    }
    return p;
  };
  auto f = [&](const std::vector<double>& x) {
    return trace_error(graph, cluster, plan, apply(x), measured);
  };
  res.initial_error = trace_error(graph, cluster, plan, apply(x0), measured, &res.matched);
  double best = 0;
  int evals = 0;
  std::vector<double> x =
      nelder_mead(f, x0, 0.7, options.max_evaluations, 1e-12, options.seed, &best, &evals);
  res.evaluations = evals;
  // One restart from the best point (Nelder-Mead can stall on a degenerate simplex).
  if (evals < options.max_evaluations) {
    int more = 0;
    double b2 = best;
    std::vector<double> x2 = nelder_mead(f, x, 0.2, options.max_evaluations - evals, 1e-14,
                                         options.seed + 1, &b2, &more);
    res.evaluations += more;
    if (b2 < best) x = x2, best = b2;
  }
  res.profile = apply(x);
  res.final_error = best;
  return res;
}

}  // namespace placer
