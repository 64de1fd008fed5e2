// Symmetric simulation: on plans whose tensor-parallel ranks run alike, simulating two ranks
// of each group gives the full simulation's step time, per-device peak memory, compute and
// communication time and counters; plans it does not know to be symmetric run in full.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "datasets/gpt.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/io/graph_json.h"
#include "src/io/plan_io.h"
#include "src/plan/megatron_plan.h"
#include "src/plan/tensor_parallel.h"
#include "src/util/error.h"

namespace placer {
namespace {

const std::string kData = std::string(PLACER_SOURCE_DIR) + "/datasets/clusters/";

/// `hosts` DGX A100 hosts (the shipped file's host and NVSwitch link), InfiniBand between
/// hosts with one port per GPU, or one per host when `shared_nic`.
Cluster dgx_hosts(int hosts, bool shared_nic = false) {
  const Cluster base = load_cluster_yaml(kData + "dgx_a100.cluster.yaml");
  Cluster c;
  c.name = "dgx-a100-x" + std::to_string(hosts);
  const DeviceSpec spec = base.device(0).spec;
  for (int h = 0; h < hosts; ++h) c.add_host("node" + std::to_string(h), spec, 8);
  c.set_link(LinkLevel::kIntraHost, base.link(LinkLevel::kIntraHost));
  c.set_link(LinkLevel::kInterHost,
             LinkSpec{"infiniband", 5e-6, 25e9,
                      shared_nic ? LinkSharing::kPerHost : LinkSharing::kPerDevice});
  c.validate();
  return c;
}

struct Case {
  std::string name;
  bool llama;
  MegatronConfig m;
  int micro_batches;
  int layers;
  bool symmetric;  ///< the default simulation folds the TP ranks
  int experts = 0;  ///< a Llama with this many routed experts (top 2) in every layer
};

void PrintTo(const Case& k, std::ostream* os) { *os << k.name; }

Graph model_of(const Case& k) {
  const int64_t batch = int64_t(k.m.micro_batch) * k.m.dp * k.micro_batches;
  TrainingOptions t;
  t.master_weights = true;
  if (k.llama) {
    LlamaOptions o;
    o.layers = k.layers, o.hidden = 256, o.heads = 8, o.kv_heads = 2, o.ffn = 512;
    o.seq_len = 128, o.batch = batch, o.vocab = 2048, o.tp = k.m.tp;
    if (k.experts > 0) o.moe.experts = k.experts, o.moe.top_k = 2, o.moe.expert_ffn = 256;
    return expand_training_step(make_llama(o), t);
  }
  GptOptions o;
  o.layers = k.layers, o.hidden = 256, o.heads = 8, o.seq_len = 128, o.batch = batch;
  o.vocab = 2048, o.tp = k.m.tp;
  return expand_training_step(make_gpt(o), t);
}

MegatronConfig config(int tp, int pp, int dp) {
  MegatronConfig m;
  m.tp = tp, m.pp = pp, m.dp = dp;
  return m;
}

/// Full and symmetric results agree: step time to 1e-9 (relative), memory exactly.
void expect_same(const SimResult& full, const SimResult& sym) {
  EXPECT_NEAR(sym.step_time, full.step_time, 1e-9 * full.step_time);
  ASSERT_EQ(sym.peak_memory.size(), full.peak_memory.size());
  for (size_t d = 0; d < full.peak_memory.size(); ++d) {
    EXPECT_EQ(sym.peak_memory[d], full.peak_memory[d]) << "device " << d;
    EXPECT_NEAR(sym.compute_time[d], full.compute_time[d], 1e-9 * full.step_time) << "device " << d;
    EXPECT_NEAR(sym.comm_time[d], full.comm_time[d], 1e-9 * full.step_time) << "device " << d;
    EXPECT_NEAR(sym.host_wait[d], full.host_wait[d], 1e-9 * full.step_time) << "device " << d;
  }
  EXPECT_EQ(sym.oom, full.oom);
  EXPECT_EQ(sym.simulated_ops, full.simulated_ops);
  EXPECT_EQ(sym.num_transfers, full.num_transfers);
  EXPECT_EQ(sym.transfer_bytes, full.transfer_bytes);
  EXPECT_EQ(sym.num_collectives, full.num_collectives);
  EXPECT_EQ(sym.collective_bytes, full.collective_bytes);
  EXPECT_EQ(sym.critical_path, full.critical_path);
}

/// Runs `plan` both ways; returns the default (symmetric when it can be) result.
SimResult run_both(const Graph& g, const Cluster& c, const CostModel& cost, const Plan& plan) {
  Simulator sim(g, c, cost);
  SimOptions exact;
  exact.exact = true;
  const SimResult full = sim.run(plan, exact);
  EXPECT_FALSE(full.symmetric);
  EXPECT_EQ(full.full_reason, "exact simulation asked for");
  const SimResult sym = sim.run(plan);
  expect_same(full, sym);
  return sym;
}

class SymmetricPlans : public ::testing::TestWithParam<Case> {};

TEST_P(SymmetricPlans, AgreeWithTheFullSimulation) {
  const Case& k = GetParam();
  MegatronConfig m = k.m;
  m.global_batch = m.micro_batch * m.dp * k.micro_batches;
  const Graph g = model_of(k);
  const Cluster c = dgx_hosts((m.tp * m.cp * m.pp * m.dp + 7) / 8);
  const CostModel cost(c, load_cost_profile(kData + "dgx_a100.profile.yaml"));
  const Plan plan = megatron_plan(g, m);
  plan.validate(g, c);
  const SimResult r = run_both(g, c, cost, plan);
  EXPECT_EQ(r.symmetric, k.symmetric) << r.full_reason;
  EXPECT_EQ(r.full_reason.empty(), k.symmetric) << r.full_reason;
}

std::vector<Case> cases() {
  std::vector<Case> v;
  auto add = [&](std::string name, bool llama, MegatronConfig m, int mbs, int layers, bool sym) {
    v.push_back(Case{std::move(name), llama, m, mbs, layers, sym});
  };
  add("gpt_tp4_pp2_dp2", false, config(4, 2, 2), 4, 2, true);
  MegatronConfig m = config(8, 4, 4);
  m.zero_stage = 1, m.sequence_parallel = true, m.recompute = Recompute::kFull;
  add("gpt_tp8_pp4_dp4_zero1_sp_full_recompute", false, m, 8, 4, true);
  m = config(8, 8, 8);
  m.zero_stage = 1, m.overlap_grad_reduce = true;
  add("gpt_tp8_pp8_dp8_512_devices", false, m, 16, 8, true);
  m = config(4, 4, 2);
  m.virtual_stages = 2;
  add("gpt_interleaved_tp4_pp4_v2", false, m, 8, 8, true);
  m = config(4, 2, 1);
  m.schedule = PipelineSchedule::kGPipe;
  add("gpt_gpipe_tp4_pp2", false, m, 4, 2, true);
  m = config(8, 2, 2);
  m.recompute = Recompute::kSelective, m.first_stage_layers = 1, m.last_stage_layers = 3;
  add("gpt_uneven_stages_selective_recompute", false, m, 4, 4, true);
  m = config(4, 2, 4);
  m.zero_stage = 3;
  add("gpt_zero3", false, m, 4, 2, true);
  m = config(8, 2, 2);
  m.scatter_gather = false, m.loss_scaling = false;
  add("gpt_no_scatter_gather", false, m, 4, 2, true);
  m = config(8, 4, 2);
  m.sequence_parallel = true, m.zero_stage = 1;
  add("llama_tp8_pp4_dp2_sp", true, m, 8, 4, true);
  m = config(4, 1, 4);
  add("llama_tp4_no_pipeline_split", true, m, 1, 2, true);
  add("gpt_tp2_falls_back", false, config(2, 2, 2), 4, 2, false);
  // Context parallelism (ring attention over the Llama's fused attention): cp x dp copies.
  m = config(4, 2, 1);
  m.cp = 4, m.zero_stage = 1, m.sequence_parallel = true;
  add("llama_tp4_pp2_cp4_p2p", true, m, 4, 2, true);
  m = config(8, 4, 2);
  m.cp = 8, m.cp_comm = ContextParallelComm::kAllGather, m.recompute = Recompute::kFull;
  add("llama_tp8_pp4_cp8_dp2_allgather_512_devices", true, m, 4, 4, true);
  m = config(4, 2, 2);
  m.cp = 2, m.cp_comm = ContextParallelComm::kAllToAll;
  add("llama_tp4_pp2_cp2_dp2_a2a", true, m, 4, 2, true);
  // FSDP / HSDP per-block schedules over each stage's data-parallel copies.
  m = config(4, 2, 8);
  m.zero_stage = 3, m.fsdp.enabled = true;
  add("llama_tp4_pp2_fsdp8", true, m, 4, 2, true);
  m = config(8, 2, 8);
  m.zero_stage = 3, m.fsdp.enabled = true, m.fsdp.shard_group = 4, m.recompute = Recompute::kFull;
  m.fsdp.param_dtype_set = true, m.fsdp.reduce_dtype_set = true;
  add("llama_tp8_pp2_hsdp_4x2", true, m, 4, 2, true);
  // Expert parallelism with even routing: the expert-data-parallel group of the routed
  // experts holds TP rank 0 alone when ep x etp >= tp.
  m = config(4, 2, 4);
  m.ep = 4, m.etp = 1, m.sequence_parallel = true, m.zero_stage = 1;
  v.push_back(Case{"moe_tp4_pp2_ep4", true, m, 4, 2, true, 8});
  m = config(8, 2, 4);
  m.ep = 4, m.etp = 2, m.sequence_parallel = true;
  v.push_back(Case{"moe_tp8_pp2_ep4_etp2", true, m, 4, 2, true, 8});
  m = config(4, 2, 4);
  m.ep = 2, m.etp = 1, m.sequence_parallel = true;
  v.push_back(Case{"moe_ep2_below_tp4_falls_back", true, m, 4, 2, false, 8});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Megatron, SymmetricPlans, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

/// A 2-layer GPT under TP `tp` x PP 2, 4 micro-batches, on `hosts` DGX hosts, and its plan.
struct SmallJob {
  SmallJob(int tp, int hosts, bool shared_nic = false)
      : g(model_of(Case{"small", false, config(tp, 2, 1), 4, 2, false})),
        c(dgx_hosts(hosts, shared_nic)),
        cost(c, load_cost_profile(kData + "dgx_a100.profile.yaml")) {
    MegatronConfig m = config(tp, 2, 1);
    m.global_batch = 4;
    plan = megatron_plan(g, m);
  }
  Graph g;
  Cluster c;
  CostModel cost;
  Plan plan;
};

// A NIC shared by a host's GPUs queues the ranks' boundary transfers one after another: not
// symmetric, so the full simulation runs (and the counters say what it did).
TEST(SymmetricSimulation, SharedHostPortRunsInFull) {
  const SmallJob job(8, 2, /*shared_nic=*/true);
  const SimResult r = run_both(job.g, job.c, job.cost, job.plan);
  EXPECT_FALSE(r.symmetric);
  EXPECT_NE(r.full_reason.find("each host's devices share"), std::string::npos) << r.full_reason;
}

// Recorded events (traces, breakdowns) need every device's timeline; per-variable
// synchronization is a feature the detector does not know: each runs in full.
TEST(SymmetricSimulation, EventsAndUnknownFeaturesRunInFull) {
  const SmallJob job(8, 2);
  Simulator sim(job.g, job.c, job.cost);
  Plan plan = job.plan;
  EXPECT_TRUE(sim.run(plan).symmetric);
  SimOptions events;
  events.record_events = true;
  const SimResult traced = sim.run(plan, events);
  EXPECT_FALSE(traced.symmetric);
  EXPECT_EQ(traced.full_reason, "events recorded (trace or breakdown)");
  plan.synchronization.enabled = true;
  const SimResult r = sim.run(plan);
  EXPECT_FALSE(r.symmetric);
  EXPECT_EQ(r.full_reason, "per-variable synchronization");
}

// Routing statistics make the EP ranks' loads uneven (expert 0 takes 30% of the tokens, so
// rank 0, which holds experts 0 and 1, computes 0.4 x 4 ranks' tokens = 1.6 even shares):
// the detector does not fold them, and the plan runs in full.
TEST(SymmetricSimulation, UnevenRoutingRunsInFull) {
  MegatronConfig m = config(4, 2, 4);
  m.ep = 4, m.sequence_parallel = true, m.global_batch = 16;
  const Case k{"moe", true, m, 4, 2, true, 8};
  const Graph g = model_of(k);
  const Cluster c = dgx_hosts(4);
  const CostModel cost(c, load_cost_profile(kData + "dgx_a100.profile.yaml"));
  const Plan plan = megatron_plan(g, m);
  RoutingStats skewed;
  skewed.share.assign(2, {0.3, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1});
  Simulator sim(g, c, cost);
  SimOptions uneven, exact;
  uneven.routing = &skewed;
  exact.routing = &skewed;
  exact.exact = true;
  const SimResult even = sim.run(plan);
  EXPECT_TRUE(even.symmetric) << even.full_reason;
  const SimResult r = sim.run(plan, uneven);
  EXPECT_FALSE(r.symmetric);
  EXPECT_EQ(r.full_reason, "uneven routing (routing statistics)");
  expect_same(sim.run(plan, exact), r);
  ASSERT_EQ(r.expert_load.size(), 2u);
  EXPECT_NEAR(r.expert_load[0][0], 1.6, 1e-12);
  EXPECT_NEAR(even.expert_load[0][0], 1.0, 1e-12);
}

/// Per pipeline stage (device stage.devices[0] of `plan`): the forward micro-batches it
/// started before its first backward op, the end of its last forward op before that
/// backward and the backward's start, from a recorded full simulation.
struct StageStart {
  int forwards_before_backward = 0;
  double last_forward_end = 0, first_backward_start = 0;
};

std::vector<StageStart> stage_starts(const Graph& g, const Plan& plan, const SimResult& r) {
  std::vector<StageStart> out;
  for (const PipelineStage& st : plan.pipeline.stages) {
    std::vector<const SimEvent*> ev;
    for (const SimEvent& e : r.events) {
      if (e.kind == SimEvent::kCompute && e.device == st.devices[0] && e.op != kNoOp)
        ev.push_back(&e);
    }
    std::sort(ev.begin(), ev.end(),
              [](const SimEvent* a, const SimEvent* b) { return a->start < b->start; });
    StageStart s;
    std::vector<int> seen;
    for (const SimEvent* e : ev) {
      const Phase ph = g.op(e->op).phase;
      if (ph == Phase::kBackward) {
        s.first_backward_start = e->start;
        break;
      }
      if (ph != Phase::kForward) continue;
      s.last_forward_end = std::max(s.last_forward_end, e->end);
      if (std::find(seen.begin(), seen.end(), e->micro_batch) == seen.end())
        seen.push_back(e->micro_batch);
    }
    s.forwards_before_backward = static_cast<int>(seen.size());
    out.push_back(s);
  }
  return out;
}

// Pipeline stages are not folded: with identical middle stages (a 6-layer GPT on pp 4,
// stages 1 and 2 hold 2 layers each), 1F1B runs pp - s forwards on stage s before its first
// backward (3 on stage 1, 2 on stage 2), so stage 1 holds one micro-batch's activations more
// at its peak; under GPipe every stage runs all 8 forwards first, but stage 1 waits longer
// for its first gradient than stage 2 (the gradient passes stage 2 first), and the stages'
// peak memories and host waits differ too. Neither stage's timeline is a shift of the
// other's, so no stage can take another's results.
TEST(SymmetricSimulation, MiddlePipelineStagesDiffer) {
  MegatronConfig m = config(1, 4, 1);
  m.global_batch = 8;
  m.first_stage_layers = 1, m.last_stage_layers = 1;
  const Case k{"pp", false, m, 8, 6, false};
  const Graph g = model_of(k);
  const Cluster c = dgx_hosts(1);
  const CostModel cost(c, load_cost_profile(kData + "dgx_a100.profile.yaml"));
  SimOptions events;
  events.record_events = true;
  Simulator sim(g, c, cost);
  const Plan one_f_one_b = megatron_plan(g, m);
  const SimResult r = sim.run(one_f_one_b, events);
  const std::vector<StageStart> a = stage_starts(g, one_f_one_b, r);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[1].forwards_before_backward, 3);
  EXPECT_EQ(a[2].forwards_before_backward, 2);
  const int d1 = one_f_one_b.pipeline.stages[1].devices[0],
            d2 = one_f_one_b.pipeline.stages[2].devices[0];
  EXPECT_GT(r.peak_memory[d1], r.peak_memory[d2]);
  EXPECT_NEAR(r.compute_time[d1], r.compute_time[d2], 1e-12);
  m.schedule = PipelineSchedule::kGPipe;
  const Plan gpipe = megatron_plan(g, m);
  const SimResult rg = sim.run(gpipe, events);
  const std::vector<StageStart> b = stage_starts(g, gpipe, rg);
  EXPECT_EQ(b[1].forwards_before_backward, 8);
  EXPECT_EQ(b[2].forwards_before_backward, 8);
  const double gap1 = b[1].first_backward_start - b[1].last_forward_end;
  const double gap2 = b[2].first_backward_start - b[2].last_forward_end;
  EXPECT_GT(gap1, gap2);
  // Same ops, same compute time, but not the same peak memory or host waits.
  EXPECT_NEAR(rg.compute_time[d1], rg.compute_time[d2], 1e-12);
  EXPECT_EQ(rg.peak_memory[d2] - rg.peak_memory[d1], 65536u);
  EXPECT_GT(std::abs(rg.host_wait[d1] - rg.host_wait[d2]), 1e-6);
}

// An op left on the first rank of its tensor-parallel group (its partition removed) makes
// rank 0 unlike the others: the full simulation runs and names the op.
// Under a topology the stage boundary goes rank k to rank k: over NVLink inside one NVLink
// domain, over the spine for every rank between leaves, inside the leaf on a rail. Each is
// symmetric and agrees with the full simulation.
TEST(SymmetricSimulation, TopologiesAgreeWithTheFullSimulation) {
  const SmallJob job(8, 2);
  Topology domain, leaves, rails;
  domain.nvlink_domain_hosts = 2;
  leaves.hosts_per_leaf = 1, leaves.oversubscription = 4, leaves.spine_latency = 1e-6;
  rails.rails = true, rails.oversubscription = 4;
  const double plain = Simulator(job.g, job.c, job.cost).run(job.plan).step_time;
  const uint64_t mb = 1 << 20;
  std::vector<double> step, hop;  // step time; node0/gpu3 -> node1/gpu3 for 1 MiB
  for (const Topology& t : {domain, leaves, rails}) {
    Cluster c = job.c;
    c.set_topology(t);
    const CostModel cost(c, load_cost_profile(kData + "dgx_a100.profile.yaml"));
    const SimResult r = run_both(job.g, c, cost, job.plan);
    EXPECT_TRUE(r.symmetric) << r.full_reason;
    step.push_back(r.step_time);
    hop.push_back(cost.transfer_time(3, 11, mb));
  }
  EXPECT_LT(hop[0], job.cost.transfer_time(3, 11, mb));  // NVLink instead of InfiniBand
  EXPECT_GT(step[1], plain);                             // a quarter of the bandwidth, 1 us more
  EXPECT_EQ(hop[2], job.cost.transfer_time(3, 11, mb));  // same rail: the leaf's numbers
}

TEST(SymmetricSimulation, OpOnOneRankRunsInFull) {
  const SmallJob job(4, 1);
  const Graph& g = job.g;
  Plan plan = expand_tensor_parallel(job.plan, g, job.c.num_devices());
  const auto ln = std::find_if(plan.partitions.begin(), plan.partitions.end(),
                               [&](const OpPartition& q) { return q.replicated; });
  ASSERT_NE(ln, plan.partitions.end());
  const std::string name = g.op(ln->op).name;
  plan.partitions.erase(ln);
  const SimResult r = run_both(g, job.c, job.cost, plan);
  EXPECT_FALSE(r.symmetric);
  EXPECT_EQ(r.full_reason, "op '" + name + "' runs on one rank of its tensor-parallel group");
}

// The shipped example plans (TP 2 and no TP) run in full and agree with --exact.
TEST(SymmetricSimulation, ShippedExamples) {
  const std::string root = std::string(PLACER_SOURCE_DIR) + "/";
  {
    GptOptions o;
    o.layers = 2, o.hidden = 1024, o.heads = 16, o.seq_len = 1024, o.batch = 16, o.tp = 2;
    TrainingOptions t;
    t.master_weights = true;
    const Graph g = expand_training_step(make_gpt(o), t);
    const Cluster c = load_cluster_yaml(kData + "dgx_a100.cluster.yaml");
    const CostModel cost(c, load_cost_profile(kData + "dgx_a100.profile.yaml"));
    const Plan p = load_plan(root + "examples/gpt_tp2_pp2_dp2.plan.yaml", g, c);
    const SimResult r = run_both(g, c, cost, p);
    EXPECT_EQ(r.full_reason, "no tensor-parallel group of more than 2 ranks");
  }
  {
    const Graph g = load_graph_json(root + "datasets/models/transformer_small.graph.json");
    const Graph step = expand_training_step(g, TrainingOptions{});
    const Cluster c = load_cluster_yaml(kData + "dgx1_p100.cluster.yaml");
    const CostModel cost(c, load_cost_profile(kData + "default.profile.yaml"));
    const Plan p = load_plan(root + "examples/transformer_small.pipeline.plan.yaml", step, c);
    const SimResult r = run_both(step, c, cost, p);
    EXPECT_EQ(r.full_reason, "no tensor-parallel group of more than 2 ranks");
  }
}

}  // namespace
}  // namespace placer
