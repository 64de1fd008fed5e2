#pragma once
// Shared checks for the graph-family tests.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "datasets/corpus.h"
#include "src/graph/graph.h"
#include "src/graph/training_step.h"

namespace placer::testing {

/// Every edge goes forward in the topological order, every op is in it exactly once, and
/// the only op nobody reads from is "loss" (so training-step expansion has one loss).
inline void expect_well_formed(const Graph& g) {
  ASSERT_EQ(g.topo_order().size(), g.num_ops());
  for (OpId i = 0; i < g.num_ops(); ++i) {
    for (OpId s : g.succs(i)) EXPECT_LT(g.topo_rank()[i], g.topo_rank()[s]) << g.op(i).name;
  }
  std::vector<std::string> sinks;
  for (OpId i = 0; i < g.num_ops(); ++i) {
    if (g.succs(i).empty()) sinks.push_back(g.op(i).name);
  }
  EXPECT_EQ(sinks, std::vector<std::string>{"loss"});
  for (const Op& o : g.ops()) {
    EXPECT_GE(o.flops, 0) << o.name;
    EXPECT_FALSE(o.scope.empty()) << o.name;
  }
  // The training step expands and every parameter owner gets an update.
  const Graph step = expand_training_step(g);
  size_t owners = 0, updates = 0;
  for (const Op& o : g.ops()) owners += o.param_bytes > 0;
  for (const Op& o : step.ops()) updates += o.phase == Phase::kOptimizer;
  EXPECT_EQ(updates, owners);
}

/// Sum of FLOPs of ops whose type is `type`.
inline double flops_of_type(const Graph& g, const std::string& type) {
  double f = 0;
  for (const Op& o : g.ops()) f += o.type == type ? o.flops : 0;
  return f;
}

inline size_t count_type(const Graph& g, const std::string& type) {
  size_t n = 0;
  for (const Op& o : g.ops()) n += o.type == type;
  return n;
}

inline uint64_t fp(const Graph& g) { return graph_fingerprint(g); }

}  // namespace placer::testing
