// The classical expert placers: round-robin, eplb and expert-anneal (docs/expert_placement.md).
// Torch-free; expert-rl's policy is agents/experts/expert_rl.cpp.
#include <chrono>

#include "agents/api/methods.h"
#include "agents/common/method_options.h"
#include "agents/common/outcome.h"
#include "agents/experts/expert_problem.h"
#include "agents/experts/expert_rl.h"
#include "src/util/error.h"

namespace placer {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// A placer that makes one map per layer without search (round-robin, eplb): one simulator
/// run, for the prediction.
class FixedExpertPlacer : public OutcomePlacer {
 public:
  enum class Kind { kRoundRobin, kEplb };
  FixedExpertPlacer(Kind kind, ExpertMethodOptions o) : kind_(kind), o_(std::move(o)) {}
  std::string name() const override { return kind_ == Kind::kEplb ? "eplb" : "round-robin"; }

  SearchOutcome search_outcome(const Problem& p, const SearchBudget&) override {
    const auto t0 = std::chrono::steady_clock::now();
    ExpertProblem ep(p, o_, name());
    std::vector<ExpertLayerMap> maps;
    if (kind_ == Kind::kEplb) {
      maps = ep.eplb_maps();
    } else {
      for (int l = 0; l < ep.layers(); ++l) {
        maps.push_back(round_robin_layer(ep.experts(), ep.topology().ranks));
      }
    }
    const double step = ep.step(maps);
    return search_outcome_of(ep.finish(maps), ep.runs(), 1, seconds_since(t0),
                             {{"step_time", step}});
  }

 private:
  Kind kind_;
  ExpertMethodOptions o_;
};

/// Annealing over expert maps from EPLB's, the simulated step as the objective.
class AnnealExpertPlacer : public OutcomePlacer {
 public:
  explicit AnnealExpertPlacer(ExpertMethodOptions o) : o_(std::move(o)) {}
  std::string name() const override { return "expert-anneal"; }

  SearchOutcome search_outcome(const Problem& p, const SearchBudget& budget) override {
    const auto t0 = std::chrono::steady_clock::now();
    ExpertProblem ep(p, o_, name());
    ExpertAnnealOptions a;
    a.evaluations = o_.evaluations > 0           ? o_.evaluations
                    : budget.max_evaluations > 0 ? budget.max_evaluations
                                                 : 500;
    a.seed = budget.seed;
    const std::vector<ExpertLayerMap> start = ep.eplb_maps();
    const ExpertSearchResult r = anneal_expert_maps(
        start, ep.topology().ranks,
        [&](const std::vector<ExpertLayerMap>& m) { return ep.step(m); }, a);
    SearchOutcome out =
        search_outcome_of(ep.finish(r.maps), ep.runs(), 0, seconds_since(t0),
                          {{"start_step_time", r.best_curve.front()},
                           {"best_step_time", r.best},
                           {"samples_to_5pct", double(samples_to_within(r.best_curve, 0.05))}});
    out.stats.best_curve = r.best_curve;
    return out;
  }

 private:
  ExpertMethodOptions o_;
};

/// The learned placer: the policy's greedy map of every layer (its own replica counts, or EPLB's
/// for a policy without the replica head), or with `finetune` the best of its REINFORCE fine-tuning
/// on the simulated step.
class LearnedExpertPlacer : public OutcomePlacer {
 public:
  explicit LearnedExpertPlacer(ExpertMethodOptions o) : o_(std::move(o)) {}
  std::string name() const override { return "expert-rl"; }

  SearchOutcome search_outcome(const Problem& p, const SearchBudget& budget) override {
    const auto t0 = std::chrono::steady_clock::now();
    ExpertProblem ep(p, o_, name());
    if (o_.finetune < 0 || (o_.finetune > 0 && o_.samples < 2)) {
      throw ValidationError(
          "expert-rl: finetune must be >= 0, and samples >= 2 with finetune (the greedy "
          "rollout and at least one sampled)");
    }
    const std::unique_ptr<ExpertPolicy> policy =
        ExpertPolicy::load(o_.policy.empty() ? default_expert_policy_path() : o_.policy);
    std::vector<std::vector<int>> copies;
    for (const ExpertLayerMap& m : ep.eplb_maps()) {
      copies.emplace_back();
      for (const std::vector<int>& r : m.replicas) copies.back().push_back(int(r.size()));
    }
    const std::vector<std::vector<double>>& shares = ep.routing().share;
    std::vector<double> curve;
    const std::vector<ExpertLayerMap> maps =
        o_.finetune > 0 ? policy->finetune(
                              shares, copies, ep.topology(), ep.slots_per_rank(),
                              [&](const std::vector<ExpertLayerMap>& m) { return ep.step(m); },
                              o_.finetune, int(o_.samples), budget.seed, &curve)
                        : policy->place(shares, copies, ep.topology(), ep.slots_per_rank());
    const double step = curve.empty() ? ep.step(maps) : curve.back();
    SearchOutcome out = search_outcome_of(
        ep.finish(maps), ep.runs(), 0, seconds_since(t0),
        {{"step_time", step},
         {"samples_to_5pct", double(curve.empty() ? 1 : samples_to_within(curve, 0.05))}});
    out.stats.best_curve = curve;
    return out;
  }

 private:
  ExpertMethodOptions o_;
};

MethodInfo expert_method(const char* name, const char* doc,
                         std::unique_ptr<Placer> (*make)(const ExpertMethodOptions&)) {
  MethodInfo m{name, doc, /*fast=*/false, [make] { return make(ExpertMethodOptions{}); }};
  return with_options(m, expert_method_option_table(name), ExpertMethodOptions{}, make);
}

}  // namespace

void add_expert_methods(std::vector<MethodInfo>* out) {
  out->push_back(expert_method(
      "round-robin", "MoE expert map: expert e on expert-parallel rank e mod ep, no replicas",
      [](const ExpertMethodOptions& o) -> std::unique_ptr<Placer> {
        return std::make_unique<FixedExpertPlacer>(FixedExpertPlacer::Kind::kRoundRobin, o);
      }));
  out->push_back(expert_method(
      "eplb",
      "MoE expert map: DeepSeek's EPLB (replicate heavy experts, pack copies balanced, "
      "hierarchically by node) from routing statistics",
      [](const ExpertMethodOptions& o) -> std::unique_ptr<Placer> {
        return std::make_unique<FixedExpertPlacer>(FixedExpertPlacer::Kind::kEplb, o);
      }));
  out->push_back(expert_method(
      "expert-anneal",
      "MoE expert map: simulated annealing over maps from EPLB's, the simulated step as the "
      "objective",
      [](const ExpertMethodOptions& o) -> std::unique_ptr<Placer> {
        return std::make_unique<AnnealExpertPlacer>(o);
      }));
  out->push_back(expert_method(
      "expert-rl",
      "MoE expert map: a learned policy (set encoder over experts, REINFORCE on the routing "
      "corpus) placing zero-shot, or fine-tuned on the simulated step (finetune=N)",
      [](const ExpertMethodOptions& o) -> std::unique_ptr<Placer> {
        return std::make_unique<LearnedExpertPlacer>(o);
      }));
}

}  // namespace placer
