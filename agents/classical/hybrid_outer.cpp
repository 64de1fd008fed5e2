#include "agents/classical/hybrid_outer.h"

#include <algorithm>
#include <vector>

#include "agents/api/methods.h"
#include "agents/common/outcome.h"
#include "src/util/error.h"

namespace placer {

Plan HybridOuterPlacer::search(const Problem& problem, const SearchBudget& budget) {
  stats_ = {};
  const std::vector<int> devices = problem_devices(problem);
  const int n = static_cast<int>(devices.size());
  const int64_t batch = problem.graph.batch_size();
  std::vector<int> replica_counts;
  for (int r = 1; r <= n; ++r) {
    // Replicas stride over the problem's devices; they must split the batch evenly.
    if (n % r == 0 && (batch <= 0 || batch % r == 0)) replica_counts.push_back(r);
  }
  // A method that honours the frame searches twice per replica count: inside (R, 1), then
  // inside (R, M2): M2 = the best M of the first placement when > 1, else the largest power
  // of two <= min(8, max_micro_batches, samples per replica) (a placement that is fastest
  // unpipelined, e.g. all on one device, says nothing about the M a pipeline wants; GPipe
  // runs M >= 4 x stages).
  const bool framed = inner_->honours_frame();
  SearchBudget inner_budget = budget;
  const int64_t k = static_cast<int64_t>(replica_counts.size()) * (framed ? 2 : 1);
  if (budget.max_evaluations > 0) inner_budget.max_evaluations = std::max<int64_t>(1, budget.max_evaluations / k);
  if (budget.max_seconds > 0) inner_budget.max_seconds = budget.max_seconds / static_cast<double>(k);

  bool identity = n == problem.cluster.num_devices();
  for (int i = 0; i < n && identity; ++i) identity = devices[size_t(i)] == i;
  // Position of each cluster device in the problem's device list (0 for the others).
  std::vector<int> slot_of(size_t(problem.cluster.num_devices()), 0);
  for (int i = 0; i < n; ++i) slot_of[size_t(devices[size_t(i)])] = i;
  // Replica 0 on the first n / r devices; the default stride needs them to be the cluster's
  // devices 0 .. n / r - 1 when the problem uses all devices, else each replica is mapped.
  auto replica_map = [&](int r) {
    std::vector<std::vector<int>> map;
    if (r == 1 || identity) return map;
    map.assign(size_t(r), {});
    for (int q = 0; q < r; ++q) {
      for (int d = 0; d < problem.cluster.num_devices(); ++d) {
        map[size_t(q)].push_back(devices[size_t(q * (n / r) + slot_of[size_t(d)] % (n / r))]);
      }
    }
    return map;
  };
  // Samples a replica runs (the micro-batch bound), or max_micro_batches_ without a batch.
  auto samples_per_replica = [&](int r) { return batch > 0 ? batch / r : int64_t(max_micro_batches_); };
  Plan best;
  bool have = false, best_oom = true;
  double best_time = 0;
  // Simulates the inner method's plan on the sub-cluster of n / r devices under every M;
  // returns the fastest M of a placement (1 for other plans or when nothing ran).
  auto try_frames = [&](int r, const PlanFrame& frame) {
    Problem sub{problem.graph, problem.cluster, problem.cost, problem.simulator,
                std::vector<int>(devices.begin(), devices.begin() + n / r), frame};
    Plan base;
    try {
      base = inner_->search(sub, inner_budget);
    } catch (const Error&) {
      return 1;  // e.g. the graph fits on no arrangement of this sub-cluster
    }
    ++stats_.inner_runs;
    // A staged or partitioned plan already chose its own pipeline and splits: kept as is.
    const bool placement_only = !base.pipeline.enabled() && base.partitions.empty() &&
                                base.data_parallel.replicas == 1;
    if (!placement_only && r > 1) return 1;
    const int64_t samples = samples_per_replica(r);
    int fastest_m = 1;
    double fastest = 0;
    for (int m = 1; m <= max_micro_batches_ && m <= samples; ++m) {
      if (samples % m != 0 || (m & (m - 1)) != 0) continue;  // powers of two dividing the samples
      if (!placement_only && m > 1) break;
      Plan plan = base;
      if (placement_only) apply_frame({m, r, frame.replica_devices}, &plan);
      SimResult res;
      try {
        res = problem.simulator.run(plan);
      } catch (const Error&) {
        continue;
      }
      ++stats_.simulated;
      if (!res.oom && (fastest == 0 || res.step_time < fastest)) fastest = res.step_time, fastest_m = m;
      if (!have || (best_oom && !res.oom) || (best_oom == res.oom && res.step_time < best_time)) {
        have = true, best_oom = res.oom, best_time = res.step_time;
        best = std::move(plan);
        stats_.replicas = r, stats_.micro_batches = m;
      }
    }
    return fastest_m;
  };
  for (int r : replica_counts) {
    const PlanFrame unframed{1, r, replica_map(r)};
    int m = try_frames(r, unframed);
    if (!framed) continue;
    if (m == 1) {
      const int64_t samples = samples_per_replica(r);
      while (2 * m <= std::min<int64_t>({8, max_micro_batches_, samples}) && samples % (2 * m) == 0) m *= 2;
    }
    if (m > 1) try_frames(r, PlanFrame{m, r, unframed.replica_devices});
  }
  if (!have) throw Error(name() + ": the inner method found no plan on any sub-cluster");
  best.method = name();
  return best;
}

SearchOutcome HybridOuterPlacer::search_outcome(const Problem& problem,
                                               const SearchBudget& budget) {
  Plan plan = search(problem, budget);
  return search_outcome_of(std::move(plan), 0, 0, 0,
                           {{"inner_runs", stats_.inner_runs},
                            {"simulated", stats_.simulated},
                            {"replicas", stats_.replicas},
                            {"micro_batches", stats_.micro_batches}});
}

void add_hybrid_methods(std::vector<MethodInfo>* out) {
  out->push_back({"m-etf+hybrid",
                  "m-etf on a sub-cluster of N / R devices, R data-parallel replicas and M "
                  "micro-batches through the placement, the best (R, M) by simulation",
                  true, [] { return std::make_unique<HybridOuterPlacer>(make_placer("m-etf")); }});
}

}  // namespace placer
