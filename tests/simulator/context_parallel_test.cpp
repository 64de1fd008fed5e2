// Context parallelism: the ring's exposed time by hand, the exchange charged to the
// attention of a simulated Llama, activation memory divided by cp, and the Megatron
// configuration of a tp x cp x dp x pp grid.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "datasets/gpt.h"
#include "sim_fixtures.h"
#include "simulator/context_parallel.h"
#include "src/graph/training_step.h"
#include "src/plan/megatron_config_of.h"
#include "src/plan/megatron_plan.h"
#include "src/util/error.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;

// 2 layers, 4 heads of 16 with 2 KV heads, b 8, s 32, f32, fused attention.
Graph small_llama(int64_t batch = 8) {
  LlamaOptions o;
  o.layers = 2;
  o.hidden = 64;
  o.heads = 4;
  o.kv_heads = 2;
  o.seq_len = 32;
  o.batch = batch;
  o.vocab = 1000;
  o.dtype = DType::kF32;  // the test devices have an f32 peak only
  o.attention = AttentionImpl::kFlash;
  return expand_training_step(make_llama(o));
}

MegatronConfig grid(int cp, int dp, int batch = 8) {
  MegatronConfig m;
  m.cp = cp;
  m.dp = dp;
  m.micro_batch = batch / dp;
  m.global_batch = batch;
  return m;
}

// Ring of cp ranks: forward cp - 1 KV chunks in flight, each hidden behind a block's compute
// unless slower; backward the chunk and its gradient (2x) per step plus the last gradient.
TEST(ContextParallel, RingExposedTimeByHand) {
  EXPECT_DOUBLE_EQ(context_parallel_p2p_exposed(4, 1e-3, 0.5e-3, false), 0);  // hidden
  EXPECT_DOUBLE_EQ(context_parallel_p2p_exposed(4, 1e-3, 1.5e-3, false), 3 * 0.5e-3);
  EXPECT_DOUBLE_EQ(context_parallel_p2p_exposed(2, 1e-3, 4e-3, false), 3e-3);
  EXPECT_DOUBLE_EQ(context_parallel_p2p_exposed(4, 2e-3, 0.5e-3, true), 0.5e-3);
  EXPECT_DOUBLE_EQ(context_parallel_p2p_exposed(4, 1e-3, 1e-3, true), 3 * 1e-3 + 1e-3);
  EXPECT_DOUBLE_EQ(context_parallel_p2p_exposed(1, 1e-3, 9e-3, true), 0);
}

struct RingCase {
  int cp;
  double bandwidth;  ///< B/s of every link (latency 0)
};

class ContextParallelRing : public ::testing::TestWithParam<RingCase> {};

// The cp plan runs exactly the dp plan's compute (the same token split) plus, per layer,
// the ring's exposed time: the KV chunk of a rank is 2 x (2 / 4 heads) x b s h x 4 B / cp
// = 65536 / cp bytes, x = bytes / bandwidth.
TEST_P(ContextParallelRing, AddsTheRingsExposedStepsToEachAttention) {
  const auto [cp, bandwidth] = GetParam();
  const Graph g = small_llama();
  const Cluster cl = make_cluster(1, 8, link(0, bandwidth), link(0, bandwidth));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  const Plan with_cp = megatron_plan(g, grid(cp, 1));
  const Plan with_dp = megatron_plan(g, grid(1, cp));
  with_cp.validate(g, cl);
  const SimResult r = sim.run(with_cp);
  const SimResult base = sim.run(with_dp);
  const OpId f =
      g.find_op("language_model.encoder.layers.0.self_attention.core_attention.flash_attention");
  const OpId b = g.find_op(g.op(f).name + "/grad");
  ASSERT_NE(f, kNoOp);
  ASSERT_NE(b, kNoOp);
  const double x = 65536.0 / cp / bandwidth;
  const double cf = cost.op_time(g.op(f), g.op_bytes(f), 0, 1.0 / cp);
  const double cb = cost.op_time(g.op(b), g.op_bytes(b), 0, 1.0 / cp);
  const double fw = context_parallel_p2p_exposed(cp, cf / cp, x, false);
  const double bw = context_parallel_p2p_exposed(cp, cb / cp, x, true);
  ASSERT_EQ(r.context_forward_wait.size(), size_t(8));
  EXPECT_NEAR(r.context_forward_wait[0], 2 * fw, 1e-15);  // two layers
  EXPECT_NEAR(r.context_backward_wait[0], 2 * bw, 1e-15);
  EXPECT_NEAR(r.step_time - base.step_time, 2 * (fw + bw), 1e-9 * r.step_time);
  EXPECT_TRUE(base.context_forward_wait.empty());
}

