// GDP network: observation tensors, output shape and masking, the per-unit mean of node
// logits (against a hand computation), greedy / sampled actions and their log-probabilities.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include <torch/utils.h>

#include "agents/gdp/gdp_net.h"
#include "datasets/family_registry.h"
#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

namespace placer {
namespace {

GdpNetConfig small_config() {
  GdpNetConfig c;
  c.hidden = 16;
  c.sage_layers = 2;
  c.op_embedding = 4;
  c.txl_layers = 2;
  c.heads = 2;
  c.ffn = 32;
  c.segment = 8;  // several segments with memory on the test graph
  c.mem_len = 8;
  c.max_devices = 8;
  return c;
}

Graph mlp_step() {
  MlpOptions o;
  o.layers = 3;
  o.hidden = 256;
  o.input = 128;
  o.classes = 10;
  return expand_training_step(make_mlp(o));
}

Cluster dgx1() {
  return load_cluster_yaml(PLACER_SOURCE_DIR "/datasets/clusters/dgx1_p100.cluster.yaml");
}

/// An env on devices {1, 3, 4} of a DGX-1 (non-contiguous mask).
struct Fixture {
  Graph graph = mlp_step();
  Cluster cluster = dgx1();
  CostModel cost{cluster, default_profile()};
  std::unique_ptr<PlacementEnv> env;
  explicit Fixture(bool colocate = true) {
    PlacementEnvOptions o;
    o.devices = {1, 3, 4};
    o.colocate = colocate;
    env = std::make_unique<PlacementEnv>(graph, cluster, cost, o);
  }
};

std::vector<float> to_vec(const torch::Tensor& t) {
  auto c = t.detach().contiguous().to(torch::kFloat);
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

TEST(GdpNetTest, TensorsMatchTheObservation) {
  Fixture f;
  const PlacementEnv& env = *f.env;
  const GraphTensors t = to_tensors(env);
  const NodeFeatures& obs = env.observation();
  const int64_t n = obs.num_nodes, u = env.num_units();
  ASSERT_GT(u, 1);
  ASSERT_LT(u, n);  // colocation merges backward ops into their forward op's unit
  EXPECT_EQ(t.x.sizes(), (std::vector<int64_t>{n, feat::kDim}));
  EXPECT_EQ(t.num_units, u);
  EXPECT_EQ(t.mask.sizes(), (std::vector<int64_t>{u, 8}));
  EXPECT_EQ(t.order.numel(), n);
  EXPECT_EQ(t.in_off.numel(), n + 1);
  EXPECT_EQ(t.x[3][feat::kDepth].item<float>(), obs.at(3, feat::kDepth));
  EXPECT_EQ(t.order[0].item<int64_t>(), int64_t(obs.order[0]));
  // Unit counts add up to the ops, and match a count over unit_of_op.
  EXPECT_EQ(t.unit_count.sum().item<float>(), float(n));
  std::vector<float> count(size_t(u), 0.f);
  for (int k : env.unit_of_op()) count[size_t(k)] += 1;
  EXPECT_EQ(to_vec(t.unit_count), count);
  // Mask: exactly devices 1, 3, 4 on every unit.
  for (int64_t k = 0; k < u; ++k) {
    for (int d = 0; d < 8; ++d) {
      ASSERT_EQ(t.mask[k][d].item<bool>(), d == 1 || d == 3 || d == 4);
    }
  }
  // Condition: column means, log1p(N) / 10, 3 of 8 devices.
  ASSERT_EQ(t.cond.numel(), kGdpCondDim);
  double mean_flops = 0;
  for (int64_t i = 0; i < n; ++i) mean_flops += obs.at(int(i), feat::kLogFlops);
  EXPECT_NEAR(t.cond[feat::kLogFlops].item<float>(), mean_flops / double(n), 1e-5);
  EXPECT_FLOAT_EQ(t.cond[feat::kDim].item<float>(), float(std::log1p(double(n)) / 10));
  EXPECT_FLOAT_EQ(t.cond[feat::kDim + 1].item<float>(), 3.f / 8.f);
}

TEST(GdpNetTest, UnitLogitsAreTheMaskedMeanOfNodeLogits) {
  torch::set_num_threads(1);
  Fixture f;
  const GraphTensors t = to_tensors(*f.env);
  GdpPolicy policy(small_config(), 5);
  GdpNet& net = policy.impl().net;
  torch::NoGradGuard no_grad;
  const auto logits = net->forward(t);
  const int64_t u = t.num_units;
  ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{u, 8}));

