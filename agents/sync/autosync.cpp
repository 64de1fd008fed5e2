#include "agents/sync/autosync.h"

#include <algorithm>
#include <random>

#include "agents/api/methods.h"
#include "agents/common/method_options.h"
#include "agents/sync/autosync_rl.h"
#include "agents/sync/sync_builders.h"
#include "src/graph/sparse_gradients.h"

namespace placer {

namespace {

constexpr size_t kSingleUnits = 31;  // largest variables searched one by one

// The budget of autosync-search and its coordinate descent: kAutosyncDefaultEvals runs when
// the budget gives none, also under a time limit.
BudgetClock autosync_clock(const SearchBudget& budget) {
  return BudgetClock(budget, "autosync-search", kAutosyncDefaultEvals,
                     BudgetClock::Default::kWithoutRunLimit);
}

// Alternatives to `cur` for one unit (kNoOp = the default of the small variables).
std::vector<VariableSync> candidates(const Graph& g, OpId v, size_t unit, const VariableSync& cur,
                                     const std::vector<int>& servers, int R,
                                     const SearchBudget& budget);

class AutoSyncSearchPlacer : public Placer {
 public:
  std::string name() const override { return "autosync-search"; }
  Plan search(const Problem& p, const SearchBudget& budget) override {
    const BudgetClock clock = autosync_clock(budget);
    Plan plan = replicated_plan(p, name());
    const std::vector<int> servers = ps_servers(p.cluster, problem_devices(p));
    const int R = plan.data_parallel.replicas;
    const Graph& g = p.graph;
    // Start from the best builder.
    int64_t evals = 0;
    double best = 0;
    SynchronizationConfig start;
    for (const SynchronizationConfig& s :
         {horovod_sync(), ps_sync(g, servers), parallax_sync(g, servers, R),
          poseidon_sync(g, servers, R)}) {
      plan.synchronization = s;
      const double t = sync_step_time(p, plan);
      if (++evals == 1 || t < best) best = t, start = s;
    }
    // The descent gets the rest of the budget (at least one run; seconds from now).
    SearchBudget rest = budget;
    rest.max_evaluations = std::max<int64_t>(clock.max_runs() - evals, 1);
    if (clock.max_seconds() > 0)
      rest.max_seconds = std::max(clock.max_seconds() - clock.elapsed(), 1e-3);
    plan.synchronization = autosync_coordinate_descent(p, rest, start, best).config;
    return plan;
  }
};

}  // namespace

double sync_step_time(const Problem& p, const Plan& plan) {
  SimOptions o;
  o.critical_path = false;
  const SimResult r = p.simulator.run(plan, o);
  return r.oom ? r.step_time * 1e3 : r.step_time;  // a plan that fits beats any OOM one
}

CoordinateDescentResult autosync_coordinate_descent(const Problem& p, const SearchBudget& budget,
                                                    const SynchronizationConfig& start,
                                                    double start_time) {
  const BudgetClock clock = autosync_clock(budget);
  CoordinateDescentResult res;
  auto out_of_budget = [&] { return clock.exhausted(res.evaluations); };
  Plan plan = replicated_plan(p, "autosync-search");
  auto step_of = [&](const Plan& pl) {
    ++res.evaluations;
    return sync_step_time(p, pl);
  };
  const Graph& g = p.graph;
  const int R = plan.data_parallel.replicas;
  const std::vector<int> servers = ps_servers(p.cluster, problem_devices(p));

  // Units: the largest variables alone, the rest as the default strategy.
  std::vector<OpId> vars = sync_variables(g);
  std::stable_sort(vars.begin(), vars.end(),
                   [&](OpId a, OpId b) { return g.op(a).param_bytes > g.op(b).param_bytes; });
  if (vars.size() > kSingleUnits) vars.resize(kSingleUnits);
  std::vector<VariableSync> choice;  // per unit; index vars.size() = the default
  for (OpId v : vars) choice.push_back(start.strategy_of(g, v));
  choice.push_back(start.default_strategy);
  auto config = [&] {
    SynchronizationConfig s;
    s.enabled = true;
    s.default_strategy = choice.back();
    // Units equal to the default need no rule (and the default covers the rest).
    for (size_t i = 0; i < vars.size(); ++i) {
      if (!(choice[i] == s.default_strategy)) {
        s.rules.push_back(SyncRule{SyncMatch::kName, g.op(vars[i]).name, choice[i]});
      }
    }
    return s;
  };
  // The start itself stays the answer unless the search beats it (a builder's per-variable
  // PS assignments of small variables are not all expressible as units).
  plan.synchronization = config();
  double best = step_of(plan);

  std::mt19937_64 rng(budget.seed);
  std::vector<size_t> order(choice.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  bool improved = true;
  while (improved && !out_of_budget()) {
    improved = false;
    // Fisher-Yates on the engine's raw output (std::shuffle differs between libraries).
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
    for (size_t u : order) {
      if (out_of_budget()) break;
      for (const VariableSync& cand :
           candidates(g, u < vars.size() ? vars[u] : kNoOp, u, choice[u], servers, R, budget)) {
        if (out_of_budget()) break;
        const VariableSync keep = choice[u];
        choice[u] = cand;
        plan.synchronization = config();
        const double t = step_of(plan);
        if (t < best * (1 - 1e-9)) {
          best = t;
          improved = true;
        } else {
          choice[u] = keep;
        }
      }
    }
  }
  if (best < start_time) {
    res.config = config();
    res.step_time = best;
  } else {
    res.config = start;
    res.step_time = start_time;
  }
  return res;
}

namespace {

std::vector<VariableSync> candidates(const Graph& g, OpId v, size_t unit, const VariableSync& cur,
                                     const std::vector<int>& servers, int R,
                                     const SearchBudget& budget) {
  std::vector<VariableSync> out;
  auto add = [&](VariableSync s) {
    if (!(s == cur)) out.push_back(std::move(s));
  };
  VariableSync ring, hier;
  hier.algorithm = SyncScheme::kHierarchical;
  add(ring);
  add(hier);
  add(sharded_ps(servers));
  VariableSync no_local = sharded_ps(servers);
  no_local.local_aggregation = false;
  add(no_local);
  // Whole on one server (load balancing between units): up to 4 servers, offset by unit.
  for (size_t k = 0; k < std::min<size_t>(servers.size(), 4) && servers.size() > 1; ++k) {
    add(sharded_ps({servers[(unit + k) % servers.size()]}));
  }
  if (v != kNoOp && sparse_gradient(g, v, R).sparse) {
    VariableSync ag;
    ag.synchronizer = Synchronizer::kAllGather;
    add(ag);
  }
  if (v != kNoOp && sfb_pays(g, v, R)) {
    VariableSync f;
    f.synchronizer = Synchronizer::kFactorBroadcast;
    add(f);
  }
  // Lossy variants of the current synchronizer, only when allowed.
  if (budget.allow_compression) {
    for (Compressor c : {Compressor::kFP16, Compressor::kPowerSGD, Compressor::kTopK}) {
      VariableSync s = cur;
      s.compressor = c;
      add(s);
    }
  }
  for (int st = 1; st <= budget.max_staleness; ++st) {
    VariableSync s = cur;
    s.staleness = st;
    add(s);
  }
  return out;
}

}  // namespace

std::unique_ptr<Placer> make_autosync_placer() { return std::make_unique<AutoSyncSearchPlacer>(); }

void add_sync_methods(std::vector<MethodInfo>* out) {
  add_sync_builder_methods(out);
  out->push_back({"autosync-search",
                  "data parallel, per-variable sync strategy searched on the simulator "
                  "(seeded coordinate descent from the best builder; not learned)",
                  false, [] { return make_autosync_placer(); }});
  if (autosync_rl_available()) {
    out->push_back(with_options(
        MethodInfo{"autosync",
                   "data parallel, per-variable sync strategy by a Rainbow DQN agent trained "
                   "online on the simulator (or zero-shot with --policy), then polished by "
                   "autosync-search's descent",
                   false, [] { return make_autosync_rl_placer(); }},
        autosync_option_table(), AutosyncOptions{},
        [](const AutosyncOptions& o) { return make_autosync_rl_placer(o); }));
  }
}

}  // namespace placer
