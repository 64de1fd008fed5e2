// Rainbow DQN: C51 projection, action masking, noisy layers, learning a known optimum,
// checkpoint round trip.
#include "agents/common/rainbow_agent.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <torch/utils.h>

#include "models/rainbow_net.h"
#include "src/util/error.h"

namespace placer {
namespace {

class Rainbow : public ::testing::Test {
 protected:
  void SetUp() override { torch::set_num_threads(1); }
};

std::vector<float> row(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

void expect_row(const torch::Tensor& t, const std::vector<float>& expected, const char* what) {
  const std::vector<float> got = row(t);
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], 1e-6) << what << " atom " << i;
  }
}

TEST_F(Rainbow, ProjectionHandExample) {
  // 5 atoms on [-2, 2]: z = -2 -1 0 1 2, dz = 1.
  const torch::Tensor p = torch::tensor({0.1f, 0.2f, 0.3f, 0.25f, 0.15f});
  const torch::Tensor uniform = torch::full({5}, 0.2f);
  const torch::Tensor next = torch::stack({p, p, p, uniform});
  const torch::Tensor rewards = torch::tensor({1.0f, 0.3f, 5.0f, -1.0f});
  const torch::Tensor discounts = torch::tensor({0.5f, 0.0f, 0.5f, 1.0f});
  const torch::Tensor m = project_distribution(next, rewards, discounts, -2.0, 2.0);
  ASSERT_EQ(m.sizes(), (std::vector<int64_t>{4, 5}));
  // r + 0.5 z = 0, 0.5, 1, 1.5, 2: atom 2 gets 0.1 + 0.2/2, atom 3 0.2/2 + 0.3 + 0.25/2,
  // atom 4 0.25/2 + 0.15.
  expect_row(m[0], {0, 0, 0.2f, 0.525f, 0.275f}, "r=1 d=0.5");
  // Terminal: everything at 0.3, split 0.7 / 0.3 between atoms 0 and 1 (z = 0, 1).
  expect_row(m[1], {0, 0, 0.7f, 0.3f, 0}, "terminal r=0.3");
  // Beyond v_max: clamped, all mass on the last atom.
  expect_row(m[2], {0, 0, 0, 0, 1}, "clamped r=5");
  // z - 1 = -3 (clamped to -2), -2, -1, 0, 1.
  expect_row(m[3], {0.4f, 0.2f, 0.2f, 0.2f, 0}, "shift r=-1 d=1");
  EXPECT_THROW(project_distribution(next, rewards.slice(0, 0, 2), discounts, -2, 2), Error);
}

TEST_F(Rainbow, NoisyLinearNoiseOnlyInTrainingAndAfterReset) {
  torch::manual_seed(1);
  NoisyLinear layer(4, 3, 0.5);
  std::mt19937_64 rng(5);
  const torch::Tensor x = torch::randn({2, 4});
  torch::NoGradGuard no_grad;
  const torch::Tensor plain = torch::linear(x, layer->weight_mu, layer->bias_mu);
  EXPECT_TRUE(torch::allclose(layer->forward(x), plain));  // zero noise before any reset
  layer->reset_noise(rng);
  const torch::Tensor y1 = layer->forward(x);
  EXPECT_FALSE(torch::allclose(y1, plain, 1e-4, 1e-4));
  EXPECT_TRUE(torch::equal(layer->forward(x), y1));  // same noise until the next reset
  layer->reset_noise(rng);
  const torch::Tensor y2 = layer->forward(x);
  EXPECT_FALSE(torch::allclose(y1, y2, 1e-4, 1e-4));
  // Factorised: eps_w = f(eps_out) f(eps_in)^T has rank one; eps_b = f(eps_out).
  EXPECT_TRUE(
      torch::allclose(layer->weight_epsilon.select(1, 0),
                      layer->bias_epsilon * layer->weight_epsilon[0][0] / layer->bias_epsilon[0]));
  layer->eval();
  const torch::Tensor e1 = layer->forward(x);
  layer->reset_noise(rng);
  EXPECT_TRUE(torch::equal(layer->forward(x), e1));
  EXPECT_TRUE(torch::allclose(e1, plain));
  layer->train();
  layer->set_noise_enabled(false);
  EXPECT_TRUE(torch::allclose(layer->forward(x), plain));
  // sigma = sigma0 / sqrt(in) = 0.25.
  EXPECT_FLOAT_EQ(layer->weight_sigma[0][0].item<float>(), 0.25f);
}

