#include "agents/classical/megatron_grid.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>

#include "agents/api/methods.h"
#include "agents/api/search_budget.h"
#include "agents/common/outcome.h"
#include "src/plan/megatron_config_of.h"
#include "src/plan/parallel_layouts.h"
#include "src/plan/tensor_parallel.h"
#include "src/util/error.h"

namespace placer {

namespace {

/// Simulator runs the grid may spend when the budget gives neither runs nor seconds: more
/// than a typical grid holds (a 1.3B GPT on 8 GPUs: 270 configurations), so that by default
/// the grid runs to its end and the plan does not depend on the machine's speed or load.
constexpr int64_t kDefaultRuns = 1000;

[[noreturn]] void fail(const std::string& m) { throw Error("megatron: " + m); }

/// Memory savers in the order a user reaches for them (cheapest in time first).
struct Saver {
  bool sp;
  int zero;
  Recompute recompute;
};
constexpr Saver kSavers[] = {
    {false, 0, Recompute::kNone},      {true, 0, Recompute::kNone},
    {false, 1, Recompute::kNone},      {true, 1, Recompute::kNone},
    {true, 1, Recompute::kSelective},  {true, 1, Recompute::kFull},
};

}  // namespace

/// The micro-batch sizes, virtual stages and memory savers of one (tp, cp, pp, dp, ep,
/// etp) layout: every configuration is counted, those the estimate fits are kept.
void add_layout(const MegatronEstimator& est, const MegatronConfig& layout, MegatronGrid* grid) {
  const TransformerShape& sh = est.shape();
  const int dp = layout.dp, pp = layout.pp;
  for (int mb : divisors_of(sh.global_batch / dp)) {
    const int M = sh.global_batch / (dp * mb);
    for (int v : divisors_of(sh.layers / pp)) {
      if (v > 1 && (pp == 1 || M % pp != 0 || v > 4)) continue;
      bool fitted_plain = false;
      for (const Saver& s : kSavers) {
        if ((s.sp && layout.tp == 1) || (s.zero > 0 && dp * layout.cp == 1)) continue;
        // Recomputation only when the cheaper savers do not fit: it always costs time.
        if (s.recompute != Recompute::kNone && fitted_plain) break;
        MegatronConfig m = layout;
        m.micro_batch = mb, m.virtual_stages = v, m.sequence_parallel = s.sp;
        m.zero_stage = s.zero, m.recompute = s.recompute;
        ++grid->enumerated;
        MegatronCandidate c = est.estimate(m);
        if (c.memory_bytes > est.device_memory()) continue;
        if (s.recompute == Recompute::kNone) fitted_plain = true;
        grid->fitting.push_back(c);
      }
    }
  }
}

MegatronGrid megatron_grid(const Problem& problem) {
  const MegatronEstimator est(problem);
  const TransformerShape& sh = est.shape();
  const std::vector<int> devs = problem_devices(problem);
  for (size_t i = 1; i < devs.size(); ++i) {
    if (devs[i] != devs[0] + static_cast<int>(i)) fail("the devices must be consecutive ids");
  }
  const int n = static_cast<int>(devs.size());
  const int per_host = static_cast<int>(problem.cluster.host(problem.cluster.device(devs[0]).host).devices.size());
  // Megatron-LM scales the loss dynamically in fp16 only (bf16 and f32 train without).
  const bool fp16 = plan_compute_dtype(Plan{}, problem.graph) == DType::kF16;
  MegatronGrid grid;
  for (int tp : divisors_of(n)) {
    if (sh.heads % tp != 0 || tp > per_host) continue;
    for (int cp : context_degrees(sh, n / tp)) {
      for (int pp : divisors_of(n / (tp * cp))) {
        if (sh.layers % pp != 0) continue;
        const int dp = n / (tp * cp * pp);
        if (sh.global_batch % dp != 0) continue;
        for (const auto& [ep, etp] : expert_layouts(sh, tp, cp, dp)) {
          MegatronConfig m;
          m.tp = tp, m.cp = cp, m.pp = pp, m.dp = dp, m.ep = ep, m.etp = etp;
          m.global_batch = sh.global_batch, m.first_device = devs[0], m.loss_scaling = fp16;
          add_layout(est, m, &grid);
        }
      }
    }
  }
  std::stable_sort(grid.fitting.begin(), grid.fitting.end(),
                   [](const MegatronCandidate& a, const MegatronCandidate& b) {
                     return a.step_seconds < b.step_seconds;
                   });
  return grid;
}

Plan MegatronGridPlacer::search(const Problem& problem, const SearchBudget& budget) {
  // Runs default to kDefaultRuns when the budget gives no limit; seconds only bind when given.
  const BudgetClock clock(budget, name(), kDefaultRuns);
  stats_ = {};
  const MegatronGrid grid = megatron_grid(problem);
  stats_.enumerated = grid.enumerated;
  stats_.fitting = static_cast<int>(grid.fitting.size());
  if (grid.fitting.empty()) {
    fail("none of the " + std::to_string(grid.enumerated) +
         " configurations fits in device memory by the analytic estimate");
  }
  Plan best;
  bool have = false, best_oom = true;
  double best_time = 0;
  std::string last_error;
  for (size_t i = 0; i < grid.fitting.size(); ++i) {
    if (stats_.simulated > 0 && clock.exhausted(stats_.simulated)) break;
    const MegatronConfig& m = grid.fitting[i].config;
    Plan plan;
    SimResult r;
    try {
      plan = megatron_plan(problem.graph, m);
      plan.validate(problem.graph, problem.cluster);  // what a plan file must pass
      r = problem.simulator.run(plan);
    } catch (const Error& e) {
      last_error = e.what();  // e.g. an op the tensor-parallel rules cannot split
      continue;
    }
    ++stats_.simulated;
    if (budget.progress) budget.progress(int64_t(i + 1), int64_t(grid.fitting.size()), describe(m));
    if (!have || (best_oom && !r.oom) || (best_oom == r.oom && r.step_time < best_time)) {
      have = true, best_oom = r.oom, best_time = r.step_time;
      best = std::move(plan);
      stats_.best = m;
      stats_.best_index = static_cast<int>(i);
    }
  }
  if (!have) fail("no configuration could be simulated: " + last_error);
  best.method = name();
  return best;
}

SearchOutcome MegatronGridPlacer::search_outcome(const Problem& problem,
                                                const SearchBudget& budget) {
  Plan plan = search(problem, budget);
  SearchOutcome out = search_outcome_of(std::move(plan), stats_.simulated, 0, 0,
                                        {{"enumerated", stats_.enumerated},
                                         {"fitting", stats_.fitting},
                                         {"simulated", stats_.simulated},
                                         {"best_index", stats_.best_index}});
  add_megatron_config(stats_.best, &out.stats);
  return out;
}

std::string describe(const MegatronConfig& m) {
  std::string cp_ep;
  if (m.cp > 1) cp_ep += ", cp " + std::to_string(m.cp) + " " + to_string(m.cp_comm);
  if (m.ep > 1 || m.etp > 1)
    cp_ep += ", ep " + std::to_string(m.ep) + ", etp " + std::to_string(m.etp);
  return "tp " + std::to_string(m.tp) + ", pp " + std::to_string(m.pp) + ", dp " +
         std::to_string(m.dp) + cp_ep + ", mb " + std::to_string(m.micro_batch) + ", v " +
         std::to_string(m.virtual_stages) + ", recompute " + to_string(m.recompute) + ", sp " +
         (m.sequence_parallel ? "on" : "off") + ", zero " + std::to_string(m.zero_stage);
}

void add_megatron_methods(std::vector<MethodInfo>* out) {
  out->push_back({"megatron",
                  "Megatron-LM grid on a layered transformer: tp | heads within a host, cp "
                  "(ring attention, fused attention only), pp | layers, dp, ep / etp (MoE), "
                  "micro-batch, virtual stages, SP / ZeRO-1 / recomputation as memory needs; "
                  "memory-pruned analytically, simulated best-first (1000 runs)",
                  true, [] { return std::make_unique<MegatronGridPlacer>(); }});
}

}  // namespace placer
