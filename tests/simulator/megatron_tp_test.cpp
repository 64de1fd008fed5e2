// Megatron tensor parallelism through the plan shorthand on the GPT generator's graph:
// exactly the collectives Megatron-LM issues per layer, no point-to-point transfers.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include "datasets/gpt.h"
#include "sim_fixtures.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/plan/megatron_plan.h"
#include "src/plan/tensor_parallel.h"
#include "src/util/error.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;

Graph small_gpt(int tp, int layers = 2) {
  GptOptions o;
  o.layers = layers;
  o.hidden = 64;
  o.heads = 4;
  o.seq_len = 32;
  o.batch = 8;
  o.vocab = 1000;
  o.tp = tp;
  TrainingOptions t;
  t.master_weights = true;
  return expand_training_step(make_gpt(o), t);
}

// Names (without the layer prefix) of the layer-0 ops that run a collective on device 0,
// forward and backward (backward ops named by their forward op).
struct LayerCollectives {
  std::multiset<std::string> forward, backward;
};

LayerCollectives layer0_collectives(const Graph& g, const SimResult& r) {
  const std::string prefix = "language_model.encoder.layers.0.";
  LayerCollectives out;
  for (const SimEvent& e : r.events) {
    if (e.kind != SimEvent::kCollective || e.device != 0 || e.op == kNoOp) continue;
    const Op& op = g.op(e.op);
    const Op& f = op.phase == Phase::kForward ? op : g.op(op.forward_op);
    if (f.layer != 0) continue;
    const std::string name = f.name.substr(prefix.size());
    (op.phase == Phase::kForward ? out.forward : out.backward).insert(name);
  }
  return out;
}

class MegatronTp : public ::testing::TestWithParam<int> {};

TEST_P(MegatronTp, TwoAllReducesForwardAndTwoBackwardPerLayer) {
  const int tp = GetParam();
  const Graph g = small_gpt(tp);
  const Cluster cl = make_cluster(1, 4, link(5e-6, 1e11), link(5e-6, 1e10));
  const CostModel cost(cl, uniform_profile(0.5));
  Simulator sim(g, cl, cost);
  MegatronConfig m;
  m.tp = tp;
  m.micro_batch = 8;
  m.global_batch = 8;
  const Plan p = megatron_plan(g, m);
  p.validate(g, cl);
  SimOptions opt;
  opt.record_events = true;
  const SimResult r = sim.run(p, opt);
  EXPECT_EQ(r.num_transfers, 0u);
  const LayerCollectives c = layer0_collectives(g, r);
  // Forward: the row-parallel outputs are all-reduced; backward: the column-parallel inputs'
  // gradients (Shoeybi et al. 2019, Fig. 3).
  EXPECT_EQ(c.forward, (std::multiset<std::string>{"self_attention.dense", "mlp.dense_4h_to_h"}));
  EXPECT_EQ(c.backward, (std::multiset<std::string>{"self_attention.query_key_value",
                                                     "mlp.dense_h_to_4h"}));
  // Every device of the group computes: the same work on each rank.
  for (int d = 1; d < tp; ++d) EXPECT_DOUBLE_EQ(r.compute_time[d], r.compute_time[0]) << d;

  // Sequence parallelism: all-gather before each column-parallel linear and reduce-scatter
  // after each row-parallel one, forward; the mirror images backward.
  Plan sp = p;
  sp.tensor_parallel.sequence_parallel = true;
  sp.validate(g, cl);
  const SimResult rs = sim.run(sp, opt);
  EXPECT_EQ(rs.num_transfers, 0u);
  const LayerCollectives s = layer0_collectives(g, rs);
  EXPECT_EQ(s.forward, (std::multiset<std::string>{"input_layernorm", "self_attention.dense",
                                                    "post_attention_layernorm",
                                                    "mlp.dense_4h_to_h"}));
  EXPECT_EQ(s.backward, (std::multiset<std::string>{"self_attention.query_key_value",
                                                     "mlp.dense_h_to_4h",
                                                     "self_attention.bias_dropout_add",
                                                     "mlp.bias_dropout_add"}));
}

INSTANTIATE_TEST_SUITE_P(Degrees, MegatronTp, ::testing::Values(2, 4));

