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

/// Fails fast when the resident state alone exceeds every device together: no move can make
/// such a graph fit, so searching would only spend the budget.
void check_resident_fits(const Problem& p, const std::vector<int>& devices) {
  const Graph& g = p.graph;
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

/// The colocation units of a graph and the ops of each, CSR style: unit u owns
/// ops[begin[u] .. begin[u + 1]).
struct UnitOps {
  std::vector<int> unit;  ///< unit per op
  int num_units = 0;
  std::vector<size_t> begin;
  std::vector<OpId> ops;

  explicit UnitOps(const Graph& g) {
    unit = colocation_units(g, &num_units);
    begin.assign(num_units + 1, 0);
    for (int u : unit) ++begin[u + 1];
    for (int u = 0; u < num_units; ++u) begin[u + 1] += begin[u];
    ops.resize(g.num_ops());
    std::vector<size_t> fill(begin.begin(), begin.end() - 1);
    for (OpId i = 0; i < g.num_ops(); ++i) ops[fill[unit[i]]++] = i;
  }
};

bool is_registered_method(const std::string& m) {
  return std::any_of(placer_methods().begin(), placer_methods().end(),
                     [&](const MethodInfo& i) { return i.name == m; });
}

/// Only pure placements on the allowed devices can be annealed further.
bool annealable(const Plan& seeded, const Graph& g, const std::vector<int>& devices) {
  return seeded.placement.size() == g.num_ops() && seeded.partitions.empty() &&
         !seeded.pipeline.enabled() && seeded.data_parallel.replicas == 1 &&
         std::all_of(seeded.placement.begin(), seeded.placement.end(), [&](int d) {
           return std::find(devices.begin(), devices.end(), d) != devices.end();
         });
}

/// A placement and what the simulator made of it.
struct ScoredPlacement {
  std::vector<int> placement;
  double cost = 0;  ///< plan_cost
  bool oom = false;
  double step_time = 0;
};

/// One annealing search: the start, then the Markov chain over unit moves. The plan is
/// edited in place and scored by the one shared simulator.
class AnnealRun {
 public:
  AnnealRun(const Problem& p, const AnnealOptions& options, const SearchBudget& budget,
            const BudgetClock& clock, const std::vector<int>& devices, AnnealStats& stats)
      : p_(p),
        g_(p.graph),
        options_(options),
        budget_(budget),
        clock_(clock),
        devices_(devices),
        stats_(stats),
        units_(p.graph),
        plan_(placement_plan(p, {}, "anneal")),
        rng_(budget.seed),
        pick_unit_(0, units_.num_units - 1),
        pick_other_(0, std::max(0, int(devices.size()) - 2)) {
    sim_opts_.critical_path = false;
    apply_frame(p.frame, &plan_);  // scored as it will run; the returned plan is a placement
  }

  /// `initial` when given, else the cheapest of the balanced blocks, the single device and
  /// the seed methods' placements.
  ScoredPlacement choose_start();
  /// The best placement seen from `start` on, fitting ones first.
  ScoredPlacement anneal(const ScoredPlacement& start);

 private:
  bool out_of_budget() const { return clock_.exhausted(stats_.evaluations); }
  ScoredPlacement score(std::vector<int> placement);
  int propose_device(int u);
  bool metropolis_accepts(double delta);
  void report_progress(const ScoredPlacement& best) const;

  const Problem& p_;
  const Graph& g_;
  const AnnealOptions& options_;
  const SearchBudget& budget_;
  const BudgetClock& clock_;
  const std::vector<int>& devices_;
  AnnealStats& stats_;
  const UnitOps units_;
  Plan plan_;
  SimOptions sim_opts_;
  std::mt19937_64 rng_;
  std::uniform_int_distribution<int> pick_unit_;
  std::uniform_real_distribution<double> unif_{0.0, 1.0};
  std::uniform_int_distribution<int> pick_other_;
};

ScoredPlacement AnnealRun::score(std::vector<int> placement) {
  plan_.placement = placement;
  const SimResult r = p_.simulator.run(plan_, sim_opts_);
  ++stats_.evaluations;
  return {std::move(placement), plan_cost(r, p_.cluster, options_.oom_factor), r.oom, r.step_time};
}

ScoredPlacement AnnealRun::choose_start() {
  ScoredPlacement start;
  if (!options_.initial.empty()) {
    PLACER_CHECK(options_.initial.size() == g_.num_ops(),
                 "anneal: initial placement has " + std::to_string(options_.initial.size()) +
                     " entries for " + std::to_string(g_.num_ops()) + " ops");
    stats_.start = "initial";
    start = score(options_.initial);
  } else {
    start = score(balanced_start(g_, units_.unit, units_.num_units, devices_));
    stats_.start = "balanced";
    auto consider = [&](std::vector<int> candidate, const std::string& label) {
      ScoredPlacement c = score(std::move(candidate));
      if (c.cost < start.cost) {
        start = std::move(c);
        stats_.start = label;
      }
    };
    if (devices_.size() > 1 && !out_of_budget()) {
      consider(std::vector<int>(g_.num_ops(), devices_[0]), "single");
    }
    for (const std::string& m : options_.seed_methods) {
      if (m == "anneal" || devices_.size() < 2 || out_of_budget()) continue;
      if (!is_registered_method(m)) continue;
      Plan seeded;
      try {
        seeded = make_placer(m)->search(p_, budget_);
      } catch (const Error&) {
        continue;  // a seed that fails (e.g. memory) is just not a candidate
      }
      if (annealable(seeded, g_, devices_)) consider(std::move(seeded.placement), m);
    }
  }
  stats_.start_step_time = start.step_time;
  stats_.start_oom = start.oom;
  return start;
}

int AnnealRun::propose_device(int u) {
  const OpId first_op = units_.ops[units_.begin[u]];
  const int old_dev = plan_.placement[first_op];
  if (unif_(rng_) < options_.neighbor_move_prob) {
    // Device of a random neighbour of a random op of the unit.
    const size_t count = units_.begin[u + 1] - units_.begin[u];
    const OpId op =
        units_.ops[units_.begin[u] + static_cast<size_t>(unif_(rng_) * double(count)) % count];
    const auto preds = g_.preds(op);
    const auto succs = g_.succs(op);
    const size_t deg = preds.size() + succs.size();
    if (deg > 0) {
      const size_t j = static_cast<size_t>(unif_(rng_) * double(deg)) % deg;
      const OpId nb = j < preds.size() ? preds[j] : succs[j - preds.size()];
      if (plan_.placement[nb] != old_dev) return plan_.placement[nb];
    }
  }
  // A uniformly drawn device other than the current one (old_dev may be outside the allowed
  // set when the start was given; then any allowed device).
  const int k = static_cast<int>(devices_.size());
  int idx = pick_other_(rng_);
  const auto it = std::find(devices_.begin(), devices_.end(), old_dev);
  if (it != devices_.end() && idx >= static_cast<int>(it - devices_.begin())) ++idx;
  return devices_[std::min(idx, k - 1)];
}

/// The Metropolis rule at the temperature of the budget spent so far; `delta` is the cost
/// change relative to the start's cost.
bool AnnealRun::metropolis_accepts(double delta) {
  const double frac = clock_.fraction_spent(stats_.evaluations);
  const double temp =
      options_.t_start * std::pow(options_.t_end / options_.t_start, std::min(1.0, frac));
  return delta <= 0 || unif_(rng_) < std::exp(-delta / temp);
}

void AnnealRun::report_progress(const ScoredPlacement& best) const {
  if (budget_.progress && stats_.evaluations % 16 == 0) {
    budget_.progress(stats_.evaluations, clock_.max_runs(),
                     "best " + human_time(best.step_time) + (best.oom ? " (OOM)" : ""));
  }
}

ScoredPlacement AnnealRun::anneal(const ScoredPlacement& start) {
  plan_.placement = start.placement;  // edited in place from here on
  ScoredPlacement best = start;
  double cur_cost = start.cost;
  const double scale = start.cost > 0 ? start.cost : 1.0;
  std::vector<int> saved;  // devices of the moved unit's ops, to undo a rejected move
  while (devices_.size() > 1 && !out_of_budget()) {
    const int u = pick_unit_(rng_);
    const int new_dev = propose_device(u);
    const size_t begin = units_.begin[u], end = units_.begin[u + 1];
    saved.clear();
    for (size_t j = begin; j < end; ++j) {
      saved.push_back(plan_.placement[units_.ops[j]]);
      plan_.placement[units_.ops[j]] = new_dev;
    }
    const SimResult cand = p_.simulator.run(plan_, sim_opts_);
    ++stats_.evaluations;
    report_progress(best);
    const double cost = plan_cost(cand, p_.cluster, options_.oom_factor);
    if (!metropolis_accepts((cost - cur_cost) / scale)) {
      for (size_t j = begin; j < end; ++j) plan_.placement[units_.ops[j]] = saved[j - begin];
      continue;
    }
    ++stats_.accepted;
    cur_cost = cost;
    // Prefer any fitting plan over OOM ones, then the lower cost.
    if ((best.oom && !cand.oom) || (best.oom == cand.oom && cost < best.cost)) {
      ++stats_.improved;
      best = {plan_.placement, cost, cand.oom, cand.step_time};
    }
  }
  return best;
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
  if (!options_.allow_oom) check_resident_fits(p, devices);

  AnnealRun run(p, options_, budget, clock, devices, stats);
  const ScoredPlacement start = run.choose_start();
  ScoredPlacement best = run.anneal(start);
  stats.best_step_time = best.step_time;
  stats.best_oom = best.oom;
  if (best.oom && !options_.allow_oom) {
    throw Error("anneal: no placement of graph '" + g.name() + "' on " +
                std::to_string(devices.size()) + " device(s) fits in memory after " +
                std::to_string(stats.evaluations) +
                " evaluations (the graph may fit nowhere; try a larger budget)");
  }
  return placement_plan(p, std::move(best.placement), name());
}

void add_search_methods(std::vector<MethodInfo>* out) {
  out->push_back({"anneal",
                  "simulated annealing over colocation-group placements, simulator as the "
                  "objective (FlexFlow); budget in evaluations (default 2000) or seconds",
                  true, [] { return std::unique_ptr<Placer>(new AnnealPlacer()); }});
}

}  // namespace placer