  // By hand: encoder, superposition, Transformer-XL over the topological order, each row
  // put back at its node, device projection, then the mean over each unit's ops in C++.
  auto h = net->sage->forward(t.x, t.op_type, t.in_off, t.in_idx, t.out_off, t.out_idx);
  h = (h + net->cond->forward(h, t.cond)) * std::sqrt(double(net->config.hidden));
  const auto order = f.env->observation().order;
  std::vector<torch::Tensor> rows;
  for (uint32_t v : order) rows.push_back(h[int64_t(v)]);
  const auto z_seq = net->txl->forward_sequence(torch::stack(rows)).out;
  auto z = torch::zeros_like(z_seq);
  for (size_t i = 0; i < order.size(); ++i) z[int64_t(order[i])] = z_seq[int64_t(i)];
  const auto node = net->head->proj->forward(z);
  const auto node_v = to_vec(node);
  std::vector<double> sum(size_t(u) * 8, 0.0);
  std::vector<int> count(size_t(u), 0);
  for (size_t i = 0; i < order.size(); ++i) {
    const int k = f.env->unit_of_op()[i];
    ++count[size_t(k)];
    for (int d = 0; d < 8; ++d) sum[size_t(k) * 8 + d] += node_v[i * 8 + d];
  }
  const auto got = to_vec(logits);
  for (int64_t k = 0; k < u; ++k) {
    for (int d = 0; d < 8; ++d) {
      const float g = got[size_t(k) * 8 + d];
      if (d == 1 || d == 3 || d == 4) {
        ASSERT_NEAR(g, sum[size_t(k) * 8 + d] / count[size_t(k)], 1e-5) << k << " " << d;
      } else {
        ASSERT_EQ(g, -std::numeric_limits<float>::infinity());
      }
    }
  }
}

TEST(GdpNetTest, ActionsNeverUseMaskedDevices) {
  Fixture f;
  const GraphTensors t = to_tensors(*f.env);
  GdpPolicy policy(small_config(), 9);
  torch::NoGradGuard no_grad;
  const auto logits = policy.impl().net->forward(t);
  const auto probs = torch::softmax(logits, -1);
  EXPECT_EQ(probs.index_select(1, torch::tensor({0, 2, 5, 6, 7})).abs().sum().item<float>(), 0.f);
  const auto allowed = [](int d) { return d == 1 || d == 3 || d == 4; };
  for (int d : greedy_action(logits)) ASSERT_TRUE(allowed(d)) << d;
  std::mt19937_64 rng(1);
  for (int rep = 0; rep < 20; ++rep) {
    const auto a = sample_action(probs, rng);
    ASSERT_EQ(a.size(), size_t(t.num_units));
    for (int d : a) ASSERT_TRUE(allowed(d)) << d;
    EXPECT_NO_THROW(f.env->step(a));
  }
}

TEST(GdpNetTest, GreedyTakesTheArgmaxLowestOnTies) {
  const float ninf = -std::numeric_limits<float>::infinity();
  const auto logits = torch::tensor({1.f, 1.f, 0.f, ninf, 0.5f, 2.f, ninf, 0.f, -3.f}).view({3, 3});
  EXPECT_EQ(greedy_action(logits), (std::vector<int>{0, 2, 1}));
}

TEST(GdpNetTest, SamplingIsSeededAndMatchesTheProbabilities) {
  const int64_t u = 4000;
  const auto probs = torch::tensor({0.25f, 0.75f}).repeat({u, 1});
  std::mt19937_64 a(77), b(77), c(78);
  const auto first = sample_action(probs, a);
  EXPECT_EQ(first, sample_action(probs, b));
  EXPECT_NE(first, sample_action(probs, c));
  int ones = 0;
  for (int d : first) ones += d;
  EXPECT_NEAR(double(ones) / double(u), 0.75, 0.03);

  // Zero-probability devices are never drawn; a one-hot row always gives its device.
  const auto sparse = torch::tensor({0.f, 0.5f, 0.f, 0.5f, 0.f, 0.f, 1.f, 0.f}).view({2, 4});
  std::mt19937_64 rng(3);
  int hits[4] = {0, 0, 0, 0};
  for (int rep = 0; rep < 1000; ++rep) {
    const auto s = sample_action(sparse, rng);
    ++hits[s[0]];
    ASSERT_EQ(s[1], 2);
  }
  EXPECT_EQ(hits[0] + hits[2], 0);
  EXPECT_GT(hits[1], 400);
  EXPECT_GT(hits[3], 400);
}

TEST(GdpNetTest, LogProbsAreFiniteWithFiniteGradients) {
  Fixture f;
  const GraphTensors t = to_tensors(*f.env);
  GdpPolicy policy(small_config(), 11);
  GdpNet& net = policy.impl().net;
  const auto logits = net->forward(t);
  const auto action = greedy_action(logits);
  const auto logp = action_log_probs(logits, action);
  ASSERT_EQ(logp.numel(), t.num_units);
  // Equals log softmax over the three allowed devices.
  const auto l = to_vec(logits);
  const auto lp = to_vec(logp);
  for (int64_t k = 0; k < t.num_units; ++k) {
    const float* row = l.data() + k * 8;
    const double norm =
        std::log(std::exp(double(row[1])) + std::exp(double(row[3])) + std::exp(double(row[4])));
    ASSERT_NEAR(lp[size_t(k)], row[action[size_t(k)]] - norm, 1e-5);
  }
  logp.sum().backward();
  int64_t with_grad = 0;
  for (const auto& p : net->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    ASSERT_TRUE(torch::isfinite(p.grad()).all().item<bool>());
    with_grad += p.grad().abs().sum().item<float>() > 0 ? 1 : 0;
  }
  EXPECT_GT(with_grad, 10);
  // A masked device cannot be an action.
  auto bad = action;
  bad[0] = 0;
  EXPECT_THROW(action_log_probs(logits, bad), Error);
  bad[0] = 8;
  EXPECT_THROW(action_log_probs(logits, bad), Error);
}

TEST(GdpNetTest, PerOpUnitsWithoutSuperposition) {
  Fixture f(/*colocate=*/false);
  const GraphTensors t = to_tensors(*f.env);
  EXPECT_EQ(t.num_units, t.x.size(0));
  auto cfg = small_config();
  cfg.superposition = false;
  cfg.op_embedding = 0;
  GdpPolicy policy(cfg, 2);
  EXPECT_FALSE(policy.impl().net->cond);
  torch::NoGradGuard no_grad;
  const auto logits = policy.impl().net->forward(t);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{t.num_units, 8}));
  EXPECT_TRUE(torch::isfinite(logits.index_select(1, torch::tensor({1, 3, 4}))).all().item<bool>());
}

