// rainbow-3d (agents/rainbow/rainbow_3d.h): on a small GPT its plan validates and simulates to the
// reported time, the same seed gives the same plan, the budget in simulator runs is kept, the
// megatron grid's warm start is the incumbent (never beaten by the grid, its runs counted) and
// does nothing where the grid does not apply, and on a case whose optimum is known (two hosts
// of two GPUs, batch 1: two pipeline stages, each Megatron tensor parallel over a host, heads
// included) its own sharding search finds it without the warm start. On a small mixture-of-
// experts Llama on 16 GPUs it reaches the optimum of the Megatron space (every configuration
// simulated) with expert parallelism, on a long-sequence Llama that only context parallelism
// fits it finds cp > 1 on its own; both plans export to Megatron-LM arguments that read back
// to the same plan. The attention-core rule and the tied-layer decisions it relies on
// are tested here too.

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include "agents/classical/megatron_grid.h"
#include "agents/rainbow/rainbow_3d.h"
#include "datasets/gpt.h"
#include "datasets/synthetic.h"
#include "env/opp_env.h"
#include "env/sharding.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/plan_export.h"
#include "src/io/plan_import.h"
#include "src/io/plan_io.h"
#include "src/plan/megatron_config_of.h"
#include "src/plan/megatron_plan.h"
#include "src/plan/tensor_parallel.h"
#include "src/util/error.h"
#include "tests/agents/long_llama.h"
#include "tests/agents/problem_fixture.h"

