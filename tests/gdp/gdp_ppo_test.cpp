// PPO for GDP: advantages by hand, the loss of one update by hand, and training a fresh
// network to a brute-force optimum (two independent chains on two devices).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include <torch/utils.h>

#include "agents/gdp/gdp_net.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "src/util/error.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer {
namespace {

PpoEpisode episode(std::vector<double> rewards) {
  PpoEpisode ep;
  ep.rewards = std::move(rewards);
  ep.actions.assign(ep.rewards.size(), std::vector<int>{0});
  return ep;
}

TEST(GdpPpoTest, LeaveOneOutMeanAdvantages) {
  PpoConfig ppo;
  ppo.normalize_advantages = false;
  std::vector<PpoEpisode> batch = {episode({1, 2, 3}), episode({-4, -2})};
  compute_advantages(batch, ppo, {});
  // Baselines: (2+3)/2, (1+3)/2, (1+2)/2 and -2, -4.
  EXPECT_EQ(batch[0].advantages, (std::vector<double>{-1.5, 0, 1.5}));
  EXPECT_EQ(batch[1].advantages, (std::vector<double>{-2, 2}));

  // Standardised over the whole batch: mean 0, population std sqrt((2*2.25 + 2*4) / 5).
  ppo.normalize_advantages = true;
  compute_advantages(batch, ppo, {});
  const double sd = std::sqrt((2 * 2.25 + 2 * 4.0) / 5.0);
  EXPECT_NEAR(batch[0].advantages[0], -1.5 / sd, 1e-12);
  EXPECT_NEAR(batch[0].advantages[1], 0, 1e-12);
  EXPECT_NEAR(batch[1].advantages[1], 2 / sd, 1e-12);
  // Equal rewards: all advantages 0, no division by zero.
  std::vector<PpoEpisode> flat = {episode({-1, -1, -1})};
  compute_advantages(flat, ppo, {});
  EXPECT_EQ(flat[0].advantages, (std::vector<double>{0, 0, 0}));
}

TEST(GdpPpoTest, EmaBaseline) {
  PpoConfig ppo;
  ppo.baseline = "ema";
  ppo.ema_decay = 0.9;
  ppo.normalize_advantages = false;
  double b = std::numeric_limits<double>::quiet_NaN();
  std::vector<PpoEpisode> batch = {episode({1, 2, 3})};
  compute_advantages(batch, ppo, {&b});
  // First use: baseline = the episode mean 2.
  EXPECT_EQ(batch[0].advantages, (std::vector<double>{-1, 0, 1}));
  EXPECT_DOUBLE_EQ(b, 2.0);
  batch = {episode({4, 4})};
  compute_advantages(batch, ppo, {&b});
  EXPECT_EQ(batch[0].advantages, (std::vector<double>{2, 2}));
  EXPECT_DOUBLE_EQ(b, 0.9 * 2 + 0.1 * 4);
  // Baseline "mean" with a single sample falls back to the moving average.
  ppo.baseline = "mean";
  batch = {episode({3})};
  compute_advantages(batch, ppo, {&b});
  EXPECT_DOUBLE_EQ(batch[0].advantages[0], 3 - 2.2);
  // Errors: unknown baseline, missing baselines for "ema".
  ppo.baseline = "median";
  EXPECT_THROW(compute_advantages(batch, ppo, {&b}), ValidationError);
  ppo.baseline = "ema";
  EXPECT_THROW(compute_advantages(batch, ppo, {}), ValidationError);
}

/// Two independent chains a0 -> a1 -> a2 and b0 -> b1 -> b2 of heavy ops with tiny
/// tensors; on two devices the optimum is one chain per device. The chains differ in FLOPs
/// (2e10 vs 3e10 per op) so that their ops' features differ.
Graph two_chains() {
  testing::TestGraph b("two_chains");
  for (const char* c : {"a", "b"}) {
    const double flops = c[0] == 'a' ? 2e10 : 3e10;
    std::vector<TensorId> in;  // empty for the chain's first op
    for (int i = 0; i < 3; ++i) {
      const std::string name = std::string(c) + std::to_string(i);
      const TensorId out = b.tensor(name + ".out", 4096);
      b.op(name, flops, in, {out});
      in = {out};
    }
  }
  return b.build();
}

/// Device 0 computes 1e12 FLOP/s, device 1 0.8e12 (one per host). With two identical
/// devices the device-swap symmetry makes every unit's expected policy gradient zero at the
/// uniform policy (one chain per device is a coordination problem, a saddle for a factorised
/// policy); the slower device breaks the tie: the heavy chain b belongs on device 0.
Cluster fast_and_slow() {
  Cluster c;
  c.name = "fast-and-slow";
  c.add_host("fast", testing::test_spec(), 1);
  DeviceSpec slow = testing::test_spec();
  slow.model = "slow-gpu";
  slow.peak_flops[static_cast<int>(DType::kF32)] = 0.8e12;
  c.add_host("slow", slow, 1);
  c.set_link(LinkLevel::kIntraHost, testing::link(1e-5, 1e10));
  c.set_link(LinkLevel::kInterHost, testing::link(1e-5, 1e10));
  return c;
}

struct ChainsProblem {
  Graph graph = two_chains();
  Cluster cluster = fast_and_slow();
  CostModel cost{cluster, default_profile()};
  std::unique_ptr<PlacementEnv> env;
  ChainsProblem() {
    PlacementEnvOptions o;
    o.colocate = false;
    o.max_devices = 4;  // devices 2 and 3 masked
    env = std::make_unique<PlacementEnv>(graph, cluster, cost, o);
  }
  /// Action from a device per op (units = ops here, possibly renumbered).
  std::vector<int> action(const std::vector<int>& device_of_op) const {
    std::vector<int> a(size_t(env->num_units()), 0);
    for (size_t i = 0; i < device_of_op.size(); ++i)
      a[size_t(env->unit_of_op()[i])] = device_of_op[i];
    return a;
  }
};

GdpNetConfig tiny_config() {
  GdpNetConfig c;
  c.hidden = 16;
  c.sage_layers = 1;
  c.op_embedding = 4;
  c.txl_layers = 1;
  c.heads = 2;
  c.ffn = 32;
  c.segment = 16;
  c.mem_len = 16;
  c.max_devices = 4;
  return c;
}

/// K samples of the current policy, rewarded by the env (old log-probs filled in).
PpoEpisode sample_episode(GdpNet& net, const GraphTensors& t, PlacementEnv& env, int k,
                          std::mt19937_64& rng) {
  PpoEpisode ep;
  ep.tensors = &t;
  torch::NoGradGuard no_grad;
  const auto logits = net->forward(t);
  const auto probs = torch::softmax(logits, -1);
  std::vector<torch::Tensor> old;
  for (int s = 0; s < k; ++s) {
    ep.actions.push_back(sample_action(probs, rng));
    ep.rewards.push_back(env.step(ep.actions.back()).reward);
    old.push_back(action_log_probs(logits, ep.actions.back()));
  }
  ep.old_log_probs = torch::stack(old);
  return ep;
}

TEST(GdpPpoTest, OneEpochLossMatchesTheHandFormula) {
  torch::set_num_threads(1);
  ChainsProblem prob;
  const GraphTensors t = to_tensors(*prob.env);
  GdpPolicy policy(tiny_config(), 4);
  GdpNet& net = policy.impl().net;
  std::mt19937_64 rng(8);
  std::vector<PpoEpisode> batch = {sample_episode(net, t, *prob.env, 6, rng),
                                   sample_episode(net, t, *prob.env, 4, rng)};
  PpoConfig ppo;
  ppo.epochs = 1;
  ppo.entropy = 0.05;
  compute_advantages(batch, ppo, {});

  // Expected: ratios are 1 before the step, so L = mean over episodes of
  // (-mean_k A_k - c * mean_u H_u), with H over the allowed devices (0 and 1).
  double want_loss = 0, want_entropy = 0;
  {
    torch::NoGradGuard no_grad;
    const auto p = torch::softmax(net->forward(t), -1);
    double h = 0;
    for (int64_t u = 0; u < t.num_units; ++u) {
      for (int d = 0; d < 2; ++d) {
        const double q = p[u][d].item<double>();
        h -= q * std::log(q);
      }
      EXPECT_EQ(p[u][2].item<float>() + p[u][3].item<float>(), 0.f);
    }
    h /= double(t.num_units);
    for (const auto& ep : batch) {
      double mean_a = 0;
      for (double a : ep.advantages) mean_a += a / double(ep.advantages.size());
      want_loss += (-mean_a - ppo.entropy * h) / 2.0;
    }
    want_entropy = h;
  }
  std::vector<torch::Tensor> before;
  for (const auto& p : net->parameters()) before.push_back(p.detach().clone());
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-2));
  const PpoStats stats = ppo_update(net, opt, batch, ppo);
  EXPECT_NEAR(stats.loss, want_loss, 1e-5);
  EXPECT_NEAR(stats.entropy, want_entropy, 1e-5);
  EXPECT_EQ(stats.approx_kl, 0.0);
  EXPECT_EQ(stats.clip_fraction, 0.0);
  // The step moved the parameters, and nothing became NaN.
  bool moved = false;
  size_t i = 0;
  for (const auto& p : net->parameters()) {
    ASSERT_TRUE(torch::isfinite(p).all().item<bool>());
    moved = moved || !torch::equal(p.detach(), before[i++]);
  }
  EXPECT_TRUE(moved);

  // More epochs: the later passes see ratios != 1 (KL and clipping become measurable).
  ppo.epochs = 4;
  ppo.clip = 0.01;
  const PpoStats more = ppo_update(net, opt, batch, ppo);
  EXPECT_GT(more.clip_fraction, 0.0);
  EXPECT_NE(more.approx_kl, 0.0);
  EXPECT_TRUE(std::isfinite(more.loss));
}