TEST_F(Rainbow, NetOutputsDistributions) {
  for (bool dueling : {true, false}) {
    for (bool noisy : {true, false}) {
      torch::manual_seed(2);
      RainbowNet net(
          RainbowNetOptions(6, 4).hidden({16, 8}).atoms(11).v_min(-3).v_max(5).noisy(noisy).dueling(
              dueling));
      std::mt19937_64 rng(3);
      net->reset_noise(rng);
      torch::NoGradGuard no_grad;
      const torch::Tensor x = torch::randn({3, 6});
      const torch::Tensor log_p = net->forward(x);
      ASSERT_EQ(log_p.sizes(), (std::vector<int64_t>{3, 4, 11}));
      EXPECT_TRUE(torch::allclose(log_p.exp().sum(2), torch::ones({3, 4})));
      const torch::Tensor q = net->q_values(x);
      ASSERT_EQ(q.sizes(), (std::vector<int64_t>{3, 4}));
      EXPECT_TRUE(torch::allclose(q, (log_p.exp() * torch::linspace(-3, 5, 11)).sum(2)));
      EXPECT_EQ(net->forward(x[0]).sizes(), (std::vector<int64_t>{4, 11}));
    }
  }
  EXPECT_THROW(RainbowNet(RainbowNetOptions(6, 4).hidden({})), ValidationError);
  EXPECT_THROW(RainbowNet(RainbowNetOptions(6, 4).v_min(1).v_max(1)), ValidationError);
}

TEST_F(Rainbow, MaskedActionsNeverChosen) {
  for (bool noisy : {false, true}) {
    RainbowConfig config;
    config.hidden = {16};
    config.noisy = noisy;
    config.epsilon_decay_steps = 1000000;  // epsilon stays near 1: mostly random picks
    config.seed = 4;
    RainbowAgent agent(3, 6, config);
    std::mt19937_64 rng(9);
    std::normal_distribution<float> normal;
    std::bernoulli_distribution coin(0.4);
    int random_seen = 0;
    for (int k = 0; k < 1500; ++k) {
      std::vector<float> s{normal(rng), normal(rng), normal(rng)};
      std::vector<uint8_t> mask(6);
      for (auto& m : mask) m = coin(rng) ? 1 : 0;
      mask[static_cast<std::size_t>(k % 6)] = 1;  // at least one allowed
      const bool greedy = k % 2 == 0;
      const int a = agent.act(s, mask, greedy);
      ASSERT_GE(a, 0);
      ASSERT_LT(a, 6);
      ASSERT_TRUE(mask[static_cast<std::size_t>(a)]) << "masked action " << a << " chosen";
      if (greedy) {  // argmax over the allowed actions only
        const std::vector<float> q = agent.q_values(s);
        for (int b = 0; b < 6; ++b) {
          if (mask[static_cast<std::size_t>(b)]) {
            ASSERT_LE(q[static_cast<std::size_t>(b)], q[static_cast<std::size_t>(a)]);
          }
        }
      } else if (a != agent.act(s, mask, true)) {
        ++random_seen;
      }
    }
    if (!noisy) {
      EXPECT_GT(random_seen, 100);  // the epsilon branch was exercised
    }
  }
  RainbowAgent agent(2, 3);
  EXPECT_THROW(agent.act({0, 0}, {0, 0, 0}, true), ValidationError);
  EXPECT_THROW(agent.act({0, 0}, {1, 1}, true), ValidationError);
}

