#include "agents/staged_polish.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "agents/common/prediction.h"
#include "src/util/error.h"

namespace placer {
namespace {

constexpr int kMaxMicroBatches = 64;

/// Whether the polish knows how to vary `plan`: stages on devices of their own, one
/// tensor-parallel rank each, no virtual stages.
bool polishable(const Plan& plan) {
  if (plan.pipeline.stages.empty() || plan.pipeline.virtual_stages != 1) return false;
  std::vector<int> seen;
  for (const PipelineStage& s : plan.pipeline.stages) {
    if (s.tensor_parallel != 1 || s.devices.empty()) return false;
    seen.insert(seen.end(), s.devices.begin(), s.devices.end());
  }
  std::sort(seen.begin(), seen.end());
  return std::adjacent_find(seen.begin(), seen.end()) == seen.end();
}

/// Samples of one stage replica in a micro-batch group (batch / lcm of `widths`), or 0 when
/// the batch is unknown or a width does not divide it.
int64_t samples_per_replica(int64_t batch, const std::vector<int>& widths) {
  if (batch <= 0) return 0;
  int64_t lcm = 1;
  for (int w : widths) lcm = std::lcm(lcm, int64_t(w));
  return batch % lcm == 0 ? batch / lcm : 0;
}

std::vector<int> widths_of(const Plan& plan) {
  std::vector<int> w;
  for (const PipelineStage& s : plan.pipeline.stages) w.push_back(int(s.devices.size()));
  return w;
}

void add_bucket_neighbours(const Plan& plan, std::vector<Plan>* out) {
  const std::vector<int> w = widths_of(plan);
  if (*std::max_element(w.begin(), w.end()) < 2) return;  // nothing to all-reduce
  for (uint64_t bytes : polish_bucket_sizes()) {
    if (bytes == plan.data_parallel.bucket_bytes) continue;
    out->push_back(plan);
    out->back().data_parallel.bucket_bytes = bytes;
  }
}

void add_micro_batch_neighbours(const Problem& problem, const Plan& plan, std::vector<Plan>* out) {
  const int64_t per = samples_per_replica(problem.graph.batch_size(), widths_of(plan));
  for (int m = 1; m <= per && m <= kMaxMicroBatches; ++m) {
    if (per % m != 0 || m == plan.pipeline.micro_batches) continue;
    out->push_back(plan);
    out->back().pipeline.micro_batches = m;
  }
}

/// `plan` with its stages on `widths` devices each, laid out along `order` (the devices the
/// stages use, in stage order, then the unused ones); the placement follows each stage's
/// first device.
Plan with_widths(const Plan& plan, const std::vector<int>& widths, const std::vector<int>& order,
                 int64_t per_replica) {
  Plan out = plan;
  std::map<int, int> first_moved;  // old first device of a stage -> its new one
  size_t next = 0;
  for (size_t s = 0; s < widths.size(); ++s) {
    PipelineStage& st = out.pipeline.stages[s];
    const int old_first = st.devices[0];
    st.devices.assign(order.begin() + long(next), order.begin() + long(next) + widths[s]);
    next += size_t(widths[s]);
    first_moved[old_first] = st.devices[0];
  }
  for (int& d : out.placement) {
    if (const auto it = first_moved.find(d); it != first_moved.end()) d = it->second;
  }
  int m = std::min<int64_t>(out.pipeline.micro_batches, per_replica);
  while (m > 1 && per_replica % m != 0) --m;
  out.pipeline.micro_batches = std::max(1, m);
  return out;
}

void add_width_neighbours(const Problem& problem, const Plan& plan, std::vector<Plan>* out) {
  const int64_t batch = problem.graph.batch_size();
  if (batch <= 1) return;  // every stage keeps one replica
  std::vector<int> order;
  for (const PipelineStage& s : plan.pipeline.stages)
    order.insert(order.end(), s.devices.begin(), s.devices.end());
  for (int d : problem_devices(problem)) {
    if (std::find(order.begin(), order.end(), d) == order.end()) order.push_back(d);
  }
  const std::vector<int> w = widths_of(plan);
  const int used = std::accumulate(w.begin(), w.end(), 0);
  std::vector<std::vector<int>> candidates;
  // Stage s changes by ds devices and stage t by dt (t < 0: none).
  const auto change = [&](size_t s, int ds, long t, int dt) {
    std::vector<int> c = w;
    c[s] += ds;
    if (t >= 0) c[size_t(t)] += dt;
    candidates.push_back(std::move(c));
  };
  for (size_t s = 0; s < w.size(); ++s) {
    if (used < int(order.size())) change(s, +1, -1, 0);
    if (w[s] > 1) change(s, -1, -1, 0);
    if (s + 1 < w.size() && w[s] > 1) change(s, -1, long(s + 1), +1);
    if (s + 1 < w.size() && w[s + 1] > 1) change(s, +1, long(s + 1), -1);
  }
  for (const std::vector<int>& c : candidates) {
    const int64_t per = samples_per_replica(batch, c);
    if (per > 0) out->push_back(with_widths(plan, c, order, per));
  }
}

}  // namespace

const std::vector<uint64_t>& polish_bucket_sizes() {
  // Chosen on the validation families of the by-family corpus (docs/gdp.md): 25, 4, 1 MiB
  // and these made the same plans but two, where the finer steps were a little faster.
  static const std::vector<uint64_t> sizes = {25ull << 20, 8ull << 20, 4ull << 20,
                                              2ull << 20,  1ull << 20, 512ull << 10};
  return sizes;
}

std::vector<Plan> pipeline_neighbours(const Problem& problem, const Plan& plan) {
  std::vector<Plan> out;
  if (!polishable(plan)) return out;
  add_bucket_neighbours(plan, &out);
  add_micro_batch_neighbours(problem, plan, &out);
  add_width_neighbours(problem, plan, &out);
  return out;
}

PolishedPlan polish_pipeline(const Problem& problem, const Plan& plan, double time,
                             Objective objective, const std::function<bool()>& spend) {
  PolishedPlan best{plan, time};
  SimOptions so;
  so.critical_path = false;
  for (bool improved = true; improved;) {
    improved = false;
    PolishedPlan step = best;
    for (Plan& next : pipeline_neighbours(problem, best.plan)) {
      if (!spend()) return step;  // the best plan so far
      SimResult r;
      try {
        next.validate(problem.graph, problem.cluster);
        r = problem.simulator.run(next, so);
      } catch (const Error&) {
        continue;  // not a valid plan (e.g. a stage without a device of its own)
      }
      const double t = objective_time(objective, r, problem.cluster);
      if (r.oom || !(t < step.time)) continue;
      record_prediction(r, &next);
      step = PolishedPlan{std::move(next), t};
      improved = true;
    }
    best = std::move(step);
  }
  return best;
}

}  // namespace placer
