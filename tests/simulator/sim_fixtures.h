#pragma once
// Small hand-checkable graphs and clusters for the simulator tests. Devices compute 1e12
// FLOP/s with 1e12 B/s of memory bandwidth and no launch overhead, so with
// uniform_profile(1.0) an op of F FLOPs (and few bytes) takes exactly F / 1e12 seconds.

#include <cstdint>
#include <string>
#include <vector>

#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/plan/plan.h"

namespace placer::testing {

inline DeviceSpec test_spec(uint64_t memory = 1ull << 40) {
  DeviceSpec s;
  s.model = "test-gpu";
  s.peak_flops[static_cast<int>(DType::kF32)] = 1e12;
  s.memory_bandwidth = 1e12;
  s.memory_bytes = memory;
  s.launch_overhead = 0;
  return s;
}

inline LinkSpec link(double latency, double bandwidth,
                     LinkSharing sharing = LinkSharing::kPerPair) {
  LinkSpec l;
  l.type = "test";
  l.latency = latency;
  l.bandwidth = bandwidth;
  l.sharing = sharing;
  return l;
}

/// `hosts` hosts of `per_host` devices; intra-host and inter-host links as given.
inline Cluster make_cluster(int hosts, int per_host, const LinkSpec& intra, const LinkSpec& inter,
                            uint64_t memory = 1ull << 40) {
  Cluster c;
  c.name = "test";
  for (int h = 0; h < hosts; ++h)
    c.add_host("host" + std::to_string(h), test_spec(memory), per_host);
  c.set_link(LinkLevel::kIntraHost, intra);
  c.set_link(LinkLevel::kInterHost, inter);
  return c;
}

/// Builds graphs op by op: tensors by name, ops with FLOPs and 1 byte of memory traffic
/// (so the op time is exactly FLOPs / peak).
class TestGraph {
 public:
  explicit TestGraph(const std::string& name = "test") : b_(name) {}

  TensorId tensor(const std::string& name, uint64_t bytes, bool batch_scaled = true,
                  bool param_grad = false) {
    Tensor t;
    t.name = name;
    t.bytes = bytes;
    t.batch_scaled = batch_scaled;
    t.is_param_grad = param_grad;
    return b_.add_tensor(std::move(t));
  }

  OpId op(const std::string& name, double flops, std::vector<TensorId> in,
          std::vector<TensorId> out, Phase phase = Phase::kForward, OpId forward_op = kNoOp) {
    Op o;
    o.name = name;
    o.type = phase == Phase::kOptimizer ? "SGDUpdate" : "MatMul";
    o.category = phase == Phase::kOptimizer ? OpCategory::kOptimizer : OpCategory::kMatMul;
    o.phase = phase;
    o.flops = flops;
    o.bytes_accessed = 1;
    o.batch_scaled = phase != Phase::kOptimizer;
    o.forward_op = forward_op;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    return b_.add_op(std::move(o));
  }

  Op& at(OpId id) { return b_.op(id); }
  Graph build() { return b_.build(); }

 private:
  GraphBuilder b_;
};

inline Plan place(const Graph& g, std::vector<int> placement) {
  Plan p;
  p.graph_name = g.name();
  p.placement = std::move(placement);
  return p;
}

}  // namespace placer::testing
