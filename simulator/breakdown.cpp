#include "simulator/breakdown.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>

#include "src/util/error.h"

namespace placer {

namespace {

// Categories in priority order (the first active one takes the instant).
enum Category : int {
  kForward,
  kBackward,
  kOptimizer,
  kCollective0,  // + CollectiveKind
  kGradientSync = kCollective0 + kNumCollectiveKinds,
  kBarrier,
  kTransfer,
  kNumCategories
};

int category_of(const SimEvent& e, const Graph& g) {
  switch (e.kind) {
    case SimEvent::kCompute:
      return g.op(e.op).phase == Phase::kForward ? kForward : kBackward;
    case SimEvent::kOptimizer:
      return kOptimizer;
    case SimEvent::kTransfer:
      return kTransfer;
    case SimEvent::kCollective:
      if (e.op != kNoOp) return kCollective0 + std::min<int>(e.collective, kNumCollectiveKinds - 1);
      return e.tensor != kNoTensor ? kGradientSync : kBarrier;
  }
  return kTransfer;
}

}  // namespace

double DeviceBreakdown::total() const {
  return forward + backward + optimizer + fsdp_gather +
         std::accumulate(collective.begin(), collective.end(), 0.0) + gradient_sync + barrier +
         transfer + host_wait + idle;
}

std::vector<DeviceBreakdown> step_breakdown(const SimResult& r, const Graph& g, const Plan& p) {
  if (r.events.empty() && r.simulated_ops > 0) {
    throw ValidationError("breakdown: the run recorded no events (SimOptions::record_events)");
  }
  const size_t n_dev = r.compute_time.size();
  // (time, +1 / -1, category) per device.
  struct Edge {
    double t;
    int delta;
    int cat;
  };
  std::vector<std::vector<Edge>> edges(n_dev);
  std::vector<uint8_t> computes(n_dev, 0);  // devices that run ops (not only mirror them)
  for (const SimEvent& e : r.events) {
    if ((e.kind == SimEvent::kCompute || e.kind == SimEvent::kOptimizer) && e.device >= 0 &&
        size_t(e.device) < n_dev) {
      computes[size_t(e.device)] = 1;
    }
  }
  for (const SimEvent& e : r.events) {
    if (e.end <= e.start) continue;
    const int cat = category_of(e, g);
    for (int d : {e.device, e.kind == SimEvent::kTransfer ? e.peer : -1}) {
      if (d < 0 || size_t(d) >= n_dev) continue;
      edges[size_t(d)].push_back({e.start, +1, cat});
      edges[size_t(d)].push_back({e.end, -1, cat});
    }
  }
  std::vector<DeviceBreakdown> rows;
  for (size_t d = 0; d < n_dev; ++d) {
    std::vector<Edge>& ev = edges[d];
    if (!computes[d]) continue;
    std::sort(ev.begin(), ev.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });
    std::array<int, kNumCategories> active{};
    std::array<double, kNumCategories> time{};
    double last = 0;
    for (const Edge& x : ev) {
      const double t = std::min(x.t, r.step_time);
      if (t > last) {
        for (int c = 0; c < kNumCategories; ++c) {
          if (active[size_t(c)] > 0) {
            time[size_t(c)] += t - last;
            break;
          }
        }
        last = t;
      }
      active[size_t(x.cat)] += x.delta;
    }
    DeviceBreakdown b;
    b.device = static_cast<int>(d);
    b.forward = time[kForward];
    b.backward = time[kBackward];
    // FSDP's all-gather waits sit inside forward / backward op times.
    if (d < r.fsdp_forward_wait.size()) {
      const double fw = std::min(r.fsdp_forward_wait[d], b.forward);
      const double bw = std::min(r.fsdp_backward_wait[d], b.backward);
      b.forward -= fw, b.backward -= bw, b.fsdp_gather = fw + bw;
    }
    b.optimizer = time[kOptimizer];
    for (int k = 0; k < kNumCollectiveKinds; ++k) {
      b.collective[size_t(k)] = time[size_t(kCollective0 + k)];
    }
    b.gradient_sync = time[kGradientSync];
    b.barrier = time[kBarrier];
    b.transfer = time[kTransfer];
    const double busy = b.total();
    const double rest = std::max(0.0, r.step_time - busy);
    b.host_wait = d < r.host_wait.size() ? std::min(r.host_wait[d], rest) : 0.0;
    b.idle = rest - b.host_wait;
    for (size_t s = 0; s < p.pipeline.stages.size(); ++s) {
      const PipelineStage& st = p.pipeline.stages[s];
      const size_t tp = size_t(std::max(st.tensor_parallel, 1));
      for (size_t i = 0; i < tp && i < st.devices.size(); ++i) {
        if (st.devices[i] == int(d)) b.stages.push_back(static_cast<int>(s));
      }
    }
    rows.push_back(std::move(b));
  }
  return rows;
}

}  // namespace placer
