// Long sequences at a fixed number of tokens per step: with fused attention the predicted
// step time grows exactly by the attention FLOPs; the unfused core's s x s traffic adds time
// beyond its FLOPs.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "datasets/gpt.h"
#include "sim_fixtures.h"
#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"

namespace placer {
namespace {

constexpr int64_t kTokens = 65536;  // tokens per step: batch = kTokens / seq
constexpr int kLayers = 2;
constexpr int64_t kHidden = 256, kHeads = 4;

Graph gpt_step(int64_t seq, AttentionImpl attention, DType dtype) {
  GptOptions o;
  o.layers = kLayers;
  o.hidden = kHidden;
  o.heads = kHeads;
  o.seq_len = seq;
  o.batch = kTokens / seq;
  o.vocab = 1000;
  o.dtype = dtype;
  o.dropout = 0;
  o.position_embeddings = false;  // its table (seq x h) would grow with the sequence
  o.attention = attention;
  return expand_training_step(make_gpt(o));
}

double step_time(const Graph& g, const Cluster& cl, const CostProfile& profile) {
  const CostModel cost(cl, profile);
  Simulator sim(g, cl, cost);
  return sim.run(testing::place(g, std::vector<int>(g.num_ops(), 0))).step_time;
}

// Forward + backward (2.5x) attention FLOPs of the step.
double step_attention_flops(int64_t seq) {
  AttentionShape a;
  a.batch = kTokens / seq, a.seq = seq, a.heads = kHeads, a.kv_heads = kHeads;
  a.head_dim = kHidden / kHeads;
  return 3.5 * kLayers * flash_attention_flops(a);
}

// One device of 1e12 FLOP/s (f32) and 1e10 B/s: 100 FLOPs per byte, as a GPU's balance.
Cluster balanced_device() {
  DeviceSpec s = testing::test_spec(1ull << 50);
  s.memory_bandwidth = 1e10;
  Cluster c;
  c.name = "one";
  c.add_host("host0", s, 1);
  c.set_link(LinkLevel::kIntraHost, testing::link(1e-6, 1e11));
  c.set_link(LinkLevel::kInterHost, testing::link(1e-6, 1e10));
  return c;
}

TEST(AttentionTrend, FlashGrowsByTheAttentionFlopsUnfusedBeyond) {
  const Cluster cl = balanced_device();
  const CostProfile uniform = uniform_profile(1.0);
  const double flash_2k =
      step_time(gpt_step(2048, AttentionImpl::kFlash, DType::kF32), cl, uniform);
  const double unfused_2k =
      step_time(gpt_step(2048, AttentionImpl::kUnfused, DType::kF32), cl, uniform);
  for (int64_t seq : {8192, 32768, 65536}) {
    const double flash = step_time(gpt_step(seq, AttentionImpl::kFlash, DType::kF32), cl, uniform);
    const double unfused =
        step_time(gpt_step(seq, AttentionImpl::kUnfused, DType::kF32), cl, uniform);
    // Everything else is the same work at the same tokens; the flash op is compute-bound.
    const double attention_growth = (step_attention_flops(seq) - step_attention_flops(2048)) / 1e12;
    EXPECT_NEAR(flash - flash_2k, attention_growth, 1e-9 * attention_growth) << seq;
    // The unfused core computes every pair (2x the causal FLOPs) and moves b a s^2 scores and
    // probabilities through memory: it grows several times faster.
    EXPECT_GT((unfused - unfused_2k) / (flash - flash_2k), 4.0) << seq;
  }
}

// Score times add each attention op's scores (batch x heads x s (s + 1) / 2 per layer, as
// many backward) to the step, exactly: the training step's backward ops keep the head dim.
TEST(AttentionTrend, ScoreTimesAddEveryScoreOfTheStep) {
  const Cluster cl = balanced_device();
  const CostProfile uniform = uniform_profile(1.0);
  CostProfile scored = uniform;
  scored.op(OpCategory::kAttention).score_time = 2e-13;
  scored.op(OpCategory::kAttention).backward_score_time = 5e-13;
  for (int64_t seq : {2048, 8192}) {
    const Graph g = gpt_step(seq, AttentionImpl::kFlash, DType::kF32);
    const double scores = double(kTokens / seq) * kHeads * seq * (seq + 1) / 2;
    const double added = kLayers * scores * (2e-13 + 5e-13);
    EXPECT_NEAR(step_time(g, cl, scored) - step_time(g, cl, uniform), added, 1e-9 * added) << seq;
  }
}

// The same sweep on the shipped H100 profile and cluster (bf16; printed for
// docs/results.md): each doubling of the sequence costs flash about the same time per added
// attention FLOP (the attention curve's plateau and the per-score time), and the unfused
// core far more.
TEST(AttentionTrend, ShippedH100Profile) {
  const std::string dir = std::string(PLACER_SOURCE_DIR) + "/datasets/clusters/";
  const Cluster cl = load_cluster_yaml(dir + "h100_sxm_1gpu.cluster.yaml");
  const CostProfile h100 = load_cost_profile(dir + "h100.profile.yaml");
  std::vector<double> flash, unfused;
  for (int64_t seq : {2048, 4096, 8192, 16384, 32768, 65536}) {
    flash.push_back(step_time(gpt_step(seq, AttentionImpl::kFlash, DType::kBF16), cl, h100));
    unfused.push_back(step_time(gpt_step(seq, AttentionImpl::kUnfused, DType::kBF16), cl, h100));
    std::printf("seq %6lld: flash %9.3f ms, unfused %9.3f ms, attention %7.2f TFLOP\n",
                static_cast<long long>(seq), 1e3 * flash.back(), 1e3 * unfused.back(),
                step_attention_flops(seq) / 1e12);
  }
  const int64_t seqs[] = {2048, 4096, 8192, 16384, 32768, 65536};
  auto per_flop = [&](const std::vector<double>& t, size_t k) {
    return (t[k] - t[k - 1]) / (step_attention_flops(seqs[k]) - step_attention_flops(seqs[k - 1]));
  };
  const double last = per_flop(flash, 5);
  // The curve's plateau plus the scores' share: head dim 64 has 1 / 256 scores per forward
  // FLOP, and the step has 3.5x the forward FLOPs (one forward, one 2.5x backward).
  const OpCostProfile& att = h100.op(OpCategory::kAttention);
  const double per_score = (att.score_time + att.backward_score_time) / (3.5 * 4 * 64);
  EXPECT_NEAR(last, 1 / (989.4e12 * att.compute_for(DType::kBF16).at(1e13)) + per_score,
              0.05 * last);
  for (size_t k = 1; k < 6; ++k) {
    EXPECT_NEAR(per_flop(flash, k) / last, 1.0, 0.2) << seqs[k];
    EXPECT_GT(per_flop(unfused, k), 5 * per_flop(flash, k)) << seqs[k];
  }
}

}  // namespace
}  // namespace placer
