// rainbow-pp's pretraining defaults of the agent, torch-free: the train-policy config parser
// (agents/training/train_config.cpp) starts from them with or without LibTorch.
#include "agents/rainbow/rainbow_pp_policy.h"

namespace placer {

RainbowConfig RainbowPPTrainConfig::default_rainbow() {
  RainbowConfig r;
  r.hidden = {128, 64};
  r.atoms = 21;
  r.v_min = 0.0;
  r.v_max = 3.0;
  r.gamma = 1.0;  // forced anyway: the reward is terminal
  r.replay_capacity = 20000;
  r.batch_size = 64;
  r.lr = 1e-3;
  r.epsilon_decay_steps = 30000;
  r.beta_steps = 50000;
  r.learn_start = 500;
  return r;
}

}  // namespace placer
