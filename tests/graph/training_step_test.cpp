#include "src/graph/training_step.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "src/util/error.h"

namespace placer {
namespace {

// Small graph-building helpers: f32 tensors given by element count.
struct G {
  GraphBuilder b{"test"};
  TensorId t(const std::string& name, uint64_t elems, DType dt = DType::kF32) {
    return b.add_tensor(name, elems * static_cast<uint64_t>(dtype_bytes(dt)), dt);
  }
  OpId op(const std::string& name, const std::string& type, std::vector<TensorId> in,
          std::vector<TensorId> out, double flops, uint64_t param_bytes = 0) {
    Op o;
    o.name = name;
    o.type = type;
    o.category = category_of_op_type(type);
    o.flops = flops;
    o.param_bytes = param_bytes;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    return b.add_op(std::move(o));
  }
  OpId loss(std::vector<TensorId> in, double flops) {
    const OpId id = op("loss", "SoftmaxCrossEntropy", std::move(in), {t("loss_value", 1)}, flops);
    b.op(id).category = OpCategory::kSoftmax;
    return id;
  }
};

// x[4,8] -> l1 MatMul (W 8x16) -> h1[4,16] -> relu -> a1[4,16] -> l2 MatMul (W 16x2)
// -> y[4,2] -> loss(y, labels[4] i64).
Graph mlp2() {
  G g;
  g.b.set_batch_size(4);
  const TensorId x = g.t("x", 32), h1 = g.t("h1", 64), a1 = g.t("a1", 64), y = g.t("y", 8);
  const TensorId labels = g.t("labels", 4, DType::kI64);
  g.op("l1", "MatMul", {x}, {h1}, 2.0 * 4 * 8 * 16, 8 * 16 * 4);  // 1024 FLOPs, 512 B
  g.op("relu", "Relu", {h1}, {a1}, 64);
  g.op("l2", "MatMul", {a1}, {y}, 2.0 * 4 * 16 * 2, 16 * 2 * 4);  // 256 FLOPs, 128 B
  g.loss({y, labels}, 40);
  return g.b.build();
}

const Tensor& tensor_named(const Graph& g, const std::string& name) {
  for (const Tensor& t : g.tensors()) {
    if (t.name == name) return t;
  }
  throw std::runtime_error("no tensor " + name);
}

std::vector<std::string> input_names(const Graph& g, OpId id) {
  std::vector<std::string> v;
  for (TensorId t : g.op(id).inputs) v.push_back(g.tensor(t).name);
  return v;
}
std::vector<std::string> output_names(const Graph& g, OpId id) {
  std::vector<std::string> v;
  for (TensorId t : g.op(id).outputs) v.push_back(g.tensor(t).name);
  return v;
}
bool reads(const Graph& g, const std::string& op, const std::string& tensor) {
  const auto in = input_names(g, g.find_op(op));
  return std::find(in.begin(), in.end(), tensor) != in.end();
}

int count_phase(const Graph& g, Phase p) {
  int n = 0;
  for (const Op& o : g.ops()) n += o.phase == p ? 1 : 0;
  return n;
}
double phase_flops(const Graph& g, Phase p) {
  double f = 0;
  for (const Op& o : g.ops()) f += o.phase == p ? o.flops : 0;
  return f;
}

TEST(Optimizer, ParseAndNames) {
  Optimizer o = Optimizer::kSgd;
  EXPECT_TRUE(parse_optimizer("ADAM", &o));
  EXPECT_EQ(o, Optimizer::kAdam);
  EXPECT_TRUE(parse_optimizer("momentum", &o));
  EXPECT_EQ(o, Optimizer::kMomentum);
  EXPECT_TRUE(parse_optimizer("sgd", &o));
  EXPECT_EQ(o, Optimizer::kSgd);
  EXPECT_FALSE(parse_optimizer("lamb", &o));
  EXPECT_STREQ(to_string(Optimizer::kMomentum), "momentum");
  EXPECT_STREQ(optimizer_op_type(Optimizer::kSgd), "SGDUpdate");
  EXPECT_EQ(category_of_op_type(optimizer_op_type(Optimizer::kAdam)), OpCategory::kOptimizer);
}

TEST(TrainingStep, MlpCountsAndFlops) {
  const Graph f = mlp2();
  const Graph s = expand_training_step(f);
  EXPECT_TRUE(s.is_training_step());
  EXPECT_FALSE(f.is_training_step());
  EXPECT_EQ(s.name(), "test");
  EXPECT_EQ(s.batch_size(), 4);
  EXPECT_EQ(s.num_ops(), 10u);
  EXPECT_EQ(count_phase(s, Phase::kForward), 4);
  EXPECT_EQ(count_phase(s, Phase::kBackward), 4);
  EXPECT_EQ(count_phase(s, Phase::kOptimizer), 2);
  // loss 1x40 + l2 2x256 (dX and dW) + relu 1x64 + l1 1x1024 (dW only: x is data).
  EXPECT_DOUBLE_EQ(s.op(s.find_op("loss/grad")).flops, 40);
  EXPECT_DOUBLE_EQ(s.op(s.find_op("l2/grad")).flops, 512);
  EXPECT_DOUBLE_EQ(s.op(s.find_op("relu/grad")).flops, 64);
  EXPECT_DOUBLE_EQ(s.op(s.find_op("l1/grad")).flops, 1024);
  EXPECT_DOUBLE_EQ(phase_flops(s, Phase::kBackward), 1640);
  // Adam: 12 FLOPs per parameter: 128 and 32 parameters.
  EXPECT_DOUBLE_EQ(phase_flops(s, Phase::kOptimizer), 12.0 * 128 + 12.0 * 32);
  EXPECT_DOUBLE_EQ(s.total_flops(), f.total_flops() + 1640 + 1920);
}

TEST(TrainingStep, MlpOrderAndForwardIdsPreserved) {
  const Graph f = mlp2();
  const Graph s = expand_training_step(f);
  for (OpId i = 0; i < f.num_ops(); ++i) {
    EXPECT_EQ(s.op(i).name, f.op(i).name);
    EXPECT_EQ(s.op(i).phase, Phase::kForward);
    EXPECT_EQ(s.op(i).inputs, f.op(i).inputs);
    EXPECT_EQ(s.op(i).outputs, f.op(i).outputs);
  }
  for (TensorId t = 0; t < f.num_tensors(); ++t) EXPECT_EQ(s.tensor(t).name, f.tensor(t).name);
  const std::vector<std::string> expect = {"l1",        "relu",     "l2",        "loss",
                                           "loss/grad", "l2/grad",  "relu/grad", "l1/grad",
                                           "l2/update", "l1/update"};
  for (OpId i = 0; i < s.num_ops(); ++i) EXPECT_EQ(s.op(i).name, expect[i]) << i;
  EXPECT_EQ(s.op(s.find_op("l2/grad")).forward_op, f.find_op("l2"));
  EXPECT_EQ(s.op(s.find_op("l1/update")).forward_op, f.find_op("l1"));
  EXPECT_EQ(s.op(s.find_op("l2/grad")).type, "MatMulGrad");
  EXPECT_EQ(s.op(s.find_op("l2/grad")).category, OpCategory::kMatMul);
  EXPECT_EQ(s.op(s.find_op("relu/grad")).type, "ReluGrad");
}

TEST(TrainingStep, MlpTensorsAndSavedActivations) {
  const Graph s = expand_training_step(mlp2());
  // The loss is seeded: its backward reads no gradient, only its saved inputs and the loss
  // value itself (so backward cannot start before the forward pass has finished).
  EXPECT_EQ(input_names(s, s.find_op("loss/grad")),
            (std::vector<std::string>{"y", "labels", "loss_value"}));
  EXPECT_EQ(output_names(s, s.find_op("loss/grad")), (std::vector<std::string>{"y/grad"}));
  // MatMul saves its input: layer 1's activation a1 stays alive until l2/grad has run.
  EXPECT_EQ(input_names(s, s.find_op("l2/grad")), (std::vector<std::string>{"y/grad", "a1"}));
  EXPECT_EQ(output_names(s, s.find_op("l2/grad")),
            (std::vector<std::string>{"a1/grad", "l2/param_grad"}));
  // Relu saves its output (a1), not its input: h1 is read by no backward op.
  EXPECT_EQ(input_names(s, s.find_op("relu/grad")), (std::vector<std::string>{"a1/grad", "a1"}));
  for (const Op& o : s.ops()) {
    if (o.phase != Phase::kForward) {
      EXPECT_FALSE(reads(s, o.name, "h1")) << o.name;
    }
  }
  // First layer: x is data, so no x/grad; only the parameter gradient.
  EXPECT_EQ(input_names(s, s.find_op("l1/grad")), (std::vector<std::string>{"h1/grad", "x"}));
  EXPECT_EQ(output_names(s, s.find_op("l1/grad")), (std::vector<std::string>{"l1/param_grad"}));

  const Tensor& pg = tensor_named(s, "l1/param_grad");
  EXPECT_TRUE(pg.is_param_grad);
  EXPECT_FALSE(pg.batch_scaled);
  EXPECT_EQ(pg.bytes, 512u);
  EXPECT_EQ(tensor_named(s, "l2/param_grad").bytes, 128u);
  const Tensor& ag = tensor_named(s, "a1/grad");
  EXPECT_FALSE(ag.is_param_grad);
  EXPECT_TRUE(ag.batch_scaled);
  EXPECT_EQ(ag.bytes, 256u);
  EXPECT_EQ(ag.dtype, DType::kF32);
  // Tensors: 6 forward + y/grad, a1/grad, l2/param_grad, h1/grad, l1/param_grad.
  EXPECT_EQ(s.num_tensors(), 11u);

  // Updates read the parameter gradient and write nothing.
  EXPECT_EQ(input_names(s, s.find_op("l1/update")), (std::vector<std::string>{"l1/param_grad"}));
  EXPECT_TRUE(s.op(s.find_op("l1/update")).outputs.empty());
  // l2/grad traffic: y/grad 32 + a1 256 + a1/grad 256 + param_grad 128 + weights 128.
  EXPECT_EQ(s.op(s.find_op("l2/grad")).bytes_accessed, 800u);
}

TEST(TrainingStep, GroupsColocateForwardBackwardUpdate) {
  const Graph s = expand_training_step(mlp2());
  EXPECT_EQ(s.op(s.find_op("l1")).group, "l1");
  EXPECT_EQ(s.op(s.find_op("l1/grad")).group, "l1");
  EXPECT_EQ(s.op(s.find_op("l1/update")).group, "l1");
  EXPECT_EQ(s.op(s.find_op("relu/grad")).group, "relu");

  G g;
  const TensorId x = g.t("x", 4), y = g.t("y", 4);
  const OpId l = g.op("lin", "MatMul", {x}, {y}, 32, 64);
  g.b.op(l).group = "block0";
  g.b.op(l).scope = "enc.layer.0";
  g.b.op(l).layer = 0;
  const Graph s2 = expand_training_step(g.b.build());
  for (const char* name : {"lin", "lin/grad", "lin/update"}) {
    const Op& o = s2.op(s2.find_op(name));
    EXPECT_EQ(o.group, "block0") << name;
    EXPECT_EQ(o.scope, "enc.layer.0") << name;
    EXPECT_EQ(o.layer, 0) << name;
  }
}

TEST(TrainingStep, OptimizerStateAndCost) {
  const Graph f = mlp2();
  struct Case {
    Optimizer opt;
    uint64_t state;    // l1: 512 parameter bytes
    double flops;      // l1: 128 parameters
    uint64_t traffic;  // (3 + 2 * copies) * 512
    const char* type;
  };
  for (const Case& c : {Case{Optimizer::kSgd, 0, 256, 1536, "SGDUpdate"},
                        Case{Optimizer::kMomentum, 512, 512, 2560, "MomentumUpdate"},
                        Case{Optimizer::kAdam, 1024, 1536, 3584, "AdamUpdate"}}) {
    TrainingOptions opts;
    opts.optimizer = c.opt;
    const Graph s = expand_training_step(f, opts);
    const Op& u = s.op(s.find_op("l1/update"));
    EXPECT_EQ(u.type, c.type);
    EXPECT_EQ(u.phase, Phase::kOptimizer);
    EXPECT_EQ(u.category, OpCategory::kOptimizer);
    EXPECT_FALSE(u.batch_scaled);
    EXPECT_EQ(u.state_bytes, c.state) << c.type;
    EXPECT_DOUBLE_EQ(u.flops, c.flops) << c.type;
    EXPECT_EQ(u.bytes_accessed, c.traffic) << c.type;
    EXPECT_EQ(s.op(s.find_op("l2/update")).state_bytes, c.state / 4) << c.type;
    EXPECT_EQ(u.param_bytes, 0u);  // parameters stay owned by the forward op
  }
}

// x[4,8] f16 -> mm MatMul (P = 8*16 = 128 fp16 parameters) -> y[4,16] -> loss.
Graph fp16_matmul(DType dt = DType::kF16) {
  G g;
  g.b.set_batch_size(4);
  const TensorId x = g.t("x", 32, dt), y = g.t("y", 64, dt);
  const uint64_t eb = static_cast<uint64_t>(dtype_bytes(dt));
  const OpId mm = g.op("mm", "MatMul", {x}, {y}, 2.0 * 4 * 8 * 16, 128 * eb);
  g.b.op(mm).dtype = dt;
  g.loss({y}, 320);
  return g.b.build();
}

TEST(TrainingStep, MasterWeightsAdamIs16BytesPerParameter) {
  const uint64_t P = 128;
  TrainingOptions opts;
  opts.optimizer = Optimizer::kAdam;
  opts.master_weights = true;
  const Graph s = expand_training_step(fp16_matmul(), opts);
  EXPECT_EQ(s.op(s.find_op("mm")).param_bytes, 2 * P);
  const Op& u = s.op(s.find_op("mm/update"));
  EXPECT_EQ(u.state_bytes, 12 * P);  // fp32 master (4) + m (4) + v (4)
  EXPECT_EQ(tensor_named(s, "mm/param_grad").bytes, 2 * P);  // gradients stay fp16
  // 2 + 2 + 12 = 16 bytes per parameter (ZeRO, Sec. 3.1).
  EXPECT_EQ(s.op(s.find_op("mm")).param_bytes + tensor_named(s, "mm/param_grad").bytes +
                u.state_bytes,
            16 * P);
  // Read g (2), write the fp16 w (2), read + write master, m, v (2 x 12).
  EXPECT_EQ(u.bytes_accessed, 2 * 2 * P + 2 * 12 * P);
  EXPECT_DOUBLE_EQ(u.flops, 12.0 * P);  // unchanged
  EXPECT_EQ(u.param_bytes, 0u);
}

TEST(TrainingStep, MasterWeightsPerOptimizerAndDtype) {
  const uint64_t P = 128;
  struct Case {
    Optimizer opt;
    DType dtype;
    uint64_t state;
  };
  for (const Case& c : {Case{Optimizer::kSgd, DType::kF16, 4 * P},
                        Case{Optimizer::kMomentum, DType::kF16, 8 * P},
                        Case{Optimizer::kAdam, DType::kBF16, 12 * P},
                        // fp32 parameters need no master copy: states in fp32 as before.
                        Case{Optimizer::kAdam, DType::kF32, 8 * P},
                        Case{Optimizer::kSgd, DType::kF32, 0}}) {
    TrainingOptions opts;
    opts.optimizer = c.opt;
    opts.master_weights = true;
    const Graph s = expand_training_step(fp16_matmul(c.dtype), opts);
    EXPECT_EQ(s.op(s.find_op("mm/update")).state_bytes, c.state)
        << to_string(c.opt) << " " << to_string(c.dtype);
    EXPECT_EQ(optimizer_state_bytes(c.opt, P * dtype_bytes(c.dtype), c.dtype, true), c.state);
  }
  // Without master_weights an fp16 Adam state is two fp16 copies (the old behaviour).
  TrainingOptions plain;
  const Graph s = expand_training_step(fp16_matmul(), plain);
  EXPECT_FALSE(plain.master_weights);
  EXPECT_EQ(s.op(s.find_op("mm/update")).state_bytes, 2 * 2 * P);
  EXPECT_EQ(s.op(s.find_op("mm/update")).bytes_accessed, 7 * 2 * P);
  EXPECT_EQ(optimizer_state_bytes(Optimizer::kAdam, 2 * P, DType::kF16, false), 4 * P);
}

TEST(TrainingStep, BranchWithoutParametersGetsNoBackward) {
  // x -> lin (params) -> y;  x -> aux (Relu, no params) -> z;  add(y, z) -> loss.
  G g;
  const TensorId x = g.t("x", 16), y = g.t("y", 16), z = g.t("z", 16), s = g.t("s", 16);
  g.op("lin", "MatMul", {x}, {y}, 512, 256);
  g.op("aux", "Relu", {x}, {z}, 16);
  g.op("add", "Add", {y, z}, {s}, 16);
  g.loss({s}, 80);
  const Graph st = expand_training_step(g.b.build());
  EXPECT_EQ(st.find_op("aux/grad"), kNoOp);
  EXPECT_NE(st.find_op("add/grad"), kNoOp);
  // add/grad passes a gradient to y only; Add saves nothing.
  EXPECT_EQ(output_names(st, st.find_op("add/grad")), (std::vector<std::string>{"y/grad"}));
  EXPECT_EQ(input_names(st, st.find_op("add/grad")), (std::vector<std::string>{"s/grad"}));
  EXPECT_EQ(count_phase(st, Phase::kBackward), 3);  // loss, add, lin
  EXPECT_EQ(count_phase(st, Phase::kOptimizer), 1);
}

TEST(TrainingStep, FanOutYieldsOneGradientPerConsumer) {
  // x -> lin (params) -> t;  t -> a (Relu) -> u;  t -> b (Tanh) -> v;  add(u, v) -> loss.
  G g;
  const TensorId x = g.t("x", 16), t = g.t("t", 16), u = g.t("u", 16), v = g.t("v", 16);
  const TensorId s = g.t("s", 16);
  g.op("lin", "MatMul", {x}, {t}, 512, 256);
  g.op("a", "Relu", {t}, {u}, 16);
  g.op("b", "Tanh", {t}, {v}, 16);
  g.op("add", "Add", {u, v}, {s}, 16);
  g.loss({s}, 80);
  const Graph st = expand_training_step(g.b.build());
  EXPECT_EQ(output_names(st, st.find_op("a/grad")), (std::vector<std::string>{"t/grad@a"}));
  EXPECT_EQ(output_names(st, st.find_op("b/grad")), (std::vector<std::string>{"t/grad@b"}));
  const OpId lg = st.find_op("lin/grad");
  // Reverse topological order: b/grad is created before a/grad.
  EXPECT_EQ(input_names(st, lg), (std::vector<std::string>{"t/grad@b", "t/grad@a", "x"}));
  // 1x the forward (dW only) plus summing 2 gradients of 16 elements: 16 additions.
  EXPECT_DOUBLE_EQ(st.op(lg).flops, 512 + 16);
  EXPECT_FALSE(tensor_named(st, "t/grad@a").is_param_grad);
  // lin/grad runs after both consumers' backward ops.
  EXPECT_GT(st.topo_rank()[lg], st.topo_rank()[st.find_op("a/grad")]);
  EXPECT_GT(st.topo_rank()[lg], st.topo_rank()[st.find_op("b/grad")]);
}

TEST(TrainingStep, IntegerSinkIsNotALoss) {
  // logits feed both the loss and an ArgMax whose i64 output nobody reads.
  G g;
  const TensorId x = g.t("x", 8), y = g.t("y", 8), p = g.t("pred", 2, DType::kI64);
  g.op("lin", "MatMul", {x}, {y}, 64, 64);
  g.op("argmax", "ArgMax", {y}, {p}, 8);
  g.loss({y}, 40);
  const Graph st = expand_training_step(g.b.build());
  EXPECT_EQ(st.find_op("argmax/grad"), kNoOp);
  EXPECT_NE(st.find_op("loss/grad"), kNoOp);
  // y has one on-path consumer, so its gradient is plain "y/grad".
  EXPECT_EQ(output_names(st, st.find_op("loss/grad")), (std::vector<std::string>{"y/grad"}));
}

TEST(TrainingStep, ParameterNodesAccumulateTiedGradients) {
  // TF-style variable node W (input category, owns 64 B) read by two MatMuls.
  G g;
  const TensorId x = g.t("x", 4), w = g.t("w", 16), y1 = g.t("y1", 4), y2 = g.t("y2", 4);
  const TensorId s = g.t("s", 4);
  const OpId wv = g.op("W", "Parameter", {}, {w}, 0, 64);
  g.b.op(wv).batch_scaled = false;
  g.b.tensor(w).batch_scaled = false;
  g.op("m1", "MatMul", {x, w}, {y1}, 32);
  g.op("m2", "MatMul", {y1, w}, {y2}, 32);
  g.op("add", "Add", {y1, y2}, {s}, 4);
  g.loss({s}, 20);
  const Graph st = expand_training_step(g.b.build());
  // m2: both operands need gradients (2x); m1: only w (x is data) (1x).
  EXPECT_DOUBLE_EQ(st.op(st.find_op("m2/grad")).flops, 64);
  EXPECT_DOUBLE_EQ(st.op(st.find_op("m1/grad")).flops, 32 + 4);  // + summing y1's 2 grads
  const OpId acc = st.find_op("W/grad");
  ASSERT_NE(acc, kNoOp);
  EXPECT_EQ(st.op(acc).type, "AddN");
  EXPECT_EQ(input_names(st, acc), (std::vector<std::string>{"w/grad@m2", "w/grad@m1"}));
  EXPECT_EQ(output_names(st, acc), (std::vector<std::string>{"w/grad"}));
  EXPECT_DOUBLE_EQ(st.op(acc).flops, 16);
  const Tensor& wg = tensor_named(st, "w/grad");
  EXPECT_TRUE(wg.is_param_grad);
  EXPECT_FALSE(wg.batch_scaled);
  EXPECT_FALSE(tensor_named(st, "w/grad@m1").is_param_grad);
  EXPECT_EQ(input_names(st, st.find_op("W/update")), (std::vector<std::string>{"w/grad"}));
  EXPECT_EQ(st.op(st.find_op("W/update")).state_bytes, 128u);
  int param_grads = 0;
  for (const Tensor& t : st.tensors()) param_grads += t.is_param_grad ? 1 : 0;
  EXPECT_EQ(param_grads, 1);
}

TEST(TrainingStep, Deterministic) {
  const Graph f = mlp2();
  const Graph a = expand_training_step(f), b = expand_training_step(f);
  ASSERT_EQ(a.num_ops(), b.num_ops());
  ASSERT_EQ(a.num_tensors(), b.num_tensors());
  for (OpId i = 0; i < a.num_ops(); ++i) {
    EXPECT_EQ(a.op(i).name, b.op(i).name);
    EXPECT_EQ(a.op(i).inputs, b.op(i).inputs);
    EXPECT_EQ(a.op(i).outputs, b.op(i).outputs);
    EXPECT_EQ(a.op(i).flops, b.op(i).flops);
  }
  for (TensorId t = 0; t < a.num_tensors(); ++t) {
    EXPECT_EQ(a.tensor(t).name, b.tensor(t).name);
    EXPECT_EQ(a.tensor(t).bytes, b.tensor(t).bytes);
  }
}

TEST(TrainingStep, CustomMultipliers) {
  TrainingOptions opts;
  opts.backward_multiplier[static_cast<int>(OpCategory::kElementwise)] = 3;
  const Graph s = expand_training_step(mlp2(), opts);
  EXPECT_DOUBLE_EQ(s.op(s.find_op("relu/grad")).flops, 3 * 64);
  EXPECT_DOUBLE_EQ(default_backward_multipliers()[static_cast<int>(OpCategory::kConv)], 2);
}

TEST(TrainingStep, RejectsExpandedGraphs) {
  const Graph s = expand_training_step(mlp2());
  EXPECT_THROW(expand_training_step(s), ValidationError);
  // A graph that holds backward ops without the flag is rejected too, naming the op.
  G g;
  const TensorId x = g.t("x", 4), y = g.t("y", 4);
  const OpId o = g.op("bwd", "MatMulGrad", {x}, {y}, 1);
  g.b.op(o).phase = Phase::kBackward;
  try {
    expand_training_step(g.b.build());
    FAIL() << "expected ValidationError";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("'bwd'"), std::string::npos) << e.what();
  }
}

TEST(TrainingStep, SavedTensorRule) {
  Op o;
  o.type = "Softmax";
  o.category = OpCategory::kSoftmax;
  EXPECT_EQ(saved_tensors_of(o), SavedTensors::kOutputs);
  o.type = "Transpose";
  o.category = OpCategory::kDataMovement;
  EXPECT_EQ(saved_tensors_of(o), SavedTensors::kNone);
  o.type = "Gelu";
  o.category = OpCategory::kElementwise;
  EXPECT_EQ(saved_tensors_of(o), SavedTensors::kInputs);
  o.type = "SoftmaxCrossEntropy";
  o.category = OpCategory::kSoftmax;
  EXPECT_EQ(saved_tensors_of(o), SavedTensors::kInputs);
  o.type = "MoeCombine";
  o.category = OpCategory::kElementwise;
  EXPECT_EQ(saved_tensors_of(o), SavedTensors::kNone);
}

// A sink whose backward saves nothing (an Add) still waits for the forward pass: its grad
// op reads the sink's output, so the sink is a predecessor of its backward op.
TEST(TrainingStep, LossBackwardDependsOnForward) {
  GraphBuilder b("sink_add");
  const TensorId x = b.add_tensor("x", 64);
  const TensorId w = b.add_tensor("w", 64);
  const TensorId y = b.add_tensor("y", 64);
  const TensorId z = b.add_tensor("z", 64);
  Op mm;
  mm.name = "mm";
  mm.type = "MatMul";
  mm.category = OpCategory::kMatMul;
  mm.flops = 100;
  mm.param_bytes = 64;
  mm.inputs = {x, w};
  mm.outputs = {y};
  b.add_op(mm);
  Op add;
  add.name = "add";
  add.type = "Add";
  add.category = OpCategory::kElementwise;
  add.flops = 16;
  add.inputs = {y};
  add.outputs = {z};
  b.add_op(add);
  const Graph s = expand_training_step(b.build());
  const OpId add_grad = s.find_op("add/grad");
  ASSERT_NE(add_grad, kNoOp);
  const auto preds = s.preds(add_grad);
  ASSERT_EQ(preds.size(), 1u);
  EXPECT_EQ(s.op(preds[0]).name, "add");
  // And mm/grad follows add/grad, so the whole backward pass follows the forward pass.
  EXPECT_LT(s.topo_rank()[s.find_op("add")], s.topo_rank()[s.find_op("mm/grad")]);
}

}  // namespace
}  // namespace placer