TEST(GdpNetTest, MaskWidthMustMatchTheNetwork) {
  Fixture f;
  const GraphTensors t = to_tensors(*f.env);
  auto cfg = small_config();
  cfg.max_devices = 4;
  GdpPolicy policy(cfg, 1);
  EXPECT_THROW(policy.impl().net->forward(t), Error);
}

TEST(GdpNetTest, InvalidConfigsAreRejected) {
  auto cfg = small_config();
  cfg.heads = 3;  // 16 % 3 != 0
  try {
    GdpPolicy p(cfg, 1);
    FAIL() << "expected ValidationError";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("divisible by heads"), std::string::npos) << e.what();
  }
  cfg = small_config();
  cfg.max_devices = 65;
  EXPECT_THROW(GdpPolicy(cfg, 1), ValidationError);
  cfg = small_config();
  cfg.txl_layers = 0;
  EXPECT_THROW(GdpPolicy(cfg, 1), ValidationError);
  cfg = small_config();
  cfg.op_embedding = -1;
  EXPECT_THROW(GdpPolicy(cfg, 1), ValidationError);
  EXPECT_TRUE(gdp_available());
}

TEST(GdpNetTest, SameSeedSameNetwork) {
  torch::set_num_threads(1);
  Fixture f;
  const GraphTensors t = to_tensors(*f.env);
  GdpPolicy a(small_config(), 21), b(small_config(), 21), c(small_config(), 22);
  EXPECT_EQ(a.num_parameters(), b.num_parameters());
  EXPECT_GT(a.num_parameters(), 1000);
  torch::NoGradGuard no_grad;
  const auto la = a.impl().net->forward(t), lb = b.impl().net->forward(t);
  const auto lc = c.impl().net->forward(t);
  EXPECT_TRUE(torch::equal(la, lb));
  EXPECT_FALSE(torch::equal(la, lc));
}

// Default-size network on a ~6k-op training step (GNMT family): shape, finiteness, and the
// forward time printed for docs/gdp.md (no timing assertion).
TEST(GdpNetTest, ForwardOnALargeGraph) {
  const Graph g = expand_training_step(make_family_graph("gnmt", 5));  // 6363 ops
  const Cluster cluster = dgx1();
  CostModel cost(cluster, default_profile());
  PlacementEnv env(g, cluster, cost);
  const GraphTensors t = to_tensors(env);
  GdpPolicy policy(GdpNetConfig{}, 1);
  torch::NoGradGuard no_grad;
  const auto start = std::chrono::steady_clock::now();
  const auto logits = policy.impl().net->forward(t);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{env.num_units(), 8}));
  EXPECT_TRUE(torch::isfinite(logits).all().item<bool>());  // all 8 devices allowed
  std::printf(
      "GDP forward (default sizes, %lld params): %zu ops, %d units: %.1f ms "
      "(%d torch threads)\n",
      static_cast<long long>(policy.num_parameters()), g.num_ops(), env.num_units(), ms,
      torch::get_num_threads());
}

}  // namespace
}  // namespace placer