TEST(MegatronTp, ExpansionGivesEveryOpItsMegatronRole) {
  const Graph g = small_gpt(2);
  MegatronConfig m;
  m.tp = 2;
  m.micro_batch = 8;
  m.global_batch = 8;
  const Plan e = expand_tensor_parallel(megatron_plan(g, m), g, 4);
  auto part = [&](const std::string& name) -> const OpPartition& {
    const OpId o = g.find_op(name);
    for (const OpPartition& q : e.partitions) {
      if (q.op == o) return q;
    }
    ADD_FAILURE() << name << " has no partition";
    static OpPartition none;
    return none;
  };
  const std::string l = "language_model.encoder.layers.1.";
  EXPECT_TRUE(part(l + "input_layernorm").replicated);
  EXPECT_TRUE(part(l + "mlp.bias_dropout_add").replicated);
  EXPECT_TRUE(part(l + "self_attention.query_key_value").sharded_output);
  EXPECT_EQ(part(l + "self_attention.query_key_value").dim, 2);
  EXPECT_EQ(part(l + "self_attention.core_attention.scores").dim, 1);  // heads
  EXPECT_TRUE(part(l + "self_attention.core_attention.context").sharded_input);
  EXPECT_EQ(part(l + "self_attention.dense").dim, OpPartition::kReduceDim);
  EXPECT_TRUE(part(l + "self_attention.dense").sharded_input);
  EXPECT_FALSE(part(l + "self_attention.dense").sharded_output);
  EXPECT_EQ(part("language_model.embedding.word_embeddings").dim, OpPartition::kReduceDim);
  EXPECT_TRUE(part("output_layer").sharded_output);
  EXPECT_TRUE(part("loss").sharded_input);
  for (const OpPartition& q : e.partitions) EXPECT_EQ(q.devices, (std::vector<int>{0, 1}));
}

TEST(MegatronTp, AGridOfTwoPipelineStagesAndTwoCopiesSimulates) {
  const Graph g = small_gpt(2);
  const Cluster cl = make_cluster(1, 8, link(5e-6, 1e11), link(5e-6, 1e10));
  const CostModel cost(cl, uniform_profile(0.5));
  Simulator sim(g, cl, cost);
  MegatronConfig m;
  m.tp = 2;
  m.pp = 2;
  m.dp = 2;
  m.micro_batch = 1;
  m.global_batch = 8;
  m.recompute = Recompute::kFull;
  const Plan p = megatron_plan(g, m);
  ASSERT_EQ(p.pipeline.micro_batches, 4);
  EXPECT_EQ(p.pipeline.stages[1].devices, (std::vector<int>{4, 5, 6, 7}));
  p.validate(g, cl);
  const SimResult r = sim.run(p);
  EXPECT_GT(r.num_transfers, 0u);  // activations between the stages
  // Each stage's DP copy (TP ranks 2, 3 / 6, 7) mirrors TP ranks 0, 1 / 4, 5.
  EXPECT_DOUBLE_EQ(r.compute_time[2], r.compute_time[0]);
  EXPECT_DOUBLE_EQ(r.compute_time[7], r.compute_time[5]);
  EXPECT_EQ(r.peak_memory[6], r.peak_memory[4]);
  // Sequence parallelism across stages: the last op of stage 0 hands stage 1 the whole
  // sequence (all-gathered), so the plan stays valid.
  Plan sp = p;
  sp.tensor_parallel.sequence_parallel = true;
  sp.validate(g, cl);
  EXPECT_GT(sim.run(sp).step_time, 0);
}