TEST(GdpPpoTest, LearnsTheKnownOptimumOfTwoChains) {
  torch::set_num_threads(1);
  ChainsProblem prob;
  PlacementEnv& env = *prob.env;
  ASSERT_EQ(env.num_units(), 6);

  // Brute force over all 2^6 placements on devices {0, 1}.
  double best = std::numeric_limits<double>::infinity();
  for (int bits = 0; bits < 64; ++bits) {
    std::vector<int> a(6);
    for (int u = 0; u < 6; ++u) a[size_t(u)] = (bits >> u) & 1;
    best = std::min(best, env.step(a).step_time);
  }
  // The hand-made optimum: the heavy chain b (ops 3-5) on the fast device 0, chain a
  // (ops 0-2) on device 1: 90 ms against 75 ms, vs 150 ms all on device 0 at the peak
  // FLOP rates (the default profile scales these; the ratios stay about the same).
  const double split = env.step(prob.action({1, 1, 1, 0, 0, 0})).step_time;
  const double single = env.step(prob.action({0, 0, 0, 0, 0, 0})).step_time;
  EXPECT_EQ(split, best);
  EXPECT_NEAR(split / single, 0.6, 0.01);
  EXPECT_GT(env.step(prob.action({0, 0, 0, 1, 1, 1})).step_time, best * 1.2);

  const GraphTensors t = to_tensors(env);
  GdpPolicy policy(tiny_config(), 1);
  GdpNet& net = policy.impl().net;
  auto greedy_time = [&] {
    torch::NoGradGuard no_grad;
    return env.step(greedy_action(net->forward(t))).step_time;
  };
  const double initial = greedy_time();
  EXPECT_GT(initial, best * 1.1);  // the untrained network is not already optimal

  PpoConfig ppo;
  // 32 samples and lr 3e-3: with the network and sampling seeds both set to s = 1..30,
  // 28 of 30 runs reached the optimum within 60 updates (median 8, max 40); the other two
  // settled in a local optimum of the factorised policy (chain a on the fast device, b0 and
  // b1 on the slow one), so one seed is fixed here rather than claiming every seed works.
  ppo.samples = 32;
  ppo.epochs = 3;
  ppo.entropy = 0.01;
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(3e-3));
  std::mt19937_64 rng(1);
  int reached = -1;
  double last = initial;
  for (int update = 1; update <= 60 && reached < 0; ++update) {
    std::vector<PpoEpisode> batch = {sample_episode(net, t, env, ppo.samples, rng)};
    compute_advantages(batch, ppo, {});
    ppo_update(net, opt, batch, ppo);
    last = greedy_time();
    if (last <= best * (1 + 1e-9)) reached = update;
  }
  std::printf(
      "two chains: single %.6f s, optimum %.6f s, untrained greedy %.6f s, "
      "greedy optimal after %d updates\n",
      single, best, initial, reached);
  EXPECT_GT(reached, 0) << "greedy step time after 60 updates: " << last << " vs " << best;
}

}  // namespace
}  // namespace placer