// Chain of 5 states 0..4 (one-hot); action 0 = left, 1 = right; "right" from state 3 reaches
// the terminal state 4 with reward 1, everything else pays 0. "left" is masked in state 0.
// Optimal: always right.
struct Chain {
  int pos = 0;
  static std::vector<float> obs(int p) {
    std::vector<float> o(5, 0.0f);
    o[static_cast<std::size_t>(p)] = 1.0f;
    return o;
  }
  static std::vector<uint8_t> mask(int p) {
    return p == 0 ? std::vector<uint8_t>{0, 1} : std::vector<uint8_t>{1, 1};
  }
};

RainbowConfig chain_config(bool noisy) {
  RainbowConfig c;
  c.hidden = {32};
  c.v_min = -1;
  c.v_max = 1;
  c.batch_size = 32;
  c.gamma = 0.9;
  c.n_step = 3;
  c.target_update = 50;
  c.epsilon_decay_steps = 600;
  c.noisy = noisy;
  c.seed = 17;
  return c;
}

/// Trains on the chain for `steps` environment steps, one learn() per step.
void train_chain(RainbowAgent& agent, int steps) {
  Chain env;
  int t = 0;
  for (int k = 0; k < steps; ++k) {
    const std::vector<float> s = Chain::obs(env.pos);
    const std::vector<uint8_t> m = Chain::mask(env.pos);
    const int a = agent.act(s, m, false);
    const int next = a == 1 ? env.pos + 1 : std::max(env.pos - 1, 0);
    const bool done = next == 4;
    const float r = done ? 1.0f : 0.0f;
    agent.observe(s, a, r, Chain::obs(next), done, m, Chain::mask(next));
    agent.learn();
    env.pos = next;
    ++t;
    if (done || t == 20) {
      if (!done) agent.end_episode();
      env.pos = 0;
      t = 0;
    }
  }
}

TEST_F(Rainbow, SolvesChainEpsilonGreedy) {
  RainbowAgent agent(5, 2, chain_config(false));
  train_chain(agent, 1500);
  EXPECT_GT(agent.updates(), 1000);
  for (int p = 0; p < 4; ++p) {
    EXPECT_EQ(agent.act(Chain::obs(p), Chain::mask(p), true), 1) << "state " << p;
  }
  // Q(3, right) ~ 1 and Q(s, right) ~ 0.9^(3-s): the values, not only the order.
  const std::vector<float> q3 = agent.q_values(Chain::obs(3));
  const std::vector<float> q1 = agent.q_values(Chain::obs(1));
  EXPECT_NEAR(q3[1], 1.0, 0.15);
  EXPECT_NEAR(q1[1], 0.81, 0.15);
}

TEST_F(Rainbow, SolvesChainNoisyNoDouble) {
  RainbowConfig c = chain_config(true);
  c.double_q = false;
  c.dueling = false;
  RainbowAgent agent(5, 2, c);
  EXPECT_EQ(agent.epsilon(), 0.0);
  train_chain(agent, 1500);
  for (int p = 0; p < 4; ++p) {
    EXPECT_EQ(agent.act(Chain::obs(p), Chain::mask(p), true), 1) << "state " << p;
  }
}

// The target must ignore actions masked in the next state: in B action 0 pays 1 (when
// allowed) and action 1 pays 0; A leads to B with action 0 masked, so Q(A) must approach
// gamma * Q(B, 1) = 0, not gamma * Q(B, 0) = 0.9.
TEST_F(Rainbow, TargetRespectsNextMask) {
  for (bool double_q : {true, false}) {
    RainbowConfig c;
    c.hidden = {16};
    c.v_min = -1;
    c.v_max = 1;
    c.batch_size = 32;
    c.gamma = 0.9;
    c.n_step = 1;
    c.target_update = 20;
    c.double_q = double_q;
    c.seed = 5;
    RainbowAgent agent(2, 2, c);
    const std::vector<float> a_state{1, 0}, b_state{0, 1};
    for (int k = 0; k < 40; ++k) {
      agent.observe(b_state, 0, 1.0f, b_state, true, {1, 1}, {1, 1});
      agent.observe(b_state, 1, 0.0f, b_state, true, {1, 1}, {1, 1});
      agent.observe(a_state, 0, 0.0f, b_state, false, {1, 0}, {0, 1});
    }
    for (int k = 0; k < 400; ++k) agent.learn();
    const std::vector<float> qa = agent.q_values(a_state), qb = agent.q_values(b_state);
    EXPECT_GT(qb[0], 0.8) << "double_q " << double_q;
    EXPECT_LT(qb[1], 0.2) << "double_q " << double_q;
    EXPECT_NEAR(qa[0], 0.0, 0.2) << "double_q " << double_q;
  }
}