// A plan whose explicit partitions are Megatron's (here: the shorthand's own expansion, as
// a sharding search would spell it) is recognised as the shorthand; any other sharding is not.
TEST(MegatronTp, ExplicitMegatronPartitionsReadBackAsTheShorthand) {
  const Graph g = small_gpt(2);
  MegatronConfig m;
  m.tp = 2, m.pp = 2, m.dp = 2, m.micro_batch = 1, m.global_batch = 8;
  const Plan shorthand = megatron_plan(g, m);
  const Plan explicit_parts = expand_tensor_parallel(shorthand, g, 8);
  ASSERT_FALSE(explicit_parts.tensor_parallel.enabled());
  ASSERT_GT(explicit_parts.partitions.size(), 0u);
  const std::optional<Plan> back = as_tensor_parallel_shorthand(explicit_parts, g, 8);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->tensor_parallel.degree, 2);
  EXPECT_FALSE(back->tensor_parallel.sequence_parallel);
  EXPECT_TRUE(back->partitions.empty());
  EXPECT_EQ(back->pipeline.stages[1].devices, (std::vector<int>{4, 5, 6, 7}));
  // The partitions in another order are the same set.
  Plan reversed = explicit_parts;
  std::reverse(reversed.partitions.begin(), reversed.partitions.end());
  EXPECT_TRUE(as_tensor_parallel_shorthand(reversed, g, 8).has_value());
  // A replicated op sharded otherwise (the position embeddings' table split, partial sums
  // all-reduced) stays explicit next to the shorthand, and the plan simulates the same.
  Plan pos = explicit_parts;
  const OpId position = g.find_op("language_model.embedding.position_embeddings");
  for (OpPartition& q : pos.partitions) {
    if (q.op == position) q.replicated = false, q.dim = OpPartition::kReduceDim;
  }
  const std::optional<Plan> mixed = as_tensor_parallel_shorthand(pos, g, 8);
  ASSERT_TRUE(mixed.has_value());
  ASSERT_EQ(mixed->partitions.size(), 1u);
  EXPECT_EQ(mixed->partitions[0].op, position);
  EXPECT_EQ(mixed->tensor_parallel.degree, 2);
  const Cluster cl = make_cluster(1, 8, link(5e-6, 1e11), link(5e-6, 1e10));
  const CostModel cost(cl, uniform_profile(0.5));
  Simulator sim(g, cl, cost);
  EXPECT_DOUBLE_EQ(sim.run(*mixed).step_time, sim.run(pos).step_time);
  // Not Megatron's: the MLP's down-projection gathered instead of reduced, an op left out,
  // a shorthand already set, no tensor parallelism.
  Plan other = explicit_parts;
  const OpId down = g.find_op("language_model.encoder.layers.1.mlp.dense_4h_to_h");
  for (OpPartition& q : other.partitions) {
    if (q.op == down) q.dim = 2;
  }
  EXPECT_FALSE(as_tensor_parallel_shorthand(other, g, 8).has_value());
  Plan fewer = explicit_parts;
  fewer.partitions.pop_back();
  EXPECT_FALSE(as_tensor_parallel_shorthand(fewer, g, 8).has_value());
  EXPECT_FALSE(as_tensor_parallel_shorthand(shorthand, g, 8).has_value());
  m.tp = 1, m.dp = 4;
  EXPECT_FALSE(as_tensor_parallel_shorthand(megatron_plan(g, m), g, 8).has_value());
}

