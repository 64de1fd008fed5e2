#include "agents/staged_methods.h"

#include "agents/classical/pipeline_dp.h"
#include "agents/common/method_options.h"
#include "agents/common/prediction.h"
#include "agents/gdp/gdp.h"
#include "agents/staged_polish.h"
#include "src/util/error.h"

namespace placer {

std::string staged_policy_path() { return shipped_policy_path("stages.pt"); }

Plan placement_as_pipeline(const Problem& problem, const Plan& placement, Objective objective,
                           SimResult* sim) {
  PipelinePlacerOptions options;
  options.cut_groups = placement.placement;
  options.objective = objective;
  SimResult planned;
  Plan plan = pipeline_dp_plan(problem, options, nullptr, &planned);
  // One stage is plain data parallelism: nothing to overlap, and micro-batches only add
  // smaller, more numerous kernels. pipeline-dp tries 2, 4 and 8 micro-batches per stage, so
  // one is tried here as well.
  if (plan.pipeline.stages.size() == 1 && plan.pipeline.micro_batches > 1) {
    Plan whole = plan;
    SimResult r = choose_micro_batches(problem, &whole, 0, 1);
    if (!r.oom && r.step_time < plan.predicted.step_time) {
      record_prediction(r, &whole);
      if (sim) *sim = std::move(r);
      return whole;
    }
  }
  if (sim) *sim = std::move(planned);
  return plan;
}

Plan placement_or_pipeline(const Problem& problem, const Plan& placement, Objective objective,
                           std::optional<SimResult>* sim) {
  Plan flat = placement;
  SimResult as_placed = predict(problem, &flat);
  Plan staged;
  SimResult staged_run;
  try {
    staged = placement_as_pipeline(problem, placement, objective, &staged_run);
  } catch (const Error&) {
    if (as_placed.oom) throw;
    if (sim) *sim = std::move(as_placed);
    return flat;  // no pipeline of its groups fits, the placement does
  }
  double staged_time = staged.predicted.step_time;
  std::optional<SimResult> staged_sim;
  if (objective != Objective::kStepTime) {
    SimOptions so;
    so.critical_path = false;
    staged_sim = std::move(staged_run);
    stream_whole_batches(objective, problem.simulator, problem.cluster, so, &staged, &*staged_sim);
    staged_time = objective_time(objective, *staged_sim, problem.cluster);
  }
  const bool flat_wins =
      !as_placed.oom &&
      (staged.predicted.oom || objective_time(objective, as_placed, problem.cluster) < staged_time);
  if (flat_wins) {
    if (sim) *sim = std::move(as_placed);
    return flat;
  }
  if (sim && staged_sim) *sim = std::move(staged_sim);
  return staged;
}

void add_staged_methods(std::vector<MethodInfo>* out) {
  if (!gdp_available()) return;
  auto make = [](const GdpMethodOptions& o) {
    GdpPlaceOptions place = o.place;
    place.shape = [objective = o.place.objective](const Problem& p, const Plan& placement,
                                                  std::optional<SimResult>* sim) {
      return placement_or_pipeline(p, placement, objective, sim);
    };
    if (o.polish) {
      place.polish = [objective = o.place.objective](const Problem& p, const Plan& plan,
                                                     double time,
                                                     const std::function<bool()>& spend) {
        PolishedPlan r = polish_pipeline(p, plan, time, objective, spend);
        return std::make_pair(std::move(r.plan), r.time);
      };
    }
    // Its own shipped policy, trained with the staged reward (`stages: true`).
    const std::string policy = o.policy.empty() ? staged_policy_path() : o.policy;
    return make_gdp_placer(policy, place, "gdp+stages");
  };
  // More samples than gdp's 16: the policy is peaked, so most samples repeat a few cut
  // sets, and each costs milliseconds (128 found alexnet's 6.70 ms plan, 16 did not).
  GdpMethodOptions defaults;
  defaults.place.samples = 128;
  // Then block moves around the best (agents/gdp/gdp_refine.h): the policy draws each unit
  // independently, so its samples seldom move a chain of ops together, which is where it
  // lost to m-etf and anneal on branchy graphs (rec, rnnlm, gnn, enas_cnn).
  defaults.place.refine = 1024;
  // Fine-tuning's block moves climb and restart (agents/gdp/gdp_place.cpp): a simulation
  // costs well under a millisecond on most graphs and a PPO update about 0.1 s, and repeats
  // are free (cached), so the moves get most of a time budget.
  defaults.place.finetune_refine = 8192;
  // gdp's options, and what each sample is scored by.
  static const OptionTable<GdpMethodOptions> options = [] {
    OptionTable<GdpMethodOptions> t = gdp_option_table().with_owner("gdp+stages");
    add_objective_option(
        t, [](auto& o) -> auto& { return o.place.objective; });
    t.flag(
        "polish",
        "while fine-tuning, a hill climb after each update over the best pipeline's gradient "
        "bucket size, micro-batch count and stage replica counts (agents/staged_polish.h)",
        [](auto& o) -> auto& { return o.polish; });
    return t;
  }();
  out->push_back(with_options(
      MethodInfo{"gdp+stages",
                 "GDP's placement read as pipeline stages (its device groups, contiguous), "
                 "pipeline-dp choosing each stage's replicas and the micro-batches, or run as "
                 "placed when that is faster; greedy + 128 samples scored so, then 1024 block "
                 "moves drawn from the policy around the best (8192 after each fine-tuning "
                 "update, then a polish of the best pipeline's gradient buckets, micro-batches "
                 "and stage widths), with the policy trained for it "
                 "(models/pretrained/stages.pt)",
                 false, [make, defaults] { return make(defaults); }},
      options, defaults, make));
}

}  // namespace placer
