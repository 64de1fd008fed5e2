#pragma once
// The episode loop of Auto-MAP's pipeline-cut search, shared by rainbow-pp
// (agents/rainbow/rainbow_pp.cpp) and rainbow-3d (agents/rainbow/rainbow_3d.cpp): a Rainbow DQN picks the cuts
// of a PipelineEnv (built with simulate = false) and the caller scores each terminal cut set.
// Needs LibTorch (RainbowAgent).

#include <cstdint>
#include <functional>
#include <vector>

#include "agents/common/rainbow_agent.h"
#include "agents/rainbow/rainbow_pp.h"
#include "env/pipeline_env.h"

namespace placer {

/// The agent settings of the cut search: batch, replay, target sync, lr and widths from
/// `options`, gamma 1, n-step = stages - 1 (one episode), epsilon 1 -> 0.1 over
/// epsilon_decay_fraction of `episodes` x (stages - 1) steps, C51 support [-1.5, 3] (rewards
/// are reference / step time, about 1; OOM -1), seed `seed`. ValidationError (prefixed
/// `method`) on a bad setting.
RainbowConfig rainbow_cut_agent_config(const RainbowPPOptions& options, int stages,
                                       int64_t episodes, uint64_t seed, const std::string& method);

/// A cut set's score and whether it cost a simulation (false: a cache hit).
struct CutScore {
  PipelineStepResult result;
  bool fresh = false;
};

/// Runs epsilon-greedy episodes on `env` (observe and learn after every step) until
/// `evaluations` fresh cut sets were scored, `max_episodes` episodes ran, or `stop()` says so
/// (checked before each episode). `score(cuts)` scores a terminal cut set; `after_episode`
/// (may be empty) runs after each episode. Returns the fresh evaluations.
int64_t run_cut_episodes(PipelineEnv* env, RainbowAgent* agent, int64_t evaluations,
                         int64_t max_episodes,
                         const std::function<CutScore(const std::vector<int>&)>& score,
                         const std::function<bool()>& stop,
                         const std::function<void(int64_t fresh)>& after_episode);

}  // namespace placer