// Interleaved 1F1B: 4 layers on pp 2 x 2 virtual stages put layers 0 and 2 on rank 0 and
// layers 1 and 3 on rank 1; each rank does the same work as with 2 layers per rank, and
// activations cross 3 stage boundaries instead of 1.
TEST(MegatronTp, VirtualStagesPutEveryOtherChunkOnARank) {
  const Graph g = small_gpt(2, 4);
  const Cluster cl = make_cluster(1, 4, link(5e-6, 1e11), link(5e-6, 1e10));
  const CostModel cost(cl, uniform_profile(0.5));
  Simulator sim(g, cl, cost);
  MegatronConfig m;
  m.tp = 2;
  m.pp = 2;
  m.micro_batch = 1;
  m.global_batch = 8;
  const Plan plain = megatron_plan(g, m);
  m.virtual_stages = 2;
  const Plan inter = megatron_plan(g, m);
  ASSERT_EQ(inter.pipeline.stages.size(), 4u);
  EXPECT_EQ(inter.pipeline.virtual_stages, 2);
  EXPECT_EQ(inter.pipeline.stages[2].devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(inter.pipeline.stages[3].devices, (std::vector<int>{2, 3}));
  for (OpId o : inter.pipeline.stages[2].ops) EXPECT_EQ(g.op(o).layer, 2) << g.op(o).name;
  inter.validate(g, cl);
  const SimResult a = sim.run(plain), b = sim.run(inter);
  for (int d = 0; d < 4; ++d) EXPECT_NEAR(b.compute_time[d], a.compute_time[d], 1e-12) << d;
  EXPECT_EQ(b.num_transfers, 3 * a.num_transfers);
  m.micro_batch = 8;  // one micro-batch cannot be interleaved over 2 ranks
  try {
    megatron_plan(g, m);
    FAIL() << "accepted";
  } catch (const ValidationError& e) {
    EXPECT_STREQ(e.what(),
                 "megatron: interleaved 1F1B needs micro-batches (1) to be a multiple of pp 2");
  }
}

// Fused attention is split by heads like the unfused core: each TP rank runs its heads'
// share (q, k and v heads alike), reading the column-parallel QKV shards, no collective.
// A multi-token-prediction block under tensor parallelism: its embedding over the vocabulary,
// its logits by columns as the output layer's, eh_proj and the norms whole on every rank;
// the step simulates.
TEST(MegatronTp, MultiTokenPredictionBlockHasMegatronRoles) {
  LlamaOptions o;
  o.layers = 2;
  o.mtp_layers = 1;
  o.hidden = 64;
  o.heads = 4;
  o.seq_len = 32;
  o.batch = 8;
  o.vocab = 1000;
  o.tp = 2;
  o.dtype = DType::kF32;  // the test devices have an f32 peak only
  const Graph g = expand_training_step(make_llama(o));
  const std::string p = "language_model.mtp.layers.0";
  auto role = [&](const std::string& name) {
    const OpId id = g.find_op(p + name);
    EXPECT_NE(id, kNoOp) << name;
    return id == kNoOp ? TensorParallelRole::kUnknown : megatron_role(g.op(id));
  };
  EXPECT_EQ(role(".word_embeddings"), TensorParallelRole::kVocabEmbedding);
  EXPECT_EQ(role(".eh_proj"), TensorParallelRole::kReplicated);
  EXPECT_EQ(role(".output_layer"), TensorParallelRole::kColumn);
  EXPECT_EQ(role(".enorm"), TensorParallelRole::kReplicated);
  EXPECT_EQ(role(".final_layernorm"), TensorParallelRole::kReplicated);
  MegatronConfig m;
  m.tp = 2;
  m.micro_batch = 8;
  m.global_batch = 8;
  const Cluster cl = make_cluster(1, 2, link(5e-6, 1e11), link(5e-6, 1e10));
  const CostModel cost(cl, uniform_profile(0.5));
  Simulator sim(g, cl, cost);
  const Plan plan = megatron_plan(g, m);
  plan.validate(g, cl);
  EXPECT_GT(sim.run(plan).step_time, 0.0);
}

TEST(MegatronTp, FlashAttentionSplitsByHeads) {
  LlamaOptions o;
  o.layers = 1;
  o.hidden = 64;
  o.heads = 4;
  o.kv_heads = 2;
  o.seq_len = 32;
  o.batch = 8;
  o.vocab = 1000;
  o.tp = 2;
  o.dtype = DType::kF32;  // the test devices have an f32 peak only
  o.attention = AttentionImpl::kFlash;
  const Graph g = expand_training_step(make_llama(o));
  const std::string name =
      "language_model.encoder.layers.0.self_attention.core_attention."
      "flash_attention";
  const OpId f = g.find_op(name);
  ASSERT_NE(f, kNoOp);
  EXPECT_EQ(megatron_role(g.op(f)), TensorParallelRole::kSharded);
  MegatronConfig m;
  m.tp = 2;
  m.micro_batch = 8;
  m.global_batch = 8;
  const Plan p = megatron_plan(g, m);
  const Plan e = expand_tensor_parallel(p, g, 2);
  const OpPartition* q = nullptr;
  for (const OpPartition& x : e.partitions) q = x.op == f ? &x : q;
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dim, 2);  // the context's features: heads x d_head
  EXPECT_TRUE(q->sharded_input);
  EXPECT_TRUE(q->sharded_output);
  EXPECT_FALSE(q->replicated);

  // Causal, b 8, s 32, 4 heads of 16: 4 * 8 * 4 * 16 * 528 FLOPs, compute-bound on the test
  // devices (1e12 FLOP/s, 200704 B at 1e12 B/s); each rank runs half, forward and backward.
  const double flops = 4.0 * 8 * 4 * 16 * 528;
  EXPECT_DOUBLE_EQ(g.op(f).flops, flops);
  const Cluster cl = make_cluster(1, 2, link(5e-6, 1e11), link(5e-6, 1e10));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  p.validate(g, cl);
  SimOptions opt;
  opt.record_events = true;
  const SimResult r = sim.run(p, opt);
  const OpId b = g.find_op(name + "/grad");
  int seen = 0;
  for (const SimEvent& ev : r.events) {
    if (ev.kind != SimEvent::kCompute || (ev.op != f && ev.op != b)) continue;
    const double expected = (ev.op == f ? 1.0 : 2.5) * flops / 2 / 1e12;
    EXPECT_NEAR(ev.end - ev.start, expected, 1e-9 * expected) << ev.device;
    ++seen;
  }
  EXPECT_EQ(seen, 4);  // forward and backward on each of the two ranks
}

}  // namespace
}  // namespace placer
