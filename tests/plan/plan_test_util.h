#pragma once
// Shared fixtures of the plan tests: a hand-built training-step graph, an 8-GPU cluster,
// plan comparison and an exception matcher.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/plan/plan.h"

namespace placer {
namespace testing_plan {

/// Forward chain x_in -> embed -> l1_fc -> l1_act -> l10_fc -> head, then backward ops in
/// reverse (each with forward_op set), two update ops and one optimizer op without a
/// forward op. Ids:
///   0 x_in (Input)          1 embed (MatMul, group emb)   2 l1_fc (MatMul)
///   3 l1_act (Relu)         4 l10_fc (MatMul, out [8,4])  5 head (Softmax)
///   6 head/grad  7 l10_fc/grad  8 l1_act/grad  9 l1_fc/grad  10 embed/grad (group emb)
///   11 embed/update  12 l1_fc/update  13 loose_opt (optimizer, group emb, no forward op)
/// Scopes: embed, layer.1.fc, layer.1.act, layer.10.fc, head.
inline Graph make_test_graph() {
  GraphBuilder b("testnet");
  b.set_batch_size(8);
  b.set_training_step(true);
  auto tensor = [&](const std::string& name, std::vector<int64_t> shape) {
    Tensor t;
    t.name = name;
    t.shape = shape;
    t.bytes = 4;
    for (int64_t s : shape) t.bytes *= uint64_t(s);
    return b.add_tensor(t);
  };
  auto op = [&](const std::string& name, const std::string& type, OpCategory cat, Phase phase,
                std::vector<TensorId> in, std::vector<TensorId> out, const std::string& scope,
                OpId fwd = kNoOp, const std::string& group = "") {
    Op o;
    o.name = name;
    o.type = type;
    o.category = cat;
    o.phase = phase;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    o.scope = scope;
    o.forward_op = fwd;
    o.group = group;
    o.flops = 1000;
    return b.add_op(o);
  };
  const TensorId tx = tensor("x", {8, 16});
  const TensorId te = tensor("e", {8, 32});
  const TensorId t1 = tensor("h1", {8, 32});
  const TensorId t1a = tensor("h1a", {8, 32});
  const TensorId t10 = tensor("h10", {8, 4});
  const TensorId th = tensor("y", {8, 4});
  const TensorId gh = tensor("y/grad", {8, 4});
  const TensorId g10 = tensor("h10/grad", {8, 32});
  const TensorId g1a = tensor("h1a/grad", {8, 32});
  const TensorId g1 = tensor("h1/grad", {8, 32});
  const TensorId ge = tensor("e/grad", {8, 32});
  const OpId x_in = op("x_in", "Input", OpCategory::kInput, Phase::kForward, {}, {tx}, "");
  const OpId embed = op("embed", "MatMul", OpCategory::kMatMul, Phase::kForward, {tx}, {te},
                        "embed", kNoOp, "emb");
  const OpId l1_fc =
      op("l1_fc", "MatMul", OpCategory::kMatMul, Phase::kForward, {te}, {t1}, "layer.1.fc");
  const OpId l1_act =
      op("l1_act", "Relu", OpCategory::kElementwise, Phase::kForward, {t1}, {t1a}, "layer.1.act");
  const OpId l10_fc =
      op("l10_fc", "MatMul", OpCategory::kMatMul, Phase::kForward, {t1a}, {t10}, "layer.10.fc");
  const OpId head =
      op("head", "Softmax", OpCategory::kSoftmax, Phase::kForward, {t10}, {th}, "head");
  op("head/grad", "SoftmaxGrad", OpCategory::kSoftmax, Phase::kBackward, {th}, {gh}, "head", head);
  op("l10_fc/grad", "MatMulGrad", OpCategory::kMatMul, Phase::kBackward, {gh}, {g10}, "layer.10.fc",
     l10_fc);
  op("l1_act/grad", "ReluGrad", OpCategory::kElementwise, Phase::kBackward, {g10}, {g1a},
     "layer.1.act", l1_act);
  op("l1_fc/grad", "MatMulGrad", OpCategory::kMatMul, Phase::kBackward, {g1a}, {g1}, "layer.1.fc",
     l1_fc);
  op("embed/grad", "MatMulGrad", OpCategory::kMatMul, Phase::kBackward, {g1}, {ge}, "embed", embed,
     "emb");
  op("embed/update", "AdamUpdate", OpCategory::kOptimizer, Phase::kOptimizer, {ge}, {}, "embed",
     embed);
  op("l1_fc/update", "AdamUpdate", OpCategory::kOptimizer, Phase::kOptimizer, {g1}, {},
     "layer.1.fc", l1_fc);
  op("loose_opt", "Step", OpCategory::kOptimizer, Phase::kOptimizer, {}, {}, "", kNoOp, "emb");
  (void)x_in;
  return b.build();
}

/// Two hosts "h0", "h1" with four GPUs each: h0/gpu0..3 = devices 0..3, h1/gpu0..3 = 4..7.
inline Cluster make_test_cluster() {
  Cluster c;
  c.name = "testcluster";
  DeviceSpec s;
  s.model = "g";
  s.peak_flops[static_cast<int>(DType::kF32)] = 1e13;
  s.memory_bytes = 16ull << 30;
  s.memory_bandwidth = 1e12;
  c.add_host("h0", s, 4);
  c.add_host("h1", s, 4);
  c.set_link(LinkLevel::kIntraHost, {"nvlink", 5e-6, 25e9, LinkSharing::kPerPair});
  c.set_link(LinkLevel::kInterHost, {"ib", 5e-6, 12.5e9, LinkSharing::kPerHost});
  return c;
}

inline void expect_same_plan(const Plan& a, const Plan& b) {
  EXPECT_EQ(a.graph_name, b.graph_name);
  EXPECT_EQ(a.method, b.method);
  EXPECT_EQ(a.placement, b.placement);
  ASSERT_EQ(a.partitions.size(), b.partitions.size());
  for (size_t i = 0; i < a.partitions.size(); ++i) {
    EXPECT_EQ(a.partitions[i].op, b.partitions[i].op) << i;
    EXPECT_EQ(a.partitions[i].dim, b.partitions[i].dim) << i;
    EXPECT_EQ(a.partitions[i].devices, b.partitions[i].devices) << i;
    EXPECT_EQ(a.partitions[i].levels, b.partitions[i].levels) << i;
    EXPECT_EQ(a.partitions[i].sharded_output, b.partitions[i].sharded_output) << i;
    EXPECT_EQ(a.partitions[i].sharded_input, b.partitions[i].sharded_input) << i;
    EXPECT_EQ(a.partitions[i].replicated, b.partitions[i].replicated) << i;
    EXPECT_EQ(a.partitions[i].forward_collective, b.partitions[i].forward_collective) << i;
    EXPECT_EQ(a.partitions[i].backward_collective, b.partitions[i].backward_collective) << i;
  }
  EXPECT_EQ(a.pipeline.micro_batches, b.pipeline.micro_batches);
  EXPECT_EQ(a.pipeline.schedule, b.pipeline.schedule);
  EXPECT_EQ(a.pipeline.virtual_stages, b.pipeline.virtual_stages);
  EXPECT_EQ(a.pipeline.scatter_gather, b.pipeline.scatter_gather);
  ASSERT_EQ(a.pipeline.stages.size(), b.pipeline.stages.size());
  for (size_t s = 0; s < a.pipeline.stages.size(); ++s) {
    EXPECT_EQ(a.pipeline.stages[s].ops, b.pipeline.stages[s].ops) << s;
    EXPECT_EQ(a.pipeline.stages[s].devices, b.pipeline.stages[s].devices) << s;
    EXPECT_EQ(a.pipeline.stages[s].tensor_parallel, b.pipeline.stages[s].tensor_parallel) << s;
    EXPECT_EQ(a.pipeline.stages[s].recompute, b.pipeline.stages[s].recompute) << s;
  }
  EXPECT_EQ(a.context_parallel.degree, b.context_parallel.degree);
  EXPECT_EQ(a.context_parallel.comm, b.context_parallel.comm);
  EXPECT_EQ(a.expert_parallel.degree, b.expert_parallel.degree);
  EXPECT_EQ(a.expert_parallel.tensor_parallel, b.expert_parallel.tensor_parallel);
  EXPECT_EQ(a.expert_parallel.dispatcher, b.expert_parallel.dispatcher);
  EXPECT_EQ(a.expert_parallel.overlap, b.expert_parallel.overlap);
  ASSERT_EQ(a.expert_parallel.layers.size(), b.expert_parallel.layers.size());
  for (size_t l = 0; l < a.expert_parallel.layers.size(); ++l) {
    EXPECT_EQ(a.expert_parallel.layers[l].replicas, b.expert_parallel.layers[l].replicas) << l;
  }
  EXPECT_EQ(a.data_parallel.zero_stage, b.data_parallel.zero_stage);
  EXPECT_EQ(a.data_parallel.overlap, b.data_parallel.overlap);
  const FsdpConfig &fa = a.data_parallel.fsdp, &fb = b.data_parallel.fsdp;
  EXPECT_EQ(fa.enabled, fb.enabled);
  EXPECT_EQ(fa.forward_prefetch, fb.forward_prefetch);
  EXPECT_EQ(fa.backward_prefetch, fb.backward_prefetch);
  EXPECT_EQ(fa.reshard_after_forward, fb.reshard_after_forward);
  EXPECT_EQ(fa.shard_group, fb.shard_group);
  EXPECT_EQ(fa.param_dtype_set, fb.param_dtype_set);
  EXPECT_EQ(fa.reduce_dtype_set, fb.reduce_dtype_set);
  if (fa.param_dtype_set) {
    EXPECT_EQ(fa.param_dtype, fb.param_dtype);
  }
  if (fa.reduce_dtype_set) {
    EXPECT_EQ(fa.reduce_dtype, fb.reduce_dtype);
  }
  EXPECT_EQ(a.recompute_every, b.recompute_every);
  EXPECT_EQ(a.precision.fp8, b.precision.fp8);
  EXPECT_EQ(a.tensor_parallel.degree, b.tensor_parallel.degree);
  EXPECT_EQ(a.tensor_parallel.sequence_parallel, b.tensor_parallel.sequence_parallel);
  EXPECT_EQ(a.recompute, b.recompute);
  EXPECT_EQ(a.precision.compute_set, b.precision.compute_set);
  EXPECT_EQ(a.precision.compute, b.precision.compute);
  EXPECT_EQ(a.precision.loss_scaling, b.precision.loss_scaling);
  EXPECT_EQ(a.precision.grad_clipping, b.precision.grad_clipping);
  EXPECT_EQ(a.data_parallel.replicas, b.data_parallel.replicas);
  EXPECT_EQ(a.data_parallel.sync, b.data_parallel.sync);
  EXPECT_EQ(a.data_parallel.bucket_bytes, b.data_parallel.bucket_bytes);
  EXPECT_EQ(a.data_parallel.replica_devices, b.data_parallel.replica_devices);
  EXPECT_EQ(a.predicted.valid, b.predicted.valid);
  EXPECT_EQ(a.predicted.step_time, b.predicted.step_time);
  EXPECT_EQ(a.predicted.peak_memory, b.predicted.peak_memory);
  EXPECT_EQ(a.predicted.oom, b.predicted.oom);
}

/// Runs `f`; expects an exception of type E whose message contains `part`.
template <typename E, typename F>
void expect_error(F f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one containing: " << part;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << part;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type, message: " << e.what();
  }
}

}  // namespace testing_plan
}  // namespace placer
