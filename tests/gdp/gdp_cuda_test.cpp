// The GDP network and one PPO update on a GPU against the CPU: the same seed gives
// the same logits, loss and updated parameters up to float rounding. Skipped where LibTorch
// has no CUDA or no GPU is visible (this project's Debian LibTorch is CPU-only, so here it
// only compiles); bench/gdp_ppo_update.cpp makes the same comparison at full size.
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "agents/gdp/gdp_net.h"
#include "agents/gdp/gdp_train_impl.h"  // tensors_to, as the trainer moves the graph tensors
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/io/graph_json.h"

namespace placer {
namespace {

bool cuda_visible() { return at::hasCUDA() && at::getNumGPUs() > 0; }

TEST(GdpCudaTest, ForwardAndPpoUpdateMatchTheCpu) {
  if (!cuda_visible()) GTEST_SKIP() << "no CUDA in this LibTorch, or no GPU visible";
  // A shipped model's training step (several Transformer-XL segments with memory).
  const Graph g = expand_training_step(
      load_graph_json(PLACER_SOURCE_DIR "/datasets/models/transformer_small.graph.json"));
  const Cluster c =
      load_cluster_yaml(PLACER_SOURCE_DIR "/datasets/clusters/dgx1_p100.cluster.yaml");
  const CostModel cost(c, default_profile());
  PlacementEnvOptions eo;
  eo.devices = {0, 1, 2, 3};
  PlacementEnv env(g, c, cost, eo);
  const GraphTensors cpu_t = to_tensors(env);
  const torch::Device gpu(torch::kCUDA, 0);
  const GraphTensors gpu_t = gdp_train::tensors_to(cpu_t, gpu);

  GdpNetConfig cfg;  // the default sizes of train.yaml
  GdpPolicy a(cfg, 7), b(cfg, 7);
  GdpNet cpu_net = a.impl().net, gpu_net = b.impl().net;
  gpu_net->to(gpu);
  torch::optim::Adam cpu_adam(cpu_net->parameters(), torch::optim::AdamOptions(1e-3));
  torch::optim::Adam gpu_adam(gpu_net->parameters(), torch::optim::AdamOptions(1e-3));

  torch::Tensor cpu_logits, gpu_logits;
  {
    torch::NoGradGuard no_grad;
    cpu_logits = cpu_net->forward(cpu_t);
    gpu_logits = gpu_net->forward(gpu_t);
  }
  ASSERT_TRUE(gpu_logits.device().is_cuda());
  EXPECT_TRUE(torch::allclose(gpu_logits.cpu(), cpu_logits, 1e-4, 1e-4));

  // One PPO update on each device with the same batch (actions drawn from the CPU logits).
  std::mt19937_64 rng(1);
  PpoConfig ppo;
  std::vector<PpoEpisode> cpu_batch(1), gpu_batch(1);
  {
    torch::NoGradGuard no_grad;
    const auto probs = torch::softmax(cpu_logits, -1);
    std::vector<torch::Tensor> cpu_old, gpu_old;
    for (int k = 0; k < 4; ++k) {
      const std::vector<int> action = sample_action(probs, rng);
      cpu_batch[0].actions.push_back(action);
      gpu_batch[0].actions.push_back(action);
      cpu_old.push_back(action_log_probs(cpu_logits, action));
      gpu_old.push_back(action_log_probs(gpu_logits, action));
      const double r = env.step(action).reward;
      cpu_batch[0].rewards.push_back(r);
      gpu_batch[0].rewards.push_back(r);
    }
    cpu_batch[0].old_log_probs = torch::stack(cpu_old);
    gpu_batch[0].old_log_probs = torch::stack(gpu_old);
  }
  cpu_batch[0].tensors = &cpu_t;
  gpu_batch[0].tensors = &gpu_t;
  compute_advantages(cpu_batch, ppo, {});
  compute_advantages(gpu_batch, ppo, {});
  // One epoch: its loss and gradients are those of identical parameters on both devices
  // (after 3 Adam steps the parameters could differ by ~lr where a gradient is ~0).
  ppo.epochs = 1;
  const PpoStats cs = ppo_update(cpu_net, cpu_adam, cpu_batch, ppo);
  const PpoStats gs = ppo_update(gpu_net, gpu_adam, gpu_batch, ppo);
  EXPECT_NEAR(gs.loss, cs.loss, 1e-4);
  EXPECT_NEAR(gs.entropy, cs.entropy, 1e-4);
  const auto cp = cpu_net->parameters(), gp = gpu_net->parameters();
  ASSERT_EQ(cp.size(), gp.size());
  for (size_t i = 0; i < cp.size(); ++i) {
    EXPECT_TRUE(gp[i].device().is_cuda());
    ASSERT_EQ(gp[i].grad().defined(), cp[i].grad().defined()) << i;
    if (!cp[i].grad().defined()) continue;
    EXPECT_TRUE(torch::allclose(gp[i].grad().cpu(), cp[i].grad(), 1e-3, 1e-5)) << i;
  }
}

}  // namespace
}  // namespace placer
