#pragma once
// Training-step graphs and shipped clusters the placement and Placeto env tests both roll out
// on (tests/env/placement_env_test.cpp, tests/env/placeto_env_test.cpp).

#include <cstdint>

#include "datasets/synthetic.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"

namespace placer::testing {

/// A 3-layer MLP (hidden 1024) training step.
inline Graph mlp_step() {
  MlpOptions o;
  o.layers = 3;
  o.hidden = 1024;
  return expand_training_step(make_mlp(o));
}

/// A 2-layer transformer (d_model 256, 4 heads, sequence 64, batch 4) training step.
inline Graph transformer_step() {
  TransformerOptions t;
  t.layers = 2;
  t.d_model = 256;
  t.heads = 4;
  t.seq_len = 64;
  t.batch = 4;
  return expand_training_step(make_transformer(t));
}

/// A 120-op layered random DAG (width 8) training step.
inline Graph random_step(uint64_t seed) {
  LayeredRandomOptions o;
  o.n_ops = 120;
  o.width = 8;
  o.seed = seed;
  return expand_training_step(make_layered_random(o));
}

inline Cluster two_gpus() {
  return load_cluster_yaml(PLACER_TEST_DATA_DIR "/two_gpus.cluster.yaml");
}
inline Cluster dgx1() {
  return load_cluster_yaml(PLACER_SOURCE_DIR "/datasets/clusters/dgx1_p100.cluster.yaml");
}

}  // namespace placer::testing
