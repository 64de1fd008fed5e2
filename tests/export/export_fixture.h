#pragma once
// Shared by the export tests: a small bf16 / fp16 GPT training step on the shipped DGX A100
// cluster (8 GPUs), and the simulated step time of a plan.
#include <string>

#include "datasets/gpt.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/plan/megatron_plan.h"

namespace placer::export_test {

/// A GPT of `layers` layers, batch 16, computing in `dtype`, as a training step; `flash`:
/// fused attention ops (what context parallelism exchanges keys and values around).
inline Graph gpt(int layers, DType dtype, bool flash = false) {
  GptOptions o;
  if (flash) o.attention = AttentionImpl::kFlash;
  o.layers = layers;
  o.hidden = 64;
  o.heads = 4;
  o.seq_len = 32;
  o.batch = 16;
  o.vocab = 1000;
  o.tp = 2;
  o.dtype = dtype;
  return expand_training_step(make_gpt(o), TrainingOptions{});
}

inline Cluster dgx() {
  return load_cluster_yaml(std::string(PLACER_SOURCE_DIR) + "/datasets/clusters/dgx_a100.cluster.yaml");
}

inline double step_time(const Graph& g, const Cluster& c, const Plan& p) {
  const CostModel cost(c, default_profile());
  Simulator sim(g, c, cost);
  return sim.run(p, SimOptions{}).step_time;
}

/// Megatron configuration with the batch of gpt(): global batch 16.
inline MegatronConfig config(int tp, int pp, int dp, int micro_batch) {
  MegatronConfig m;
  m.tp = tp;
  m.pp = pp;
  m.dp = dp;
  m.micro_batch = micro_batch;
  m.global_batch = 16;
  return m;
}

}  // namespace placer::export_test
