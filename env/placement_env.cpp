#include "env/placement_env.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "env/single_device_reference.h"
#include "simulator/cost_model.h"
#include "src/graph/algorithms.h"
#include "src/util/error.h"

namespace placer {

namespace {

// One unit per op, or the colocation units of src/graph/algorithms.h.
std::vector<int> units_of(const Graph& g, bool colocate, int* num_units) {
  if (colocate) return colocation_units(g, num_units);
  std::vector<int> unit(g.num_ops());
  for (size_t i = 0; i < unit.size(); ++i) unit[i] = int(i);
  *num_units = int(unit.size());
  return unit;
}

}  // namespace

PlacementEnv::PlacementEnv(const Graph& graph, const Cluster& cluster, const CostModel& cost,
                           PlacementEnvOptions options)
    : graph_(graph), cluster_(cluster), options_(std::move(options)), sim_(graph, cluster, cost) {
  const std::string ctx = "placement env";
  if (graph.num_ops() == 0) {
    throw ValidationError(format_context(ctx, "graph", "has no ops"));
  }
  if (options_.max_devices < 1) {
    throw ValidationError(format_context(ctx, "max_devices", "must be >= 1"));
  }
  if (!std::isfinite(options_.oom_penalty)) {
    throw ValidationError(format_context(ctx, "oom_penalty", "must be finite"));
  }
  if (options_.devices.empty()) {
    const int n = std::min(cluster.num_devices(), options_.max_devices);
    for (int d = 0; d < n; ++d) options_.devices.push_back(d);
  }
  allowed_.assign(options_.max_devices, 0);
  for (int d : options_.devices) {
    if (d < 0 || d >= cluster.num_devices() || d >= options_.max_devices) {
      throw ValidationError(format_context(
          ctx, "devices",
          "device " + std::to_string(d) + " is outside the cluster (" +
              std::to_string(cluster.num_devices()) + " devices) or >= max_devices (" +
              std::to_string(options_.max_devices) + ")"));
    }
    if (allowed_[d]) {
      throw ValidationError(
          format_context(ctx, "devices", "device " + std::to_string(d) + " listed twice"));
    }
    allowed_[d] = 1;
  }

  features_ = compute_node_features(graph, options_.features);
  unit_of_op_ = units_of(graph, options_.colocate, &num_units_);
  mask_.resize(size_t(num_units_) * options_.max_devices);
  for (int u = 0; u < num_units_; ++u) {
    std::copy(allowed_.begin(), allowed_.end(), mask_.begin() + size_t(u) * options_.max_devices);
  }

  plan_.graph_name = graph.name();
  plan_.method = "env";
  plan_.placement.assign(graph.num_ops(), options_.devices[0]);

  // Reference: fastest fitting single-device run, else the fastest run.
  SingleDeviceRuns runs = single_device_runs(sim_, plan_, options_.devices);
  single_times_ = std::move(runs.times);
  single_oom_ = std::move(runs.oom);
  reference_ = runs.reference;
  if (options_.baseline_time > 0) reference_ = std::min(reference_, options_.baseline_time);
  if (options_.frame.micro_batches < 1 || options_.frame.replicas < 1) {
    throw ValidationError(format_context(ctx, "frame", "micro_batches and replicas must be >= 1"));
  }
  apply_frame(options_.frame, &plan_);  // every step() runs inside it; the reference does not
  if (!(reference_ > 0) || !std::isfinite(reference_)) {
    throw ValidationError(format_context(ctx, "reference",
                                         "single-device step time is not positive (" +
                                             std::to_string(reference_) + " s)"));
  }
}

void PlacementEnv::set_reference(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) {
    throw ValidationError(format_context("placement env", "reference",
                                         "must be finite and > 0, got " +
                                             std::to_string(seconds)));
  }
  reference_ = seconds;
}

void PlacementEnv::check_action(const std::vector<int>& a) const {
  if (a.size() != size_t(num_units_)) {
    throw ValidationError(format_context("placement env", "action",
                                         "has " + std::to_string(a.size()) +
                                             " entries, expected one per unit (" +
                                             std::to_string(num_units_) + ")"));
  }
  for (size_t u = 0; u < a.size(); ++u) {
    const int d = a[u];
    if (d < 0 || d >= options_.max_devices || !allowed_[d]) {
      throw ValidationError(format_context(
          "placement env", "action[" + std::to_string(u) + "]",
          "device " + std::to_string(d) + " is masked out"));
    }
  }
}

StepResult PlacementEnv::step(const std::vector<int>& device_per_unit) {
  SimResult r;
  if (options_.score) {
    const Plan placement = to_plan(device_per_unit);  // a bad action throws, as below
    try {
      r = options_.score(placement);
    } catch (const Error&) {
      r.step_time = std::numeric_limits<double>::infinity();
      r.oom = true;
    }
  } else {
    check_action(device_per_unit);
    for (size_t i = 0; i < unit_of_op_.size(); ++i) {
      plan_.placement[i] = device_per_unit[unit_of_op_[i]];
    }
    SimOptions so;
    so.critical_path = false;
    r = sim_.run(plan_, so);
  }
  StepResult s;
  s.step_time = r.step_time;
  s.oom = r.oom;
  s.reward = r.oom ? options_.oom_penalty : -std::sqrt(r.step_time / reference_);
  s.done = true;
  last_ = device_per_unit;
  return s;
}

Plan PlacementEnv::to_plan(const std::vector<int>& device_per_unit) const {
  check_action(device_per_unit);
  Plan p;
  p.graph_name = graph_.name();
  p.method = "env";
  p.placement.resize(unit_of_op_.size());
  for (size_t i = 0; i < unit_of_op_.size(); ++i) {
    p.placement[i] = device_per_unit[unit_of_op_[i]];
  }
  return p;
}

Plan PlacementEnv::to_plan() const {
  if (last_.empty()) {
    throw ValidationError(format_context("placement env", "to_plan", "no step since reset"));
  }
  return to_plan(last_);
}

}  // namespace placer
