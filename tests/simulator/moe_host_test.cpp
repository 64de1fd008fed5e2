// The eager MoE host model (simulator/moe_host.cpp, CostProfile::moe_host_sync): host calls
// per MoE op, and the host's wait for the token counts once per MoE layer forward, which
// exposes the host's issue of small layers and hides behind long expert GEMMs. By hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim_fixtures.h"
#include "simulator/moe_host.h"
#include "src/graph/moe_attrs.h"

namespace placer {
namespace {

TEST(MoeHost, HostCallsPerPass) {
  // Forward dispatch: 12 calls, 2 more to sort by local expert when a rank has several.
  EXPECT_EQ(moe_op_host_calls(kMoeDispatch, "MoeDispatch", false, 1), 12);
  EXPECT_EQ(moe_op_host_calls(kMoeDispatch, "MoeDispatch", false, 2), 14);
  // A grouped linear is one call from Python (and its split) for any number of experts.
  EXPECT_EQ(moe_op_host_calls(kMoeExpertUp, "MatMul", false, 4), 2);
  EXPECT_EQ(moe_op_host_calls(kMoeExpertUp, "MatMul", true, 16), 3);
  // The router's gate GEMM and its top-k are told apart by the op type.
  EXPECT_EQ(moe_op_host_calls(kMoeRouter, "MatMul", false, 4), 3);
  EXPECT_EQ(moe_op_host_calls(kMoeRouter, "MoeTopK", false, 4), 5);
  EXPECT_EQ(moe_op_host_calls("no_such_role", "MatMul", false, 4), 1);
}

TEST(MoeHost, GptOssExpertOpsCallPerLocalExpert) {
  // The GLU clamp: chunk, two clamps, concatenation, the offset tensor; backward 3.
  EXPECT_EQ(moe_op_host_calls(kMoeExpertAct, "GluClamp", false, 16), 5);
  EXPECT_EQ(moe_op_host_calls(kMoeExpertAct, "GluClamp", true, 16), 3);
  EXPECT_EQ(moe_op_host_calls(kMoeExpertAct, "Swiglu", false, 16), 2);  // the activation itself
  // fc2's bias: two splits and a concatenation, a product and a sum per local expert;
  // backward two concatenations, and per expert two products, two reductions and the
  // gradient hooks of its two biases. H100 at ep 8 (16 experts a rank) and GB300 at ep 64 (2).
  EXPECT_EQ(moe_op_host_calls(kMoeExpertDown, "ExpertBias", false, 16), 3 + 2 * 16);
  EXPECT_EQ(moe_op_host_calls(kMoeExpertDown, "ExpertBias", true, 16), 2 + 6 * 16);
  EXPECT_EQ(moe_op_host_calls(kMoeExpertDown, "ExpertBias", false, 2), 7);
  EXPECT_EQ(moe_op_host_calls(kMoeExpertDown, "ExpertBias", true, 2), 14);
  EXPECT_EQ(moe_op_host_calls(kMoeExpertDown, "GroupedMatMul", true, 16), 3);
}

void mark(Op& op, const char* role, int layer) {
  op.attrs.emplace_back(kMoeLayerAttr, std::to_string(layer));
  op.attrs.emplace_back(kMoeRoleAttr, role);
  if (std::string(role) == kMoeExpertUp) {
    op.attrs.emplace_back(kMoeExpertsAttr, "1");
    op.attrs.emplace_back(kMoeTopKAttr, "1");
  }
}

// The step time of `g` on one device, every op 10 us a call, under the MoE host model
// (`sync`: CostProfile::moe_host_sync) with `sync_host_us` of host work after each sync.
double host_model_step(const Graph& g, bool sync = true, double sync_host_us = 0) {
  const Cluster cl = testing::make_cluster(1, 1, testing::link(0, 1e9), testing::link(0, 1e9));
  CostProfile prof = uniform_profile(1.0);
  prof.op(OpCategory::kMatMul).dispatch = 10e-6;
  prof.moe_host_sync = sync;
  prof.moe_sync_host_time = sync_host_us * 1e-6;
  const CostModel cost(cl, prof);
  Simulator sim(g, cl, cost);
  return sim.run(testing::place(g, std::vector<int>(g.num_ops(), 0))).step_time;
}

// Two MoE layers, forward only, one device: router -> dispatch -> experts -> combine, each
// op's GPU time in microseconds as given (uniform profile: FLOPs / 1e12 s). One local expert:
// the host issues 3, 12, 2 and 3 calls of 10 us = 30, 120, 20 and 30 us per op.
double two_layer_step(double router_us, double experts_us, bool sync, double sync_host_us = 0) {
  testing::TestGraph t;
  TensorId x = t.tensor("x", 8);
  for (int l = 0; l < 2; ++l) {
    const std::string n = "l" + std::to_string(l);
    const TensorId logits = t.tensor(n + ".logits", 8);
    const TensorId routed = t.tensor(n + ".routed", 8);
    const TensorId out = t.tensor(n + ".out", 8);
    const TensorId y = t.tensor(n + ".y", 8);
    mark(t.at(t.op(n + ".router", router_us * 1e6, {x}, {logits})), kMoeRouter, l);
    mark(t.at(t.op(n + ".dispatch", 1e6, {x, logits}, {routed})), kMoeDispatch, l);
    mark(t.at(t.op(n + ".experts", experts_us * 1e6, {routed}, {out})), kMoeExpertUp, l);
    mark(t.at(t.op(n + ".combine", 1e6, {out}, {y})), kMoeCombine, l);
    x = y;
  }
  return host_model_step(t.build(), sync, sync_host_us);
}

// Without the call counts (moe_host_sync off) every op is one 10 us dispatch.
TEST(MoeHost, OffIsOneDispatchPerOp) {
  // Router 300 us: the host is ahead; ops run back to back after the first issue.
  EXPECT_NEAR(two_layer_step(300, 1, false), 10e-6 + 2 * 303e-6, 1e-12);
}

TEST(MoeHost, SyncExposesTheIssueOfSmallLayers) {
  // Router 300 us, every other op 1 us. Issue clock without waits: r0 30, d0 150, e0 170,
  // c0 200, r1 230, d1 350, e1 370, c1 400 (us): the device runs r0 30-330, d0 .. c0 to 333,
  // r1 333-633, the rest to 636.
  // With the sync: d0 ends at 331 and the host waits: e0 issued 351 (351-352), c0 381-382,
  // r1 411-711, d1 issued 531 runs 711-712, the host waits: e1 732-733, c1 762-763.
  // 127 us more than the 636 us the same issue costs would take without the waits.
  EXPECT_NEAR(two_layer_step(300, 1, true), 763e-6, 1e-12);
}

TEST(MoeHost, LongExpertGemmsHideAllButTheFirstIssueAfterEachSync) {
  // Router 300 us, experts 500 us. With the sync: r0 30-330, d0 330-331 (host waits to 331),
  // e0 issued 351 runs 351-851, c0 (issued 381) 851-852, r1 (issued 411) 852-1152, d1
  // (issued 531) 1152-1153, the host waits: e1 issued 1173 runs 1173-1673, c1 1673-1674.
  // Each sync exposes only the 20 us issue of the expert GEMM after it.
  EXPECT_NEAR(two_layer_step(300, 500, true), 1674e-6, 1e-12);
}

TEST(MoeHost, HostWorkAfterEachSyncAddsToTheStep) {
  // As above with 50 us of host work after each sync: d0 ends at 331, the host is ready at
  // 381: e0 issued 401 runs 401-901, c0 (issued 431) 901-902, r1 (issued 461) 902-1202, d1
  // (issued 581) 1202-1203, the host is ready at 1253: e1 issued 1273 runs 1273-1773, c1
  // 1773-1774. The device waits for all of it: 1674 + 2 x 50 us.
  EXPECT_NEAR(two_layer_step(300, 500, true, 50), 1774e-6, 1e-12);
  // Without the sync (moe_host_sync off, as under a whole-iteration CUDA graph) it is unused.
  EXPECT_NEAR(two_layer_step(300, 500, false, 50), two_layer_step(300, 500, false), 1e-15);
}

// One MoE layer of gpt-oss's kind, forward, one device: router 300 us, dispatch 1 us, fc1
// 500 us, the GLU clamp 1 us (`clamp_syncs`: as Megatron-core, whose offset tensor is a
// blocking copy; else as an op without it), activation and combine 1 us each; 10 us a call.
double clamp_layer_step(bool clamp_syncs) {
  testing::TestGraph t;
  const TensorId x = t.tensor("x", 8), logits = t.tensor("logits", 8), routed = t.tensor("r", 8);
  const TensorId up = t.tensor("up", 8), clamped = t.tensor("c", 8), act = t.tensor("a", 8);
  const TensorId y = t.tensor("y", 8);
  mark(t.at(t.op("router", 300e6, {x}, {logits})), kMoeRouter, 0);
  mark(t.at(t.op("dispatch", 1e6, {x, logits}, {routed})), kMoeDispatch, 0);
  mark(t.at(t.op("fc1", 500e6, {routed}, {up})), kMoeExpertUp, 0);
  Op& clamp = t.at(t.op("clamp", 1e6, {up}, {clamped}));
  mark(clamp, kMoeExpertAct, 0);
  clamp.type = clamp_syncs ? "GluClamp" : "Clamp";
  mark(t.at(t.op("act", 1e6, {clamped}, {act})), kMoeExpertAct, 0);
  mark(t.at(t.op("combine", 1e6, {act}, {y})), kMoeCombine, 0);
  return host_model_step(t.build());
}

TEST(MoeHost, GluClampOffsetTensorSyncsTheHost) {
  // Issue (calls x 10 us): router 3, dispatch 12, fc1 2, GluClamp 5, activation 2, combine 3.
  // router 30-330; dispatch issued 150, runs 330-331, the host waits to 331; fc1 issued 351
  // runs 351-851; the clamp issued 401 runs 851-852 and the host waits for it: the activation
  // issued 872 runs 872-873, the combine issued 902 runs 902-903.
  EXPECT_NEAR(clamp_layer_step(true), 903e-6, 1e-12);
  // Without the wait (2 calls for an activation op without the offset tensor: issued 371)
  // the activation follows the clamp at 852-853 and the combine (issued 391) 853-854.
  EXPECT_NEAR(clamp_layer_step(false), 854e-6, 1e-12);
}

TEST(MoeHost, DecoderLayerOpsCallAsMegatronCoreIssuesThem) {
  // Norm: module entry and kernel; linear: GEMM and view, backward two GEMMs and a reshape;
  // rotary: the QKV view, split and reshape and the two fused RoPE calls; attention: wrapper,
  // RNG state get and set, the fused call and the output view.
  EXPECT_EQ(layer_op_host_calls("RMSNormalization", false), 2);
  EXPECT_EQ(layer_op_host_calls("MatMul", false), 2);
  EXPECT_EQ(layer_op_host_calls("MatMul", true), 3);
  EXPECT_EQ(layer_op_host_calls("RotaryEmbedding", false), 5);
  EXPECT_EQ(layer_op_host_calls("RotaryEmbedding", true), 3);
  EXPECT_EQ(layer_op_host_calls("FlashAttention", false), 5);
  EXPECT_EQ(layer_op_host_calls("FlashAttention", true), 3);
  EXPECT_EQ(layer_op_host_calls("SoftmaxCrossEntropy", false), 18);
  EXPECT_EQ(layer_op_host_calls("Add", false), 1);  // the fused bias-dropout-add
}

// One decoder layer on one device, every op 1 us of GPU, 10 us a call: the attention block
// (norm, QKV, rotary, attention, projection, residual add), with `moe` its MoE MLP (router,
// dispatch, experts, combine), then the projection's gradient and a gradient sum of it.
double decoder_layer_step(bool moe) {
  testing::TestGraph t;
  std::vector<TensorId> x{t.tensor("x", 8)};
  auto next = [&](const std::string& name, const char* type) {
    x.push_back(t.tensor(name + ".out", 8));
    const OpId o = t.op(name, 1e6, {x[x.size() - 2]}, {x.back()});
    t.at(o).type = type;
    return o;
  };
  next("norm", "RMSNormalization");
  next("qkv", "MatMul");
  next("rotary", "RotaryEmbedding");
  next("attention", "FlashAttention");
  const OpId proj = next("proj", "MatMul");
  next("add", "Add");
  if (moe) {
    mark(t.at(next("router", "MatMul")), kMoeRouter, 0);
    mark(t.at(next("dispatch", "MoeDispatch")), kMoeDispatch, 0);
    mark(t.at(next("experts", "GroupedMatMul")), kMoeExpertUp, 0);
    mark(t.at(next("combine", "MoeCombine")), kMoeCombine, 0);
  }
  for (const char* type : {"MatMulGrad", "AddN"}) {
    x.push_back(t.tensor(std::string(type) + ".out", 8));
    t.at(t.op(std::string("proj/") + type, 1e6, {x[x.size() - 2]}, {x.back()}, Phase::kBackward,
              proj))
        .type = type;
  }
  return host_model_step(t.build());
}

TEST(MoeHost, DecoderLayerOpsIssueTheirCallsInMoeGraphs) {
  // Calls: norm 2, QKV 2, rotary 5, attention 5, projection 2, add 1 (17 = 170 us); router 3,
  // dispatch 12, experts 2, combine 3; the projection's gradient 3, the gradient sum 1. The
  // host is behind the device throughout: each op runs as it is issued. Issue ends: norm 20,
  // QKV 40, rotary 90, attention 140, projection 160, add 170, router 200, dispatch 320 (runs
  // 320-321, the host waits to 321), experts 341, combine 371, gradient 401, sum 411-412.
  EXPECT_NEAR(decoder_layer_step(true), 412e-6, 1e-12);
  // A dense graph keeps one call per op under moe_host_sync: 8 ops issued every 10 us.
  EXPECT_NEAR(decoder_layer_step(false), 81e-6, 1e-12);
}

}  // namespace
}  // namespace placer
