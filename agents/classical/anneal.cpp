// `anneal`: simulated annealing over placements (see agents/classical/anneal.h for the method).
#include "agents/classical/anneal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "agents/api/methods.h"
#include "agents/common/outcome.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer {

/// What one search did; search_outcome reports it.
struct AnnealStats {
  std::string start;        ///< which start won: "initial", "balanced", "single" or a method
  int64_t evaluations = 0;  ///< Simulator::run calls, the start's included
  int64_t accepted = 0;     ///< accepted proposals
  int64_t improved = 0;     ///< times the best plan improved
  double start_step_time = 0;
  bool start_oom = false;
  double best_step_time = 0;
  bool best_oom = false;
};

namespace {

double plan_cost(const SimResult& r, const Cluster& c, double oom_factor) {
  if (!r.oom) return r.step_time;
  double overflow = 0;
  for (int d = 0; d < c.num_devices(); ++d) {
    const double cap = double(c.device(d).spec.memory_bytes);
    if (cap > 0) overflow = std::max(overflow, double(r.peak_memory[d]) / cap - 1.0);
  }
  return r.step_time * (oom_factor + std::max(0.0, overflow));
}

/// Contiguous blocks of units (in topological order of their first op) balanced by FLOPs.
std::vector<int> balanced_start(const Graph& g, const std::vector<int>& unit, int num_units,
                                const std::vector<int>& devices) {
  std::vector<double> flops(num_units, 0);
  std::vector<size_t> first(num_units, std::numeric_limits<size_t>::max());
  const std::vector<OpId>& topo = g.topo_order();
  for (size_t pos = 0; pos < topo.size(); ++pos) {
    const int u = unit[topo[pos]];
    flops[u] += g.op(topo[pos]).flops;
    first[u] = std::min(first[u], pos);
  }
  std::vector<int> order(num_units);
  for (int u = 0; u < num_units; ++u) order[u] = u;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return first[a] < first[b]; });
  double total = 0;
  for (double f : flops) total += f;
  const size_t k = devices.size();
  std::vector<int> unit_dev(num_units, devices[0]);
  double before = 0;
  for (int u : order) {
    // The block whose share contains the unit's midpoint.
    const double mid = total > 0 ? (before + flops[u] / 2) / total : 0;
    const size_t block = std::min(k - 1, static_cast<size_t>(mid * double(k)));
    unit_dev[u] = devices[block];
    before += flops[u];
  }
  std::vector<int> placement(g.num_ops());
  for (size_t i = 0; i < placement.size(); ++i) placement[i] = unit_dev[unit[i]];
  return placement;
}

}  // namespace

SearchOutcome AnnealPlacer::search_outcome(const Problem& p, const SearchBudget& budget) {
  AnnealStats stats;
  Plan plan = search_plan(p, budget, stats);
  SearchOutcome out = search_outcome_of(std::move(plan), stats.evaluations, 0, 0,
                                        {{"accepted", double(stats.accepted)},
                                         {"improved", double(stats.improved)},
                                         {"start_step_time", stats.start_step_time},
                                         {"best_step_time", stats.best_step_time},
                                         {"start_oom", stats.start_oom ? 1.0 : 0.0},
                                         {"best_oom", stats.best_oom ? 1.0 : 0.0}});
  out.stats.add_note("start", stats.start);
  return out;
}

