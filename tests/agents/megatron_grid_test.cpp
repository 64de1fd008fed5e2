// The `megatron` method: its plan is the brute-force optimum of the Megatron grid on a small
// GPT, memory pruning leaves only configurations that fit, the budget in simulator runs is
// kept, the default budget finishes the grid whatever the time limit, and graphs that are not
// layered transformers get a clear error.

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "agents/classical/megatron_grid.h"
#include "datasets/gpt.h"
#include "datasets/synthetic.h"
#include "long_llama.h"
#include "one_host_cluster.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/plan/megatron_plan.h"
#include "src/util/error.h"

namespace placer {
namespace {

Graph small_gpt() {
  GptOptions o;
  o.layers = 4, o.hidden = 256, o.heads = 8, o.seq_len = 128, o.batch = 8, o.vocab = 1000;
  return expand_training_step(make_gpt(o));
}

struct Fixture {
  explicit Fixture(uint64_t memory, Graph graph = small_gpt(), int devices = 4)
      : g(std::move(graph)),
        c(testing::one_host_cluster(
            devices, memory, LinkSpec{"nvlink", 5e-6, 100e9, LinkSharing::kPerPair}, 100e12)),
        cost(c, uniform_profile(0.5)),
        sim(g, c, cost) {}
  Problem problem() { return Problem{g, c, cost, sim, {}}; }
  Graph g;
  Cluster c;
  CostModel cost;
  Simulator sim;
};

TEST(MegatronGrid, ShapeOfAGeneratedGpt) {
  const TransformerShape s = transformer_shape(small_gpt());
  EXPECT_EQ(s.layers, 4);
  EXPECT_EQ(s.heads, 8);
  EXPECT_EQ(s.global_batch, 8);
}

TEST(MegatronGrid, ShapeOfAFlashAttentionGraph) {
  // One FlashAttention op per layer instead of the scores: the heads come from its
  // logsumexp [batch, heads, seq] (12, not the 96 GPT query rows or the 128 positions).
  GptOptions o;
  o.layers = 3, o.hidden = 384, o.heads = 12, o.seq_len = 128, o.batch = 8, o.vocab = 1000;
  o.attention = AttentionImpl::kFlash;
  const TransformerShape s = transformer_shape(expand_training_step(make_gpt(o)));
  EXPECT_EQ(s.layers, 3);
  EXPECT_EQ(s.heads, 12);
  LlamaOptions l;
  l.layers = 2, l.hidden = 256, l.heads = 8, l.kv_heads = 2, l.seq_len = 64, l.batch = 4;
  l.vocab = 512;
  EXPECT_EQ(transformer_shape(expand_training_step(make_llama(l))).heads, 8);
}

TEST(MegatronGrid, FindsTheBruteForceOptimum) {
  Fixture f(64ull << 30);  // everything fits
  // Brute force over the grid without recomputation (it only adds work when all fits).
  double best = std::numeric_limits<double>::infinity();
  int configs = 0;
  for (int tp : {1, 2, 4}) {
    for (int pp : {1, 2, 4}) {
      if (tp * pp > 4) continue;
      const int dp = 4 / (tp * pp);
      for (int mb = 1; mb <= 8 / dp; ++mb) {
        if ((8 / dp) % mb != 0) continue;
        for (int v : {1, 2, 4}) {
          const int M = 8 / (dp * mb);
          if (v > 1 && (pp == 1 || M % pp != 0 || (4 / pp) % v != 0)) continue;
          for (bool sp : {false, true}) {
            for (int zero : {0, 1}) {
              if ((sp && tp == 1) || (zero && dp == 1)) continue;
              MegatronConfig m;
              m.tp = tp, m.pp = pp, m.dp = dp, m.micro_batch = mb, m.global_batch = 8;
              m.virtual_stages = v, m.sequence_parallel = sp, m.zero_stage = zero;
              const SimResult r = f.sim.run(megatron_plan(f.g, m));
              ASSERT_FALSE(r.oom);
              best = std::min(best, r.step_time);
              ++configs;
            }
          }
        }
      }
    }
  }
  MegatronGridPlacer placer;
  Problem p = f.problem();
  SearchBudget budget;
  budget.max_seconds = 600;
  const SearchOutcome outcome = placer.search_outcome(p, budget);
  const Plan& plan = outcome.plan;
  EXPECT_EQ(plan.method, "megatron");
  EXPECT_EQ(outcome.stats.value("enumerated"), configs);
  EXPECT_EQ(outcome.stats.value("simulated"), configs);
  EXPECT_DOUBLE_EQ(f.sim.run(plan).step_time, best);
}

TEST(MegatronGrid, MemoryPruningKeepsOnlyPlansThatFit) {
  Fixture roomy(64ull << 30);
  Problem pr = roomy.problem();
  const MegatronGrid all = megatron_grid(pr);
  // A device that holds about a third of the plain data-parallel plan's peak.
  MegatronConfig plain;
  plain.dp = 4, plain.micro_batch = 2, plain.global_batch = 8;
  const SimResult dp_run = roomy.sim.run(megatron_plan(roomy.g, plain));
  Fixture tight(dp_run.peak_memory[0] / 3);
  Problem pt = tight.problem();
  const MegatronGrid kept = megatron_grid(pt);
  EXPECT_LT(kept.fitting.size(), all.fitting.size());
  ASSERT_FALSE(kept.fitting.empty());
  MegatronGridPlacer placer;
  const Plan plan = placer.search(pt, SearchBudget{});
  EXPECT_FALSE(tight.sim.run(plan).oom);
  for (const MegatronCandidate& c : kept.fitting) {
    EXPECT_LE(c.memory_bytes, double(tight.c.device(0).spec.memory_bytes));
  }
}

TEST(MegatronGrid, KeepsTheRunBudget) {
  Fixture f(64ull << 30);
  MegatronGridPlacer placer;
  Problem p = f.problem();
  SearchBudget budget;
  budget.max_evaluations = 3;
  const SearchOutcome outcome = placer.search_outcome(p, budget);
  EXPECT_EQ(outcome.stats.value("simulated"), 3);
  EXPECT_GT(outcome.stats.value("fitting"), 3);
}

// The default budget (simulator runs, no time limit) finishes a grid of known size: a 1.3B
// GPT (24 layers, 16 heads, global batch 8) on 8 GPUs with room for every configuration.
// Per (tp, pp): (micro-batch, virtual stages) pairs x memory savers (plain, SP when tp > 1,
// ZeRO-1 when dp > 1, both; no recomputation since the plain one fits):
//   tp 1: pp 1: 1 x 2, pp 2: 5 x 2, pp 4: 5 x 2, pp 8: 5 x 1 = 27
//   tp 2: pp 1: 2 x 4, pp 2: 9 x 4, pp 4: 8 x 2             = 60
//   tp 4: pp 1: 3 x 4, pp 2: 13 x 2                         = 38
//   tp 8: pp 1: 4 x 2                                       =  8
// 133 in all. A generous time limit simulates the same grid and returns the same plan.
TEST(MegatronGrid, DefaultBudgetFinishesTheGridWhateverTheTimeLimit) {
  Fixture f(1ull << 40, expand_training_step(make_gpt(GptOptions{})), 8);
  Problem p = f.problem();
  MegatronGridPlacer placer;
  const SearchOutcome by_default = placer.search_outcome(p, SearchBudget{});
  EXPECT_EQ(by_default.stats.value("enumerated"), 133);
  EXPECT_EQ(by_default.stats.value("fitting"), 133);
  EXPECT_EQ(by_default.stats.value("simulated"), 133);
  SearchBudget generous;
  generous.max_seconds = 3600;
  const SearchOutcome timed = placer.search_outcome(p, generous);
  EXPECT_EQ(timed.stats.value("simulated"), 133);
  EXPECT_EQ(timed.stats.value("best_index"), by_default.stats.value("best_index"));
  EXPECT_EQ(f.sim.run(timed.plan).step_time, f.sim.run(by_default.plan).step_time);
}

using testing::long_llama;

TEST(MegatronGrid, ShapeOfAFusedAttentionLlama) {
  const TransformerShape s = transformer_shape(long_llama());
  EXPECT_EQ(s.layers, 2);
  EXPECT_EQ(s.heads, 2);
  EXPECT_EQ(s.seq, 4096);
  EXPECT_TRUE(s.fused_attention);
  EXPECT_EQ(s.experts, 0);
  EXPECT_FALSE(transformer_shape(small_gpt()).fused_attention);  // no CP for unfused attention
}

// The grid holds cp 2 and 4; on a device between the smallest estimate with and without
// context parallelism the search returns a context-parallel plan that fits.
TEST(MegatronGrid, ContextParallelismWhenOnlyItFits) {
  Fixture roomy(1ull << 40, long_llama(), 4);
  Problem pr = roomy.problem();
  const MegatronGrid all = megatron_grid(pr);
  double with_cp = std::numeric_limits<double>::infinity(), without = with_cp;
  int cp4 = 0;
  for (const MegatronCandidate& c : all.fitting) {
    double& m = c.config.cp > 1 ? with_cp : without;
    m = std::min(m, c.memory_bytes);
    cp4 += c.config.cp == 4;
  }
  EXPECT_GT(cp4, 0);
  ASSERT_LT(with_cp, without);
  Fixture tight(uint64_t((with_cp + without) / 2), long_llama(), 4);
  Problem pt = tight.problem();
  const SearchOutcome out = MegatronGridPlacer().search_outcome(pt, SearchBudget{});
  EXPECT_GT(out.plan.context_parallel.degree, 1);
  EXPECT_EQ(out.stats.value("cp"), out.plan.context_parallel.degree);
  EXPECT_FALSE(tight.sim.run(out.plan).oom);
}

TEST(MegatronGrid, RefusesAGraphThatIsNotATransformer) {
  ChainOptions o;
  o.per_op_flops = {1e9, 1e9};
  Fixture f(64ull << 30, expand_training_step(make_chain(o)));
  Problem p = f.problem();
  try {
    MegatronGridPlacer().search(p, SearchBudget{});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("megatron: graph 'chain' is not a layered transformer"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace placer