TEST_F(Rainbow, SaveLoadRoundTrip) {
  const std::string dir = std::string(PLACER_BINARY_DIR) + "/rainbow_test_tmp";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/agent.pt";
  RainbowConfig c = chain_config(true);
  RainbowAgent a(5, 2, c);
  train_chain(a, 200);
  a.save(path);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));

  c.seed = 99;  // different initial weights: the load must overwrite them
  RainbowAgent b(5, 2, c);
  EXPECT_NE(a.q_values(Chain::obs(2)), b.q_values(Chain::obs(2)));
  b.load(path);
  EXPECT_EQ(b.steps(), a.steps());
  EXPECT_EQ(b.updates(), a.updates());
  for (int p = 0; p < 5; ++p) EXPECT_EQ(a.q_values(Chain::obs(p)), b.q_values(Chain::obs(p)));
  {
    torch::NoGradGuard no_grad;
    a.target_net()->eval();
    b.target_net()->eval();
    const torch::Tensor x = torch::eye(5);
    EXPECT_TRUE(torch::equal(a.target_net()->q_values(x), b.target_net()->q_values(x)));
  }
  // Same RNG state: the same exploratory choices.
  for (int k = 0; k < 20; ++k) {
    EXPECT_EQ(a.act(Chain::obs(k % 4), Chain::mask(k % 4), false),
              b.act(Chain::obs(k % 4), Chain::mask(k % 4), false));
  }

  RainbowConfig other = chain_config(true);
  other.atoms = 21;
  RainbowAgent wrong(5, 2, other);
  EXPECT_THROW(wrong.load(path), FormatError);
  EXPECT_THROW(b.load(dir + "/missing.pt"), FileError);
  {
    std::ofstream junk(dir + "/junk.pt");
    junk << "not a checkpoint";
  }
  EXPECT_THROW(b.load(dir + "/junk.pt"), FormatError);
  std::filesystem::remove_all(dir);
}

TEST_F(Rainbow, ConfigValidation) {
  RainbowConfig c;
  c.n_step = 0;
  EXPECT_NE(validate_rainbow_config(c), "");
  EXPECT_THROW(RainbowAgent(3, 2, c), ValidationError);
  c = {};
  c.v_min = 5;
  c.v_max = -5;
  EXPECT_THROW(RainbowAgent(3, 2, c), ValidationError);
  EXPECT_EQ(validate_rainbow_config(RainbowConfig{}), "");
  EXPECT_THROW(RainbowAgent(0, 2), ValidationError);
}

TEST_F(Rainbow, EpsilonDecaysLinearly) {
  RainbowConfig c;
  c.epsilon_decay_steps = 10;
  RainbowAgent agent(1, 2, c);
  EXPECT_DOUBLE_EQ(agent.epsilon(), 1.0);
  for (int k = 0; k < 5; ++k) agent.observe({0}, 0, 0, {0}, false, {1, 1}, {1, 1});
  EXPECT_NEAR(agent.epsilon(), 0.55, 1e-12);
  for (int k = 0; k < 10; ++k) agent.observe({0}, 0, 0, {0}, false, {1, 1}, {1, 1});
  EXPECT_DOUBLE_EQ(agent.epsilon(), 0.1);
  EXPECT_EQ(agent.replay().size(), 13u);  // 15 steps, 2 pending in the 3-step window
  EXPECT_FALSE(agent.learn().updated);    // fewer than batch_size (64)
}

}  // namespace
}  // namespace placer