Plan AnnealPlacer::search_plan(const Problem& p, const SearchBudget& budget,
                               AnnealStats& stats) const {
  const Graph& g = p.graph;
  const std::vector<int> devices = problem_devices(p);
  PLACER_CHECK(!devices.empty(), "anneal: no devices to place on");
  PLACER_CHECK(g.num_ops() > 0, "anneal: the graph has no ops");
  const BudgetClock clock(budget, "anneal", options_.default_evaluations);
  if (!options_.allow_oom) {
    // Fail fast when the resident state alone exceeds every device together: no move can
    // make such a graph fit, so searching would only spend the budget.
    uint64_t resident = 0, capacity = 0;
    for (OpId i = 0; i < g.num_ops(); ++i) resident += resident_bytes(g, i);
    for (int d : devices) capacity += p.cluster.device(d).spec.memory_bytes;
    if (resident > capacity) {
      throw Error("anneal: graph '" + g.name() + "' needs " + human_bytes(double(resident)) +
                  " resident (parameters, gradients, optimizer state), the " +
                  std::to_string(devices.size()) + " device(s) hold " +
                  human_bytes(double(capacity)));
    }
  }

  int num_units = 0;
  const std::vector<int> unit = colocation_units(g, &num_units);
  // Ops of each unit, CSR style.
  std::vector<size_t> unit_begin(num_units + 1, 0);
  for (int u : unit) ++unit_begin[u + 1];
  for (int u = 0; u < num_units; ++u) unit_begin[u + 1] += unit_begin[u];
  std::vector<OpId> unit_ops(g.num_ops());
  {
    std::vector<size_t> fill(unit_begin.begin(), unit_begin.end() - 1);
    for (OpId i = 0; i < g.num_ops(); ++i) unit_ops[fill[unit[i]]++] = i;
  }

  auto out_of_budget = [&]() { return clock.exhausted(stats.evaluations); };

  SimOptions sim_opts;
  sim_opts.critical_path = false;
  Plan plan = placement_plan(p, {}, name());
  apply_frame(p.frame, &plan);  // scored as it will run; the returned plan is a placement
  auto evaluate = [&](const std::vector<int>& placement, SimResult* r) {
    plan.placement = placement;
    *r = p.simulator.run(plan, sim_opts);
    ++stats.evaluations;
    return plan_cost(*r, p.cluster, options_.oom_factor);
  };

  // Start: the given placement, or the cheaper of single device and balanced blocks.
  std::vector<int> current;
  SimResult r;
  double cur_cost = 0;
  bool cur_oom = false;
  if (!options_.initial.empty()) {
    PLACER_CHECK(options_.initial.size() == g.num_ops(),
                 "anneal: initial placement has " + std::to_string(options_.initial.size()) +
                     " entries for " + std::to_string(g.num_ops()) + " ops");
    current = options_.initial;
    stats.start = "initial";
    cur_cost = evaluate(current, &r);
    cur_oom = r.oom;
    stats.start_step_time = r.step_time;
  } else {
    current = balanced_start(g, unit, num_units, devices);
    cur_cost = evaluate(current, &r);
    cur_oom = r.oom;
    stats.start_step_time = r.step_time;
    stats.start = "balanced";
    auto consider = [&](std::vector<int> candidate, const std::string& label) {
      const double c = evaluate(candidate, &r);
      if (c < cur_cost) {
        current = std::move(candidate);
        cur_cost = c;
        cur_oom = r.oom;
        stats.start_step_time = r.step_time;
        stats.start = label;
      }
    };
    if (devices.size() > 1 && !out_of_budget()) {
      consider(std::vector<int>(g.num_ops(), devices[0]), "single");
    }
    for (const std::string& m : options_.seed_methods) {
      if (m == name() || devices.size() < 2 || out_of_budget()) continue;
      const bool known = std::any_of(placer_methods().begin(), placer_methods().end(),
                                     [&](const MethodInfo& i) { return i.name == m; });
      if (!known) continue;
      Plan seeded;
      try {
        seeded = make_placer(m)->search(p, budget);
      } catch (const Error&) {
        continue;  // a seed that fails (e.g. memory) is just not a candidate
      }
      // Only pure placements on the allowed devices can be annealed further.
      const bool usable = seeded.placement.size() == g.num_ops() && seeded.partitions.empty() &&
                          !seeded.pipeline.enabled() && seeded.data_parallel.replicas == 1 &&
                          std::all_of(seeded.placement.begin(), seeded.placement.end(), [&](int d) {
                            return std::find(devices.begin(), devices.end(), d) != devices.end();
                          });
      if (usable) consider(std::move(seeded.placement), m);
    }
  }
  stats.start_oom = cur_oom;
  plan.placement = current;  // edited in place from here on

  std::vector<int> best = current;
  double best_cost = cur_cost;
  bool best_oom = cur_oom;
  double best_time = stats.start_step_time;
  const double scale = cur_cost > 0 ? cur_cost : 1.0;

  std::mt19937_64 rng(budget.seed);
  std::uniform_int_distribution<int> pick_unit(0, num_units - 1);
  std::uniform_real_distribution<double> unif(0.0, 1.0);
  const int k = static_cast<int>(devices.size());
  std::uniform_int_distribution<int> pick_other(0, std::max(0, k - 2));

  std::vector<int> saved;  // devices of the moved unit's ops, to undo a rejected move
  while (k > 1 && !out_of_budget()) {
    const int u = pick_unit(rng);
    const OpId first_op = unit_ops[unit_begin[u]];
    const int old_dev = plan.placement[first_op];
    int new_dev = -1;
    if (unif(rng) < options_.neighbor_move_prob) {
      // Device of a random neighbour of a random op of the unit.
      const size_t count = unit_begin[u + 1] - unit_begin[u];
      const OpId op =
          unit_ops[unit_begin[u] + static_cast<size_t>(unif(rng) * double(count)) % count];
      const auto preds = g.preds(op);
      const auto succs = g.succs(op);
      const size_t deg = preds.size() + succs.size();
      if (deg > 0) {
        const size_t j = static_cast<size_t>(unif(rng) * double(deg)) % deg;
        const OpId nb = j < preds.size() ? preds[j] : succs[j - preds.size()];
        if (plan.placement[nb] != old_dev) new_dev = plan.placement[nb];
      }
    }
    if (new_dev < 0) {
      // A uniformly drawn device other than the current one (old_dev may be outside the
      // allowed set when the start was given; then any allowed device).
      int idx = pick_other(rng);
      const auto it = std::find(devices.begin(), devices.end(), old_dev);
      if (it != devices.end() && idx >= static_cast<int>(it - devices.begin())) ++idx;
      new_dev = devices[std::min(idx, k - 1)];
    }
    saved.clear();
    for (size_t j = unit_begin[u]; j < unit_begin[u + 1]; ++j) {
      saved.push_back(plan.placement[unit_ops[j]]);
      plan.placement[unit_ops[j]] = new_dev;
    }
    const SimResult cand = p.simulator.run(plan, sim_opts);
    ++stats.evaluations;
    if (budget.progress && stats.evaluations % 16 == 0) {
      budget.progress(stats.evaluations, clock.max_runs(),
                      "best " + human_time(best_time) + (best_oom ? " (OOM)" : ""));
    }
    const double cost = plan_cost(cand, p.cluster, options_.oom_factor);

    const double frac = clock.fraction_spent(stats.evaluations);
    const double temp =
        options_.t_start * std::pow(options_.t_end / options_.t_start, std::min(1.0, frac));
    const double delta = (cost - cur_cost) / scale;
    const bool accept = delta <= 0 || unif(rng) < std::exp(-delta / temp);
    if (accept) {
      ++stats.accepted;
      cur_cost = cost;
      // Prefer any fitting plan over OOM ones, then the lower cost.
      const bool better = (best_oom && !cand.oom) || (best_oom == cand.oom && cost < best_cost);
      if (better) {
        ++stats.improved;
        best_cost = cost;
        best_oom = cand.oom;
        best_time = cand.step_time;
        best = plan.placement;
      }
    } else {
      for (size_t j = unit_begin[u]; j < unit_begin[u + 1]; ++j) {
        plan.placement[unit_ops[j]] = saved[j - unit_begin[u]];
      }
    }
  }
  stats.best_step_time = best_time;
  stats.best_oom = best_oom;
  if (best_oom && !options_.allow_oom) {
    throw Error("anneal: no placement of graph '" + g.name() + "' on " +
                std::to_string(devices.size()) + " device(s) fits in memory after " +
                std::to_string(stats.evaluations) +
                " evaluations (the graph may fit nowhere; try a larger budget)");
  }
  return placement_plan(p, std::move(best), name());
}

void add_search_methods(std::vector<MethodInfo>* out) {
  out->push_back({"anneal",
                  "simulated annealing over colocation-group placements, simulator as the "
                  "objective (FlexFlow); budget in evaluations (default 2000) or seconds",
                  true, [] { return std::unique_ptr<Placer>(new AnnealPlacer()); }});
}

}  // namespace placer