namespace placer {
namespace {

Graph small_gpt(int64_t batch, int layers = 4, int64_t hidden = 256, int64_t seq_len = 128,
                int64_t vocab = 1000) {
  GptOptions o;
  o.layers = layers, o.hidden = hidden, o.heads = 8, o.seq_len = seq_len, o.batch = batch;
  o.vocab = vocab;
  return expand_training_step(make_gpt(o));
}

/// `hosts` x `per_host` GPUs of 100 TFLOP/s f16, NVLink in a host, a slow network between.
Cluster cluster(int hosts, int per_host, uint64_t memory = 64ull << 30) {
  DeviceSpec s;
  s.model = "gpu";
  s.peak_flops[static_cast<int>(DType::kF32)] = 20e12;
  s.peak_flops[static_cast<int>(DType::kF16)] = 100e12;
  s.memory_bandwidth = 1e12;
  s.memory_bytes = memory;
  return testing::hosts_cluster(hosts, per_host, s,
                                LinkSpec{"nvlink", 2e-6, 300e9, LinkSharing::kPerPair},
                                LinkSpec{"ethernet", 20e-6, 5e9, LinkSharing::kPerPair});
}

struct Fixture : testing::ProblemFixture {
  Fixture(Graph graph, Cluster cl) : ProblemFixture(std::move(graph), std::move(cl), 0.5) {}
};

SearchBudget runs(int64_t n, uint64_t seed = 1) {
  SearchBudget b;
  b.max_evaluations = n;
  b.seed = seed;
  return b;
}

OpId op_named(const Graph& g, const std::string& name) {
  for (OpId o = 0; o < g.num_ops(); ++o) {
    if (g.op(o).name == name) return o;
  }
  ADD_FAILURE() << "no op " << name;
  return kNoOp;
}

/// Index of the variable called `name`, -1 when there is none.
int var_named(const ShardingPropagator& prop, const std::string& name) {
  for (size_t v = 0; v < prop.variables().size(); ++v) {
    if (prop.variables()[v].name == name) return int(v);
  }
  return -1;
}

TEST(AttentionCoreRule, HeadsOfTheFusedQkvSplitThroughScoresAndContext) {
  const Graph g = small_gpt(8, 1);
  ShardingPropagator prop(g, 2);
  // Column-split the fused qkv weight (dim 1): the heads split through the attention core,
  // and the output projection's weight is split on its input dim (row parallel).
  std::vector<Sharding> vars(prop.variables().size());
  const int qkv =
      var_named(prop, "language_model.encoder.layers.0.self_attention.query_key_value:weight");
  const int dense = var_named(prop, "language_model.encoder.layers.0.self_attention.dense:weight");
  ASSERT_GE(qkv, 0);
  ASSERT_GE(dense, 0);
  vars[size_t(qkv)] = Sharding::split(1, 0);
  const PropagationResult r = prop.propagate(vars, prop.replicated_inputs());
  ASSERT_FALSE(r.conflict) << r.conflict_reason;
  const OpId scores =
      op_named(g, "language_model.encoder.layers.0.self_attention.core_attention.scores");
  const OpId context =
      op_named(g, "language_model.encoder.layers.0.self_attention.core_attention.context");
  const Sharding s = r.tensors[g.op(scores).outputs[0]];
  EXPECT_EQ(s.kind, Sharding::Kind::kSplit);
  EXPECT_EQ(s.dim, 1);  // [b, a, s, s]: the heads, 4 of 8 per device
  EXPECT_EQ(s.inner, 4);
  const Sharding c = r.tensors[g.op(context).outputs[0]];
  EXPECT_EQ(c.kind, Sharding::Kind::kSplit);
  EXPECT_EQ(c.dim, 2);  // [b, s, h]: contiguous halves of h = 256
  EXPECT_EQ(c.inner, 128);
  EXPECT_EQ(r.variables[size_t(dense)], Sharding::split(0, 128));

  // The vocabulary-parallel embedding (table split on the vocabulary) splits the tied output
  // layer's logits on the vocabulary, and the cross-entropy over them leaves partial sums.
  std::vector<Sharding> vocab(prop.variables().size());
  const int table = var_named(prop, "language_model.embedding.word_embeddings:table");
  ASSERT_GE(table, 0);
  vocab[size_t(table)] = Sharding::split(0, 0);
  const PropagationResult rv = prop.propagate(vocab, prop.replicated_inputs());
  ASSERT_FALSE(rv.conflict) << rv.conflict_reason;
  const OpId head = op_named(g, "output_layer");
  const OpId loss = op_named(g, "loss");
  EXPECT_EQ(rv.tensors[g.op(head).outputs[0]].kind, Sharding::Kind::kSplit);
  EXPECT_EQ(rv.tensors[g.op(head).outputs[0]].dim, 2);
  EXPECT_EQ(rv.tensors[g.op(loss).outputs[0]].kind, Sharding::Kind::kPartial);

  // Splitting the sequence (the tokens' dim 1) reaches the scores: a conflict naming the rule.
  std::vector<Sharding> inputs = prop.replicated_inputs();
  bool found = false;
  for (size_t i = 0; i < prop.data_inputs().size(); ++i) {
    if (g.tensor(prop.data_inputs()[i]).shape.size() == 2 && !found) {
      inputs[i] = Sharding::split(1, 64);  // [b, s] tokens, s = 128
      found = true;
    }
  }
  ASSERT_TRUE(found);
  const PropagationResult seq =
      prop.propagate(std::vector<Sharding>(prop.variables().size()), inputs);
  ASSERT_TRUE(seq.conflict);
  EXPECT_NE(seq.conflict_reason.find("attention scores"), std::string::npos) << seq.conflict_reason;
}

TEST(AttentionCoreRule, TiedLayersDecideEveryLayerAtOnce) {
  const Graph g = small_gpt(8, 3);
  const Cluster c = cluster(1, 2);
  const CostModel cost(c, uniform_profile(0.5));
  OppEnvOptions o;
  o.degree = 2;
  OppEnv untied(g, c, cost, o);
  o.tie_layers = true;
  OppEnv tied(g, c, cost, o);
  // Replicate everything: the tied episode takes a third of the steps per layer slot.
  int untied_steps = 0, tied_steps = 0;
  while (!untied.done()) untied.step(0), ++untied_steps;
  while (!tied.done()) tied.step(0), ++tied_steps;
  EXPECT_LT(tied_steps, untied_steps);
  // Deciding the qkv weight's dim 1 in a tied episode splits it in all three layers.
  tied.reset();
  for (int guard = 0; guard < 1000 && !tied.done(); ++guard) {
    const ShardSlot sl = tied.slots()[size_t(tied.current_slot())];
    const std::string& n = tied.propagator().variables()[size_t(sl.var)].name;
    const bool qkv = n.find("query_key_value:weight") != std::string::npos && sl.dim == 1;
    const OppEnv::StepResult r = tied.step(qkv ? 1 : 0);
    ASSERT_FALSE(r.conflict);
    if (qkv) break;
  }
  int split = 0;
  for (size_t s = 0; s < tied.slots().size(); ++s) {
    const ShardSlot sl = tied.slots()[s];
    const std::string& n = tied.propagator().variables()[size_t(sl.var)].name;
    if (n.find("query_key_value:weight") != std::string::npos && sl.dim == 1) {
      EXPECT_EQ(tied.decisions()[s], 1) << n;
      ++split;
    }
  }
  EXPECT_EQ(split, 3);
}

TEST(Rainbow3D, PlanValidatesSimulatesAndRepeatsWithTheSeed) {
  Fixture f(small_gpt(8), cluster(1, 4));
  Problem p = f.problem();
  Rainbow3DPlacer a, b;
  const SearchOutcome oa = a.search_outcome(p, runs(80, 3));
  const SearchOutcome ob = b.search_outcome(p, runs(80, 3));
  oa.plan.validate(f.g, f.c);
  const SimResult r = f.sim.run(oa.plan);
  EXPECT_FALSE(r.oom);
  EXPECT_NEAR(r.step_time, oa.stats.value("step_time"), 1e-9 * r.step_time);
  EXPECT_EQ(oa.plan.method, "rainbow-3d");
  EXPECT_EQ(plan_to_yaml(oa.plan, f.g, f.c), plan_to_yaml(ob.plan, f.g, f.c));
  const SearchStats& s = oa.stats;
  EXPECT_EQ(s.value("tp") * s.value("pp") * s.value("dp"), 4.0);
  EXPECT_EQ(double(oa.plan.pipeline.stages.size()), s.value("pp") * s.value("virtual_stages"));
  // The plan file round-trips and simulates to the same step.
  const std::string yaml = plan_to_yaml(oa.plan, f.g, f.c);
  const Plan back = parse_plan_yaml(yaml, "r3.plan.yaml", f.g, f.c);
  EXPECT_NEAR(f.sim.run(back).step_time, r.step_time, 1e-9 * r.step_time);
}

TEST(Rainbow3D, KeepsTheRunBudget) {
  Fixture f(small_gpt(8), cluster(1, 4));
  Problem p = f.problem();
  for (int64_t n : {20, 60}) {
    Rainbow3DPlacer placer;
    const SearchOutcome o = placer.search_outcome(p, runs(n));
    // Every simulator run counts; one step may finish a started episode's last evaluation.
    // The warm start's grid runs come on top of the budget.
    const double grid = o.stats.value("grid_runs");
    EXPECT_GT(grid, 0) << n;
    EXPECT_LE(double(o.stats.runs) - grid, double(n + 1)) << n;
    EXPECT_GE(double(o.stats.runs) - grid, double(n / 2)) << n;
  }
}

TEST(Rainbow3D, WarmStartsFromTheMegatronGridAndNeverLosesToIt) {
  // Two hosts of two GPUs, batch 2, a large vocabulary: the grid's plan is rainbow-3d's
  // incumbent, its shape is refined first (here its cuts), and the grid's simulations are
  // counted in rainbow-3d's.
  Fixture f(small_gpt(2, 4, 512, 256, 32000), cluster(2, 2));
  Problem p = f.problem();
  MegatronGridPlacer grid;
  const SearchOutcome go = grid.search_outcome(p, SearchBudget{});
  const double grid_time = f.sim.run(go.plan).step_time;
  Rainbow3DPlacer placer;
  const SearchOutcome o = placer.search_outcome(p, runs(60, 1));
  EXPECT_EQ(o.stats.value("grid_runs"), double(go.stats.runs));
  EXPECT_NEAR(o.stats.value("grid_step_time"), grid_time, 1e-9 * grid_time);
  const double own = o.stats.value("probe_runs") + o.stats.value("cut_runs") +
                     o.stats.value("layout_runs") + o.stats.value("opp_runs");
  EXPECT_EQ(double(o.stats.runs), own + o.stats.value("grid_runs"));
  const SimResult r = f.sim.run(o.plan);
  EXPECT_FALSE(r.oom);
  EXPECT_LE(r.step_time, grid_time);
  EXPECT_NEAR(r.step_time, o.stats.value("step_time"), 1e-9 * r.step_time);
  EXPECT_EQ(o.plan.method, "rainbow-3d");
  // The grid picks tp 2, pp 2, SP (5.319 ms); rainbow-3d keeps that shape and moves every
  // layer to the first stage, leaving the last with the 32000-word LM head and the loss
  // (5.204 ms, seeds 1-4), a cut the grid's even split cannot give.
  EXPECT_EQ(o.stats.value("tp"), 2.0);
  EXPECT_EQ(o.stats.value("pp"), 2.0);
  EXPECT_LT(r.step_time, 0.985 * grid_time);
  // The grid's plan (its runs, then one to simulate it again) is already within 5% of the
  // final one (5.319 against 5.204 ms), so that is when the search got there.
  EXPECT_LE(grid_time, 1.05 * r.step_time);
  EXPECT_EQ(o.stats.value("runs_to_5pct"), o.stats.value("grid_runs") + 1);
  ASSERT_EQ(o.plan.pipeline.stages.size(), 2u);
  std::vector<std::set<int>> layers(2);
  for (size_t k = 0; k < 2; ++k) {
    for (OpId op : o.plan.pipeline.stages[k].ops) {
      if (f.g.op(op).layer >= 0) layers[k].insert(f.g.op(op).layer);
    }
  }
  EXPECT_EQ(layers[0].size(), 4u);
  EXPECT_EQ(layers[1].size(), 0u);
  // Seeded: the same plan again.
  Rainbow3DPlacer again;
  const SearchOutcome o2 = again.search_outcome(p, runs(60, 1));
  EXPECT_EQ(plan_to_yaml(o.plan, f.g, f.c), plan_to_yaml(o2.plan, f.g, f.c));
}

TEST(Rainbow3D, NoWarmStartWhereTheGridDoesNotApply) {
  // An MLP has no attention: the megatron grid does not apply, no grid run is counted, and
  // the plan is the one the search gives with the warm start turned off.
  MlpOptions mo;
  mo.layers = 6, mo.input = 512, mo.hidden = 1024, mo.classes = 100, mo.batch = 16;
  Fixture f(expand_training_step(make_mlp(mo)), cluster(1, 4));
  Problem p = f.problem();
  Rainbow3DPlacer with;
  const SearchOutcome a = with.search_outcome(p, runs(40, 2));
  EXPECT_EQ(a.stats.value("grid_runs"), 0.0);
  EXPECT_EQ(a.stats.value("grid_step_time"), 0.0);
  Rainbow3DOptions off;
  off.grid_seconds = 0;
  Rainbow3DPlacer without(off);
  const SearchOutcome b = without.search_outcome(p, runs(40, 2));
  EXPECT_EQ(a.stats.runs, b.stats.runs);
  EXPECT_EQ(plan_to_yaml(a.plan, f.g, f.c), plan_to_yaml(b.plan, f.g, f.c));
}

/// rainbow-3d without the warm start: its own sharding search (the grid would hand it the
/// answer in the two tests below).
Rainbow3DPlacer without_grid() {
  Rainbow3DOptions o;
  o.grid_seconds = 0;
  return Rainbow3DPlacer(o);
}

TEST(Rainbow3D, FindsTwoStagesOfMegatronTensorParallelism) {
  // Batch 1 (no data parallelism, one micro-batch), two hosts of two GPUs with a slow network:
  // tensor parallelism must stay in a host, so the best shape is tp 2 x pp 2, and the best
  // sharding is Megatron's (attention heads and MLP split; the rest replicated).
  // Layers big enough that compute, not latency, sets the step.
  Fixture f(small_gpt(1, 4, 1024, 512), cluster(2, 2));
  Problem p = f.problem();
  MegatronConfig m;
  m.tp = 2, m.pp = 2, m.dp = 1, m.micro_batch = 1, m.global_batch = 1;
  const double megatron = f.sim.run(megatron_plan(f.g, m)).step_time;
  MegatronConfig pp4;
  pp4.pp = 4, pp4.micro_batch = 1, pp4.global_batch = 1;
  const double pipeline_only = f.sim.run(megatron_plan(f.g, pp4)).step_time;
  ASSERT_LT(megatron, 0.8 * pipeline_only);  // the case is clear-cut

  Rainbow3DPlacer placer = without_grid();
  const SearchOutcome o = placer.search_outcome(p, runs(200, 1));
  EXPECT_EQ(o.stats.value("tp"), 2.0);
  EXPECT_EQ(o.stats.value("pp"), 2.0);
  EXPECT_EQ(o.stats.value("dp"), 1.0);
  // Megatron's plan takes 3.785 ms; rainbow-3d's 3.782 ms (seeds 1-6 all give it).
  EXPECT_LE(o.stats.value("step_time"), megatron * 1.001);
  // The heads are split: the scores of every layer are partitioned on dim 1. The sharding
  // found is Megatron's, so the plan spells it as the shorthand.
  ASSERT_EQ(o.plan.tensor_parallel.degree, 2);
  const Plan expanded = expand_tensor_parallel(o.plan, f.g, f.c.num_devices());
  int scores = 0;
  for (const OpPartition& part : expanded.partitions) {
    if (f.g.op(part.op).name.find("core_attention.scores") != std::string::npos) {
      EXPECT_EQ(part.dim, 1);
      EXPECT_EQ(part.devices.size(), 2u);
      ++scores;
    }
  }
  EXPECT_EQ(scores, 4);
}

TEST(Rainbow3D, TurnsSequenceParallelismOnOverMegatronsSharding) {
  // The case above with a longer sequence: the norms, dropout and residual adds that Megatron
  // runs whole on both TP ranks are a large part of the step, and sequence parallelism
  // splits them (Korthikanti et al. 2022). rainbow-3d's DQN finds Megatron's sharding,
  // writes it as the shorthand and simulates it with sequence parallelism on.
  Fixture f(small_gpt(1, 4, 1024, 2048), cluster(2, 2));
  Problem p = f.problem();
  MegatronConfig m;
  m.tp = 2, m.pp = 2, m.dp = 1, m.micro_batch = 1, m.global_batch = 1;
  const SimResult off = f.sim.run(megatron_plan(f.g, m));
  m.sequence_parallel = true;
  const SimResult on = f.sim.run(megatron_plan(f.g, m));
  ASSERT_LT(on.step_time, 0.99 * off.step_time);
  ASSERT_LT(*std::max_element(on.peak_memory.begin(), on.peak_memory.end()),
            *std::max_element(off.peak_memory.begin(), off.peak_memory.end()));

  Rainbow3DPlacer placer = without_grid();
  const SearchOutcome o = placer.search_outcome(p, runs(200, 1));
  EXPECT_EQ(o.stats.value("grid_runs"), 0.0);
  EXPECT_EQ(o.stats.value("tp"), 2.0);
  EXPECT_EQ(o.stats.value("pp"), 2.0);
  EXPECT_EQ(o.stats.value("sequence_parallel"), 1.0);
  EXPECT_EQ(o.plan.tensor_parallel.degree, 2);
  EXPECT_TRUE(o.plan.tensor_parallel.sequence_parallel);
  // The shorthand spells every linear; what the DQN shards otherwise stays explicit (here the
  // position embeddings' table, split on the positions).
  for (const OpPartition& part : o.plan.partitions) {
    const TensorParallelRole r = megatron_role(f.g.op(part.op));
    EXPECT_NE(r, TensorParallelRole::kColumn) << f.g.op(part.op).name;
    EXPECT_NE(r, TensorParallelRole::kRow) << f.g.op(part.op).name;
  }
  // Megatron's plan without sequence parallelism takes 15.074 ms, with it 14.575 ms;
  // rainbow-3d's 14.593 ms (its split position embeddings cost an all-reduce).
  EXPECT_LT(o.stats.value("step_time"), 0.99 * off.step_time);
  EXPECT_LE(o.stats.value("step_time"), on.step_time * 1.002);
  EXPECT_NEAR(f.sim.run(o.plan).step_time, o.stats.value("step_time"), 1e-9);
}

/// A 2-layer Llama with 8 routed experts (top 2) in every layer.
Graph small_moe(int64_t batch, int64_t expert_ffn) {
  LlamaOptions o;
  o.layers = 2, o.hidden = 256, o.heads = 8, o.kv_heads = 8, o.seq_len = 128, o.batch = batch;
  o.vocab = 1000, o.dtype = DType::kF16;
  o.moe.experts = 8, o.moe.top_k = 2, o.moe.expert_ffn = expert_ffn;
  return expand_training_step(make_llama(o));
}

/// The fastest simulated step over every configuration of the Megatron grid on `p` (all fit
/// on the roomy devices of these tests, so none is pruned), and that configuration.
std::pair<double, MegatronConfig> grid_optimum(Problem& p) {
  const MegatronGrid grid = megatron_grid(p);
  EXPECT_EQ(grid.fitting.size(), size_t(grid.enumerated));
  double best = std::numeric_limits<double>::infinity();
  MegatronConfig arg;
  for (const MegatronCandidate& c : grid.fitting) {
    const SimResult r = p.simulator.run(megatron_plan(p.graph, c.config));
    if (!r.oom && r.step_time < best) best = r.step_time, arg = c.config;
  }
  return {best, arg};
}

/// The plan's Megatron-LM arguments read back (on the same devices) give the same plan.
void expect_megatron_round_trip(const Plan& plan, const Graph& g, const Cluster& c) {
  const std::string args = export_plan(plan, g, c, ExportFormat::kMegatron);
  const MegatronConfig m = megatron_config_of(plan, g);
  FrameworkConfig f = parse_megatron_arguments(args, m.tp * m.cp * m.pp * m.dp);
  f.config.first_device = m.first_device;
  Plan back = plan_of_framework_config(f, g);
  back.method = plan.method;
  back.predicted = plan.predicted;
  EXPECT_EQ(plan_to_yaml(back, g, c), plan_to_yaml(plan, g, c)) << args;
  EXPECT_EQ(back.context_parallel.degree, plan.context_parallel.degree);
  EXPECT_EQ(back.expert_parallel.degree, plan.expert_parallel.degree);
}

TEST(Rainbow3D, ReachesTheOptimumOfTheMegatronSpaceWithExpertParallelism) {
  // Two hosts of 8 GPUs with a slow network between, batch 16, wide experts: the experts'
  // gradients dominate the data-parallel all-reduce, and spreading the experts over EP ranks
  // shrinks them (each expert's gradient is reduced over its expert-data-parallel ranks only).
  Fixture f(small_moe(16, 2048), cluster(2, 8));
  Problem p = f.problem();
  const auto [optimum, arg] = grid_optimum(p);
  ASSERT_GT(arg.ep, 1) << describe(arg);  // the space's optimum uses expert parallelism
  Rainbow3DOptions o;
  o.grid_seconds = 600;  // the whole grid, whatever the machine's load
  Rainbow3DPlacer placer(o);
  const SearchOutcome out = placer.search_outcome(p, runs(60, 1));
  const SimResult r = f.sim.run(out.plan);
  EXPECT_FALSE(r.oom);
  EXPECT_LE(r.step_time, optimum * (1 + 1e-9));
  EXPECT_LE(r.step_time, out.stats.value("grid_step_time") * (1 + 1e-9));
  EXPECT_GT(out.plan.expert_parallel.degree, 1);
  EXPECT_EQ(out.stats.value("ep"), double(out.plan.expert_parallel.degree));
  EXPECT_NEAR(r.step_time, out.stats.value("step_time"), 1e-9 * r.step_time);
  expect_megatron_round_trip(out.plan, f.g, f.c);
  // Seeded: the same plan again.
  Rainbow3DPlacer again(o);
  EXPECT_EQ(plan_to_yaml(again.search_outcome(p, runs(60, 1)).plan, f.g, f.c),
            plan_to_yaml(out.plan, f.g, f.c));
  // Without the warm start its own search reaches the optimum too (tp 1, pp 2, dp 8, ep 8,
  // 2 micro-batches: 1.681 ms): the optimum's shape is among the 64 of 105 shapes the grid's
  // estimate ranks first (not among the first 32).
  Rainbow3DPlacer own = without_grid();
  const SearchOutcome alone = own.search_outcome(p, runs(300, 1));
  EXPECT_EQ(alone.plan.expert_parallel.degree, 8);
  EXPECT_LE(alone.stats.value("step_time"), optimum * (1 + 1e-9));
}

using testing::long_llama;

TEST(Rainbow3D, FindsContextParallelismWhereOnlyItFits) {
  // Devices between the smallest memory estimate with and without context parallelism (the
  // megatron grid's test case): rainbow-3d's own search, without the grid's plan, finds a
  // plan with cp > 1 that fits; it exports to Megatron-LM and reads back the same.
  Fixture roomy(long_llama(), cluster(1, 4));
  Problem pr = roomy.problem();
  double with_cp = std::numeric_limits<double>::infinity(), without = with_cp;
  for (const MegatronCandidate& c : megatron_grid(pr).fitting) {
    double& m = c.config.cp > 1 ? with_cp : without;
    m = std::min(m, c.memory_bytes);
  }
  ASSERT_LT(with_cp, without);
  Fixture tight(long_llama(), cluster(1, 4, uint64_t((with_cp + without) / 2)));
  Problem pt = tight.problem();
  Rainbow3DPlacer own = without_grid();
  const SearchOutcome out = own.search_outcome(pt, runs(80, 1));
  EXPECT_GT(out.plan.context_parallel.degree, 1);
  EXPECT_EQ(out.stats.value("cp"), double(out.plan.context_parallel.degree));
  EXPECT_FALSE(tight.sim.run(out.plan).oom);
  expect_megatron_round_trip(out.plan, tight.g, tight.c);
}

TEST(Rainbow3D, ClearErrors) {
  GptOptions fwd;
  fwd.layers = 2, fwd.hidden = 64, fwd.heads = 4, fwd.seq_len = 32, fwd.batch = 8, fwd.vocab = 1000;
  Fixture f(make_gpt(fwd), cluster(1, 2));  // forward only
  Problem p = f.problem();
  Rainbow3DPlacer placer;
  try {
    placer.search(p, runs(10));
    FAIL() << "expected a ValidationError";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("rainbow-3d: the graph must be a training step"),
              std::string::npos)
        << e.what();
  }
  Fixture t(small_gpt(8), cluster(1, 2));
  Problem q = t.problem();
  Rainbow3DOptions o;
  o.opp_share = 0.8;
  o.pp_share = 0.5;
  Rainbow3DPlacer bad(o);
  EXPECT_THROW(bad.search(q, runs(10)), ValidationError);
  Rainbow3DOptions no_shapes;
  no_shapes.max_shapes = 0;
  try {
    Rainbow3DPlacer(no_shapes).search(q, runs(10));
    FAIL() << "expected a ValidationError";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("max_shapes"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace placer