INSTANTIATE_TEST_SUITE_P(SlowAndFastLinks, ContextParallelRing,
                         ::testing::Values(RingCase{2, 1e6}, RingCase{4, 1e6}, RingCase{4, 1e15},
                                           RingCase{8, 1e9}),
                         [](const auto& i) {
                           return "cp" + std::to_string(i.param.cp) + "_bw" +
                                  std::to_string(int(std::log10(i.param.bandwidth)));
                         });

// All-gather of the KV chunks: forward one all-gather of cp chunks per attention.
TEST(ContextParallel, AllGatherChargesTheGatherOfEveryChunk) {
  const Graph g = small_llama();
  const Cluster cl = make_cluster(1, 4, link(1e-6, 1e9), link(1e-6, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  MegatronConfig m = grid(4, 1);
  m.cp_comm = ContextParallelComm::kAllGather;
  const SimResult r = sim.run(megatron_plan(g, m));
  const double gather =
      cost.collective_time(CollectiveKind::kAllGather, {0, 1, 2, 3}, 65536, SyncScheme::kAuto);
  EXPECT_NEAR(r.context_forward_wait[0], 2 * gather, 1e-15);
  const double scatter =
      cost.collective_time(CollectiveKind::kReduceScatter, {0, 1, 2, 3}, 65536, SyncScheme::kAuto);
  EXPECT_NEAR(r.context_backward_wait[0], 2 * (gather + scatter), 1e-15);
}

// Activations are per token: each CP rank keeps 1/cp of them, exactly as a data-parallel
// split would; parameters, gradients and optimizer state stay whole. So the peak falls by
// A/2 from cp 1 to cp 2, A/4 to cp 4 and A/8 to cp 8 (A: the activations at cp 1; a batch
// of 256 makes them the peak).
TEST(ContextParallel, ActivationMemoryIsDividedByCp) {
  const Graph g = small_llama(256);
  const Cluster cl = make_cluster(1, 8, link(0, 1e12), link(0, 1e12));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  auto peak = [&](int cp, int dp) {
    return double(sim.run(megatron_plan(g, grid(cp, dp, 256))).peak_memory[0]);
  };
  EXPECT_EQ(peak(2, 1), peak(1, 2));
  const double d12 = peak(1, 1) - peak(2, 1);  // A / 2: 78.8 MB of the 160.6 MB at cp 1
  const double d24 = peak(2, 1) - peak(4, 1);
  const double d48 = peak(4, 1) - peak(8, 1);
  EXPECT_GT(d48, 0);
  EXPECT_NEAR(d12, 2 * d24, 1e-3 * d12);
  EXPECT_NEAR(d24, 2 * d48, 1e-3 * d24);
}

// Megatron's rank order: tp fastest, then cp, then dp, then pp; the plan reads back as the
// configuration.
TEST(ContextParallel, MegatronGridOrderAndConfigurationRoundTrip) {
  const Graph g = small_llama();
  MegatronConfig m = grid(2, 2);
  m.tp = 2;
  m.pp = 2;
  m.micro_batch = 1;
  const Plan p = megatron_plan(g, m);
  ASSERT_EQ(p.pipeline.stages.size(), 2u);
  EXPECT_EQ(p.pipeline.stages[1].devices, (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(p.pipeline.stages[0].data_parallel(), 4);  // cp x dp copies per TP rank
  EXPECT_EQ(p.context_parallel.degree, 2);
  const MegatronConfig back = megatron_config_of(p, g);
  EXPECT_EQ(back.cp, 2);
  EXPECT_EQ(back.dp, 2);
  EXPECT_EQ(back.tp, 2);
  m.ep = 3;
  try {
    megatron_plan(g, m);
    FAIL() << "no error";
  } catch (const ValidationError& e) {
    EXPECT_STREQ(e.what(), "megatron: ep 3 does not divide cp x dp = 4");
  }
}

}  // namespace
}  // namespace placer
