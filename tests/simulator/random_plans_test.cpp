// Larger graphs and mixed plans: every op runs (no deadlock), results are deterministic and
// consistent (compute totals, memory bounds), traces are written.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "datasets/synthetic.h"
#include "sim_fixtures.h"
#include "simulator/simulator.h"
#include "simulator/trace.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;

Graph random_step(int n_ops, uint64_t seed) {
  LayeredRandomOptions o;
  o.n_ops = n_ops;
  o.width = 8;
  o.seed = seed;
  return expand_training_step(make_layered_random(o));
}

Cluster dgx_like(int hosts) {
  return make_cluster(hosts, 4, link(2e-6, 1e11), link(5e-6, 1.25e10, LinkSharing::kPerHost));
}

// Forward ops in topological order, cut into `s` chunks.
Plan pipeline_plan(const Graph& g, int s, int m, PipelineSchedule sched) {
  std::vector<OpId> fwd;
  for (OpId o : g.topo_order()) {
    if (g.op(o).phase == Phase::kForward) fwd.push_back(o);
  }
  Plan p;
  p.pipeline.micro_batches = m;
  p.pipeline.schedule = sched;
  for (int i = 0; i < s; ++i) {
    PipelineStage st;
    for (size_t k = fwd.size() * i / s; k < fwd.size() * (i + 1) / s; ++k) st.ops.push_back(fwd[k]);
    st.devices = {i};
    p.pipeline.stages.push_back(st);
  }
  return p;
}

void expect_same(const SimResult& a, const SimResult& b) {
  EXPECT_EQ(a.step_time, b.step_time);
  EXPECT_EQ(a.compute_time, b.compute_time);
  EXPECT_EQ(a.comm_time, b.comm_time);
  EXPECT_EQ(a.peak_memory, b.peak_memory);
  EXPECT_EQ(a.critical_path, b.critical_path);
  EXPECT_EQ(a.num_transfers, b.num_transfers);
}

TEST(RandomPlans, MixedPlansRunEveryOpDeterministically) {
  const Graph g = random_step(600, 7);
  const Cluster cl = dgx_like(2);
  const CostModel cost(cl, default_profile());
  Simulator sim(g, cl, cost);

  std::vector<Plan> plans;
  Plan rr;  // round-robin by layer over 4 devices, 2 data-parallel replicas
  rr.placement.resize(g.num_ops());
  for (OpId o = 0; o < g.num_ops(); ++o) rr.placement[o] = std::max(0, g.op(o).layer) % 4;
  rr.data_parallel.replicas = 2;
  rr.data_parallel.sync = SyncScheme::kAuto;
  rr.data_parallel.bucket_bytes = 1 << 20;
  plans.push_back(rr);
  Plan part = rr;  // plus partitioned forward ops on every split kind
  part.data_parallel.replicas = 1;
  int k = 0;
  for (OpId o = 0; o < g.num_ops() && part.partitions.size() < 30; ++o) {
    if (g.op(o).phase != Phase::kForward || g.op(o).flops < 1e8) continue;
    const int dims[3] = {0, 1, OpPartition::kReduceDim};
    part.partitions.push_back(OpPartition{o, dims[k % 3], {4 + k % 4, 4 + (k + 1) % 4}});
    ++k;
  }
  plans.push_back(part);
  plans.push_back(pipeline_plan(g, 4, 8, PipelineSchedule::kGPipe));
  plans.push_back(pipeline_plan(g, 4, 8, PipelineSchedule::k1F1B));
  Plan dp_pipe = pipeline_plan(g, 4, 3, PipelineSchedule::k1F1B);
  dp_pipe.data_parallel.replicas = 2;
  plans.push_back(dp_pipe);

  for (size_t i = 0; i < plans.size(); ++i) {
    SCOPED_TRACE("plan " + std::to_string(i));
    const SimResult a = sim.run(plans[i]);
    const SimResult b = sim.run(plans[i]);
    expect_same(a, b);
    EXPECT_GT(a.step_time, 0);
    const uint64_t m = plans[i].pipeline.enabled() ? plans[i].pipeline.micro_batches : 1;
    EXPECT_GE(a.simulated_ops, g.num_ops());
    EXPECT_LE(a.simulated_ops, g.num_ops() * m);
    for (int d = 0; d < cl.num_devices(); ++d) {
      EXPECT_LE(a.compute_time[d], a.step_time * (1 + 1e-12));
      EXPECT_LE(a.comm_time[d], a.step_time * (1 + 1e-12));
    }
    ASSERT_FALSE(a.critical_path.empty());
  }
  // A fresh simulator gives the same numbers as a reused one.
  Simulator fresh(g, cl, cost);
  expect_same(fresh.run(plans[3]), sim.run(plans[3]));
}

TEST(RandomPlans, ChromeTrace) {
  const Graph g = random_step(60, 3);
  const Cluster cl = dgx_like(1);
  const CostModel cost(cl, default_profile());
  Simulator sim(g, cl, cost);
  Plan p;
  p.placement.resize(g.num_ops());
  for (OpId o = 0; o < g.num_ops(); ++o) p.placement[o] = o % 2;
  p.data_parallel.replicas = 2;
  SimOptions opts;
  opts.record_events = true;
  const SimResult r = sim.run(p, opts);
  ASSERT_FALSE(r.events.empty());
  const std::string path = ::testing::TempDir() + "/sim_trace.json";
  write_chrome_trace(r, g, cl, path);
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  size_t compute = 0, comm = 0;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    (e.at("tid") == 0 ? compute : comm) += 1;
    EXPECT_GE(e.at("dur").get<double>(), 0);
  }
  EXPECT_EQ(compute, g.num_ops());  // one event per op execution (unpartitioned)
  EXPECT_GT(comm, 0u);
  std::remove(path.c_str());
  EXPECT_THROW(write_chrome_trace(r, g, cl, "/nonexistent/dir/trace.json"), FileError);
}

}  // namespace
}  // namespace placer
