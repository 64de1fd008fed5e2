// ONNX import: hand-made fixtures (scripts/make_test_onnx.py) with hand-counted FLOPs,
// shapes, parameters and scopes; bad inputs; models built in C++ with the protobuf API.
#include "datasets/onnx_import.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <tuple>
#include <vector>

#include "src/graph/training_step.h"
#include "src/util/error.h"

namespace placer {
namespace {

std::string fixture(const std::string& name) {
  return std::string(PLACER_TEST_DATA_DIR) + "/onnx/" + name;
}

const Op& op_named(const Graph& g, const std::string& name) {
  const OpId id = g.find_op(name);
  if (id == kNoOp) throw std::runtime_error("no op named " + name);
  return g.op(id);
}

const Tensor& tensor_named(const Graph& g, const std::string& name) {
  for (const Tensor& t : g.tensors()) {
    if (t.name == name) return t;
  }
  throw std::runtime_error("no tensor named " + name);
}

// Runs `f` and returns the message of the placer::Error subclass E it must throw.
template <typename E, typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "<no exception>";
}

// ---------------------------------------------------------------- conv_net.onnx

TEST(OnnxImport, ConvNetHandCountedCosts) {
  std::vector<std::string> warnings;
  ImportStats st;
  Graph g = import_onnx(fixture("conv_net.onnx"), {}, &warnings, &st);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(g.name(), "conv_net");
  EXPECT_EQ(g.batch_size(), 2);
  EXPECT_FALSE(g.is_training_step());
  ASSERT_EQ(g.num_ops(), 6u);
  EXPECT_EQ(st.nodes, 6u);
  EXPECT_EQ(st.folded_nodes, 0u);
  EXPECT_EQ(st.opset, 14);
  EXPECT_EQ(st.ir_version, 7);
  EXPECT_EQ(st.data_inputs, 1u);
  EXPECT_EQ(st.param_tensors, 6u);  // conv W (init), conv_b (slot), bn w/b, fc w, fc b (init)
  EXPECT_EQ(st.state_tensors, 2u);  // running mean / var

  // Conv 2*(2*4*8*8)*27 + 512 (bias); BN 8/element; Relu 1; MaxPool 4 per output; Gemm 2MNK+MN.
  EXPECT_DOUBLE_EQ(op_named(g, "/features/conv/Conv").flops, 28160);
  EXPECT_DOUBLE_EQ(op_named(g, "/features/bn/BatchNormalization").flops, 4096);
  EXPECT_DOUBLE_EQ(op_named(g, "/features/relu/Relu").flops, 512);
  EXPECT_DOUBLE_EQ(op_named(g, "/features/pool/MaxPool").flops, 512);
  EXPECT_DOUBLE_EQ(op_named(g, "/Flatten").flops, 0);
  EXPECT_DOUBLE_EQ(op_named(g, "/classifier/fc/Gemm").flops, 2580);
  EXPECT_DOUBLE_EQ(g.total_flops(), 35860);

  // Parameters on their consumers (bytes = values x 4); buffers as state.
  EXPECT_EQ(op_named(g, "/features/conv/Conv").param_bytes, 448u);  // 108 + 4
  EXPECT_EQ(op_named(g, "/features/bn/BatchNormalization").param_bytes, 32u);
  EXPECT_EQ(op_named(g, "/features/bn/BatchNormalization").state_bytes, 32u);
  EXPECT_EQ(op_named(g, "/classifier/fc/Gemm").param_bytes, 2600u);  // 640 + 10
  EXPECT_EQ(g.total_param_bytes(), 3080u);
  EXPECT_EQ(st.param_bytes, 3080u);
  EXPECT_EQ(st.state_bytes, 32u);

  // Categories, scopes, shapes, bytes.
  const Op& conv = op_named(g, "/features/conv/Conv");
  EXPECT_EQ(conv.category, OpCategory::kConv);
  EXPECT_EQ(conv.scope, "features.conv");
  EXPECT_EQ(conv.layer, -1);
  EXPECT_EQ(conv.dtype, DType::kF32);
  EXPECT_TRUE(conv.batch_scaled);
  ASSERT_EQ(conv.inputs.size(), 1u);  // weights are not graph tensors
  EXPECT_EQ(g.tensor(conv.inputs[0]).name, "x");
  EXPECT_EQ(g.tensor(conv.inputs[0]).producer, kNoOp);
  // Reads x (1536) + W (432) + b (16), writes 2048.
  EXPECT_EQ(conv.bytes_accessed, 4032u);
  EXPECT_EQ(op_named(g, "/Flatten").scope, "");
  EXPECT_EQ(op_named(g, "/Flatten").bytes_accessed, 1u);  // a view
  EXPECT_EQ(op_named(g, "/classifier/fc/Gemm").scope, "classifier.fc");
  EXPECT_EQ(op_named(g, "/classifier/fc/Gemm").category, OpCategory::kMatMul);
  EXPECT_EQ(op_named(g, "/features/pool/MaxPool").category, OpCategory::kPooling);
  EXPECT_EQ(tensor_named(g, "c").shape, (std::vector<int64_t>{2, 4, 8, 8}));
  EXPECT_EQ(tensor_named(g, "c").bytes, 2048u);
  EXPECT_EQ(tensor_named(g, "f").shape, (std::vector<int64_t>{2, 64}));
  EXPECT_EQ(tensor_named(g, "y").shape, (std::vector<int64_t>{2, 10}));
  EXPECT_EQ(g.num_tensors(), 7u);  // x and 6 op outputs
  // Attributes are kept as text.
  bool found = false;
  for (const auto& a : conv.attrs) found = found || (a.first == "pads" && a.second == "1,1,1,1");
  EXPECT_TRUE(found);
}

TEST(OnnxImport, ComputeDtypeScalesBytesNotFlops) {
  ImportOptions o;
  o.dtype = DType::kBF16;
  Graph g = import_onnx(fixture("conv_net.onnx"), o);
  EXPECT_DOUBLE_EQ(g.total_flops(), 35860);
  EXPECT_EQ(g.total_param_bytes(), 1540u);
  const Op& conv = op_named(g, "/features/conv/Conv");
  EXPECT_EQ(conv.dtype, DType::kBF16);
  EXPECT_EQ(conv.bytes_accessed, 2016u);
  EXPECT_EQ(tensor_named(g, "c").dtype, DType::kBF16);
  EXPECT_EQ(tensor_named(g, "c").bytes, 1024u);
}

TEST(OnnxImport, BatchSizeReplacesStaticBatch) {
  ImportOptions o;
  o.batch_size = 8;
  std::vector<std::string> warnings;
  ImportStats st;
  Graph g = import_onnx(fixture("conv_net.onnx"), o, &warnings, &st);
  EXPECT_EQ(g.batch_size(), 8);
  EXPECT_EQ(st.exported_batch, 2);
  EXPECT_DOUBLE_EQ(g.total_flops(), 4 * 35860.0);  // every op is linear in the batch
  EXPECT_EQ(g.total_param_bytes(), 3080u);         // parameters are not
  EXPECT_EQ(tensor_named(g, "y").shape, (std::vector<int64_t>{8, 10}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("static batch dimension 2"), std::string::npos) << warnings[0];
}

TEST(OnnxImport, ImportedGraphExpandsToATrainingStep) {
  Graph g = import_onnx(fixture("conv_net.onnx"));
  Graph step = expand_training_step(g);
  EXPECT_TRUE(step.is_training_step());
  // 6 forward ops, 6 backward ops (all on the gradient path: conv owns weights), 3 updates.
  EXPECT_EQ(step.num_ops(), 15u);
  EXPECT_EQ(step.total_param_bytes(), 3080u);
}

// ---------------------------------------------------------------- matmul_symbolic.onnx

TEST(OnnxImport, SymbolicDimsAndShapeFolding) {
  ImportOptions o;
  o.batch_size = 4;
  o.seq_len = 8;
  std::vector<std::string> warnings;
  ImportStats st;
  Graph g = import_onnx(fixture("matmul_symbolic.onnx"), o, &warnings, &st);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(g.batch_size(), 4);
  ASSERT_EQ(g.num_ops(), 10u);
  EXPECT_EQ(st.nodes, 26u);
  EXPECT_EQ(st.folded_nodes,
            16u);  // W^T, Shape/Gather/Cast/Sqrt, Shape/Gather/Mul/Concat, Constants
  ASSERT_EQ(st.data_input_shapes.size(), 1u);
  EXPECT_EQ(st.data_input_shapes[0], "x [4,8,16]");

  const std::string s = "/encoder/layer.0";
  EXPECT_DOUBLE_EQ(op_named(g, s + "/proj/MatMul").flops, 32768);
  EXPECT_DOUBLE_EQ(op_named(g, s + "/proj/Add").flops, 1024);
  EXPECT_DOUBLE_EQ(op_named(g, s + "/act/Relu").flops, 1024);
  EXPECT_DOUBLE_EQ(op_named(g, s + "/attn/Transpose").flops, 0);
  EXPECT_DOUBLE_EQ(op_named(g, s + "/attn/MatMul").flops, 16384);
  EXPECT_DOUBLE_EQ(op_named(g, s + "/attn/Div").flops, 256);
  EXPECT_DOUBLE_EQ(op_named(g, s + "/attn/Softmax").flops, 1280);
  EXPECT_DOUBLE_EQ(op_named(g, s + "/attn/MatMul_1").flops, 16384);
  EXPECT_DOUBLE_EQ(op_named(g, s + "/out/Reshape").flops, 0);
  EXPECT_DOUBLE_EQ(op_named(g, "/head/ReduceMean").flops, 1056);
  EXPECT_DOUBLE_EQ(g.total_flops(), 70176);
  EXPECT_EQ(g.find_op(s + "/proj/Transpose"), kNoOp);  // folded into the weight
  EXPECT_EQ(g.find_op(s + "/attn/Sqrt"), kNoOp);       // folded shape arithmetic

  // 'w_raw' (no parameter name) is a weight by its use: MatMul slot 1 through a Transpose.
  EXPECT_EQ(op_named(g, s + "/proj/MatMul").param_bytes, 2048u);
  EXPECT_EQ(op_named(g, s + "/proj/Add").param_bytes, 128u);
  EXPECT_EQ(tensor_named(g, "flat").shape, (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(tensor_named(g, "sc").shape, (std::vector<int64_t>{4, 8, 8}));
  EXPECT_EQ(tensor_named(g, "y").shape, (std::vector<int64_t>{32}));

  const Op& mm = op_named(g, s + "/attn/MatMul");
  EXPECT_EQ(mm.scope, "encoder.layer.0.attn");
  EXPECT_EQ(mm.layer, 0);
  EXPECT_EQ(mm.inputs.size(), 2u);  // h3 and its transpose
  EXPECT_EQ(op_named(g, "/head/ReduceMean").scope, "head");
  EXPECT_EQ(op_named(g, "/head/ReduceMean").layer, -1);
}

TEST(OnnxImport, DimOverridesByName) {
  ImportOptions o;
  o.dim_overrides = {{"batch", 4}, {"seq", 8}};
  Graph g = import_onnx(fixture("matmul_symbolic.onnx"), o);
  EXPECT_DOUBLE_EQ(g.total_flops(), 70176);
  EXPECT_EQ(g.batch_size(), 4);
}

TEST(OnnxImport, SymbolicBatchDefaultsToOneWithAWarning) {
  ImportOptions o;
  o.seq_len = 8;
  std::vector<std::string> warnings;
  Graph g = import_onnx(fixture("matmul_symbolic.onnx"), o, &warnings);
  EXPECT_EQ(g.batch_size(), 1);
  EXPECT_DOUBLE_EQ(g.total_flops(), 70176 / 4.0);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("symbolic batch dimension set to 1"), std::string::npos);
}

TEST(OnnxImport, SymbolicSequenceNeedsSeqLen) {
  const std::string msg =
      error_of<FormatError>([] { import_onnx(fixture("matmul_symbolic.onnx")); });
  EXPECT_NE(msg.find("matmul_symbolic.onnx: input 'x' dim 1 (of [batch,seq,16])"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("symbolic sequence length ('seq'); pass --seq-len"), std::string::npos) << msg;
}

// ---------------------------------------------------------------- recurrent.onnx

TEST(OnnxImport, RecurrentOpsPerTimeStep) {
  ImportStats st;
  Graph g = import_onnx(fixture("recurrent.onnx"), {}, nullptr, &st);
  ASSERT_EQ(g.num_ops(), 7u);
  EXPECT_EQ(g.batch_size(), 3);
  // D*T*B*(2GH(I+H) + GH + 2GH bias + E*H): LSTM 15*696, GRU 2*15*588, RNN 15*195 (no bias).
  EXPECT_DOUBLE_EQ(op_named(g, "/encoder/lstm/LSTM").flops, 10440);
  EXPECT_DOUBLE_EQ(op_named(g, "/decoder/gru/GRU").flops, 17640);
  EXPECT_DOUBLE_EQ(op_named(g, "/decoder/rnn/RNN").flops, 2925);
  EXPECT_DOUBLE_EQ(g.total_flops(), 31005);
  EXPECT_EQ(op_named(g, "/encoder/lstm/LSTM").category, OpCategory::kRecurrent);
  EXPECT_EQ(op_named(g, "/encoder/lstm/LSTM").param_bytes, 4u * (96 + 144 + 48));
  EXPECT_EQ(op_named(g, "/decoder/gru/GRU").param_bytes, 4u * (216 + 216 + 72));
  EXPECT_EQ(op_named(g, "/decoder/rnn/RNN").param_bytes, 4u * (60 + 25));
  EXPECT_EQ(g.total_param_bytes(), 3508u);
  EXPECT_EQ(tensor_named(g, "gy").shape, (std::vector<int64_t>{5, 2, 3, 6}));
  EXPECT_EQ(tensor_named(g, "ry").shape, (std::vector<int64_t>{5, 1, 3, 5}));
  EXPECT_EQ(op_named(g, "/decoder/gru/GRU").scope, "decoder.gru");
  // Unused optional outputs (Y_h, Y_c) are tensors nobody reads.
  EXPECT_EQ(op_named(g, "/encoder/lstm/LSTM").outputs.size(), 3u);
}

// ---------------------------------------------------------------- unknown_op.onnx

TEST(OnnxImport, OpsWithoutRuleWarnOncePerType) {
  std::vector<std::string> warnings;
  ImportStats st;
  Graph g = import_onnx(fixture("unknown_op.onnx"), {}, &warnings, &st);
  ASSERT_EQ(g.num_ops(), 5u);
  EXPECT_DOUBLE_EQ(g.total_flops(), 80);  // 16 per op: 2 Relu by rule, 3 by the fallback
  EXPECT_DOUBLE_EQ(op_named(g, "/a/Hardmax").flops, 16);
  EXPECT_DOUBLE_EQ(op_named(g, "/b/Swish").flops, 16);
  EXPECT_EQ(st.unruled_op_types.at("Hardmax"), 2);
  EXPECT_EQ(st.unruled_op_types.at("com.example.Swish"), 1);
  int hardmax = 0, swish = 0, shape = 0;
  for (const std::string& w : warnings) {
    hardmax +=
        w == "op type 'Hardmax' has no cost rule: 2 nodes estimated at 1 FLOP per output element";
    swish += w.find("op type 'com.example.Swish' has no cost rule: 1 node") != std::string::npos;
    shape +=
        w.find("node '/b/Swish' (Swish): custom op without shape inference") != std::string::npos;
  }
  EXPECT_EQ(hardmax, 1);
  EXPECT_EQ(swish, 1);
  EXPECT_EQ(shape, 1);
  EXPECT_EQ(warnings.size(), 3u);
  EXPECT_EQ(tensor_named(g, "d").shape, (std::vector<int64_t>{2, 8}));
  bool has_domain = false;
  for (const auto& a : op_named(g, "/b/Swish").attrs)
    has_domain |= a.first == "domain" && a.second == "com.example";
  EXPECT_TRUE(has_domain);
}

// ---------------------------------------------------------------- bad input

TEST(OnnxImportErrors, MissingFile) {
  const std::string msg = error_of<FileError>([] { import_onnx(fixture("does_not_exist.onnx")); });
  EXPECT_NE(msg.find("does_not_exist.onnx: cannot open"), std::string::npos) << msg;
}

TEST(OnnxImportErrors, Directory) {
  const std::string msg = error_of<FileError>([] { import_onnx(fixture("")); });
  EXPECT_NE(msg.find("is a directory"), std::string::npos) << msg;
}

TEST(OnnxImportErrors, NotOnnx) {
  const std::string msg = error_of<FormatError>([] { import_onnx(fixture("not_onnx.onnx")); });
  EXPECT_NE(msg.find("not_onnx.onnx: not a valid ONNX model (protobuf parsing failed"),
            std::string::npos)
      << msg;
}

TEST(OnnxImportErrors, Truncated) {
  const std::string msg = error_of<FormatError>([] { import_onnx(fixture("truncated.onnx")); });
  EXPECT_NE(msg.find("truncated.onnx: not a valid ONNX model (protobuf parsing failed: the file "
                     "is truncated or not an ONNX file)"),
            std::string::npos)
      << msg;
}

TEST(OnnxImportErrors, OpsetTooNew) {
  const std::string msg = error_of<FormatError>([] { import_onnx(fixture("opset_too_new.onnx")); });
  EXPECT_NE(msg.find("opset_import: opset 18 is newer than this build's ONNX library supports"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("re-export with opset_version <= 17"), std::string::npos) << msg;
}

TEST(OnnxImportErrors, ShapeInferenceCannotFill) {
  const std::string msg = error_of<FormatError>([] { import_onnx(fixture("missing_shape.onnx")); });
  EXPECT_NE(msg.find("missing_shape.onnx: node '/layer1/Reshape' (Reshape): output shape unknown "
                     "after shape inference; pass --batch-size/--seq-len or export with static "
                     "shapes"),
            std::string::npos)
      << msg;
}

TEST(OnnxImportErrors, NonPositiveDimOverride) {
  ImportOptions o;
  o.dim_overrides = {{"seq", 0}};
  const std::string msg =
      error_of<FormatError>([&] { import_onnx(fixture("matmul_symbolic.onnx"), o); });
  EXPECT_NE(msg.find("--dim seq: must be positive"), std::string::npos) << msg;
}

// ---------------------------------------------------------------- models built in C++

onnx::ModelProto tiny_model(int opset = 14) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("tiny");
  auto add_input = [&](const std::string& name, std::vector<int64_t> dims) {
    auto* in = g->add_input();
    in->set_name(name);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  };
  add_input("input.1", {3, 5});  // torch's renamed input: data, not a parameter
  add_input("w", {5, 7});        // a weight only by its MatMul slot
  auto* n = g->add_node();
  n->set_name("/fc/MatMul");
  n->set_op_type("MatMul");
  n->add_input("input.1");
  n->add_input("w");
  n->add_output("h");
  n = g->add_node();
  n->set_name("/act/Relu");
  n->set_op_type("Relu");
  n->add_input("h");
  n->add_output("y");
  return m;
}

TEST(OnnxImportBytes, DataAndWeightInputsByRule) {
  ImportStats st;
  Graph g = import_onnx_bytes(tiny_model().SerializeAsString(), "tiny.onnx", {}, nullptr, &st);
  EXPECT_EQ(g.name(), "tiny");
  EXPECT_EQ(st.data_inputs, 1u);
  EXPECT_EQ(st.param_tensors, 1u);
  EXPECT_EQ(g.batch_size(), 3);
  EXPECT_DOUBLE_EQ(op_named(g, "/fc/MatMul").flops, 2.0 * 3 * 7 * 5);
  EXPECT_EQ(op_named(g, "/fc/MatMul").param_bytes, 4u * 35);
  EXPECT_DOUBLE_EQ(op_named(g, "/act/Relu").flops, 21);

  // Forcing 'w' to be data: two graph inputs, no parameters.
  ImportOptions o;
  o.data_inputs = {"w"};
  Graph g2 = import_onnx_bytes(tiny_model().SerializeAsString(), "tiny.onnx", o, nullptr, &st);
  EXPECT_EQ(st.data_inputs, 2u);
  EXPECT_EQ(g2.total_param_bytes(), 0u);
  EXPECT_EQ(op_named(g2, "/fc/MatMul").inputs.size(), 2u);
}

TEST(OnnxImportBytes, NodesOutOfOrder) {
  onnx::ModelProto m = tiny_model();
  m.mutable_graph()->mutable_node()->SwapElements(0, 1);
  const std::string msg =
      error_of<FormatError>([&] { import_onnx_bytes(m.SerializeAsString(), "swapped.onnx"); });
  EXPECT_NE(msg.find("swapped.onnx: node '/act/Relu' (Relu): reads 'h', which is neither a graph "
                     "input, an initializer nor the output of an earlier node"),
            std::string::npos)
      << msg;
}

TEST(OnnxImportBytes, EmptyAndNoGraph) {
  EXPECT_NE(
      error_of<FormatError>([] { import_onnx_bytes("", "e.onnx"); }).find("e.onnx: empty file"),
      std::string::npos);
  onnx::ModelProto m;
  m.set_ir_version(7);  // parses, but holds no graph
  EXPECT_NE(error_of<FormatError>([&] {
              import_onnx_bytes(m.SerializeAsString(), "n.onnx");
            }).find("not an ONNX model (no graph"),
            std::string::npos);
  onnx::ModelProto no_opset = tiny_model();
  no_opset.clear_opset_import();
  EXPECT_NE(error_of<FormatError>([&] {
              import_onnx_bytes(no_opset.SerializeAsString(), "o.onnx");
            }).find("o.onnx: opset_import: no opset for the default (ai.onnx) domain"),
            std::string::npos);
}

TEST(OnnxImportBytes, SymbolicNonBatchDimNeedsOverride) {
  onnx::ModelProto m = tiny_model();
  auto* d = m.mutable_graph()
                ->mutable_input(0)
                ->mutable_type()
                ->mutable_tensor_type()
                ->mutable_shape()
                ->mutable_dim(1);
  d->set_dim_param("features");
  const std::string msg =
      error_of<FormatError>([&] { import_onnx_bytes(m.SerializeAsString(), "s.onnx"); });
  EXPECT_NE(msg.find("input 'input.1' dim 1 (of [3,features]): is symbolic ('features'); pass "
                     "--dim features=VALUE"),
            std::string::npos)
      << msg;
  ImportOptions o;
  o.dim_overrides = {{"features", 5}};
  Graph g = import_onnx_bytes(m.SerializeAsString(), "s.onnx", o);
  EXPECT_DOUBLE_EQ(g.total_flops(), 2.0 * 3 * 7 * 5 + 21);
}

TEST(OnnxImportBytes, InferenceErrorIsPartOfTheMessage) {
  onnx::ModelProto m = tiny_model();
  // [3,5] @ [4,7]: ONNX's MatMul inference rejects the contraction dims.
  m.mutable_graph()
      ->mutable_input(1)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_value(4);
  const std::string msg =
      error_of<FormatError>([&] { import_onnx_bytes(m.SerializeAsString(), "bad_mm.onnx"); });
  EXPECT_NE(msg.find("bad_mm.onnx: node '/fc/MatMul' (MatMul): output shape unknown after shape "
                     "inference"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("(ONNX shape inference reported: [ShapeInferenceError]"), std::string::npos)
      << msg;
}

// ---------------------------------------------------------------- old opsets, training domains

// conv_net as ONNX's pytorch-converted test models are written (IR 3, opset 6, broadcast=1
// attributes, is_test=1): upgraded to opset 7 by the version converter, then imported with
// the hand counts of make_test_onnx.py's opset6_conv_net.
TEST(OnnxImportUpgrade, Opset6ModelIsUpgradedAndImported) {
  std::vector<std::string> warnings;
  ImportStats st;
  Graph g = import_onnx(fixture("opset6_conv_net.onnx"), {}, &warnings, &st);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(st.upgraded_from, 6);
  EXPECT_EQ(st.opset, 7);
  EXPECT_EQ(st.ir_version, 3);
  EXPECT_EQ(st.data_inputs, 1u);  // x; the initializers listed as inputs are weights
  EXPECT_EQ(st.param_tensors, 6u);
  EXPECT_EQ(st.state_tensors, 2u);
  EXPECT_EQ(st.nodes, 9u);         // 8 + the Unsqueeze the converter put on the conv bias
  EXPECT_EQ(st.folded_nodes, 1u);  // that Unsqueeze: a weight re-layout
  ASSERT_EQ(g.num_ops(), 8u);
  EXPECT_EQ(g.batch_size(), 2);
  EXPECT_DOUBLE_EQ(op_named(g, "conv").flops, 27648);
  EXPECT_DOUBLE_EQ(op_named(g, "conv_bias").flops, 512);
  EXPECT_DOUBLE_EQ(op_named(g, "bn").flops, 4096);
  EXPECT_DOUBLE_EQ(op_named(g, "pool").flops, 512);
  EXPECT_DOUBLE_EQ(op_named(g, "fc").flops, 2580);
  EXPECT_DOUBLE_EQ(op_named(g, "dropout").flops, 20);
  EXPECT_DOUBLE_EQ(g.total_flops(), 35880);
  EXPECT_EQ(op_named(g, "conv_bias").param_bytes, 16u);  // through the inserted Unsqueeze
  EXPECT_EQ(op_named(g, "bn").state_bytes, 32u);
  EXPECT_EQ(g.total_param_bytes(), 3080u);
  EXPECT_EQ(tensor_named(g, "y").shape, (std::vector<int64_t>{2, 10}));
  // The old attributes are gone: Gemm's broadcast, BatchNormalization's is_test.
  for (const char* name : {"fc", "bn", "conv_bias", "dropout"}) {
    for (const auto& a : op_named(g, name).attrs) {
      EXPECT_NE(a.first, "broadcast") << name;
      EXPECT_NE(a.first, "is_test") << name;
    }
  }
}

TEST(OnnxImportUpgrade, BatchIsSubstitutedBeforeTheUpgrade) {
  // --batch-size replaces the static batch 2 first; the converter sees batch 8 shapes.
  ImportOptions o;
  o.batch_size = 8;
  ImportStats st;
  Graph g = import_onnx(fixture("opset6_conv_net.onnx"), o, nullptr, &st);
  EXPECT_EQ(st.upgraded_from, 6);
  EXPECT_DOUBLE_EQ(g.total_flops(), 4 * 35880.0);
}

// A one-node model of default-domain opset `opset` (IR 3); `x` [2, 4] is its data input.
onnx::ModelProto old_model(int opset, const std::string& op_type) {
  onnx::ModelProto m;
  m.set_ir_version(3);
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(opset);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("old");
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("N");  // symbolic: substituted before upgrading
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  auto* n = g->add_node();
  n->set_name("/" + op_type);
  n->set_op_type(op_type);
  n->add_input("x");
  n->add_output("y");
  g->add_output()->set_name("y");
  return m;
}

TEST(OnnxImportUpgrade, Opset4ReshapeAttributeBecomesAnInput) {
  // Reshape-1's `shape` attribute becomes a Constant input (4 -> 5), then 5 -> 6 -> 7.
  onnx::ModelProto m = old_model(4, "Reshape");
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("shape");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(0);
  a->add_ints(2);
  a->add_ints(2);
  ImportOptions o;
  o.batch_size = 3;
  ImportStats st;
  Graph g = import_onnx_bytes(m.SerializeAsString(), "reshape4.onnx", o, nullptr, &st);
  EXPECT_EQ(st.upgraded_from, 4);
  EXPECT_EQ(st.opset, 7);
  EXPECT_EQ(tensor_named(g, "y").shape, (std::vector<int64_t>{3, 2, 2}));
}

TEST(OnnxImportUpgrade, RecurrentOpsWithoutALibraryAdapter) {
  // ONNX 1.12's converter has no 6 -> 7 adapter for LSTM; LSTM-7 only dropped
  // output_sequence, so placer adds one that removes it.
  onnx::ModelProto m = old_model(6, "LSTM");
  onnx::GraphProto* g = m.mutable_graph();
  auto* x = g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  x->mutable_dim(0)->set_dim_value(5);  // [seq 5, batch 2, input 4], all static
  x->mutable_dim(1)->set_dim_value(2);
  x->add_dim()->set_dim_value(4);
  for (const auto& [name, rows, cols] :
       {std::tuple<const char*, int, int>{"W", 32, 4}, {"R", 32, 8}}) {
    auto* w = g->add_initializer();
    w->set_name(std::string("lstm.") + name);
    w->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {1, rows, cols}) w->add_dims(d);
    for (int i = 0; i < rows * cols; ++i) w->add_float_data(0.f);
    g->mutable_node(0)->add_input(w->name());
    auto* listed = g->add_input();  // IR 3: initializers are graph inputs too
    listed->set_name(w->name());
    auto* wt = listed->mutable_type()->mutable_tensor_type();
    wt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {1, rows, cols}) wt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  auto* n = g->mutable_node(0);
  auto* hs = n->add_attribute();
  hs->set_name("hidden_size");
  hs->set_type(onnx::AttributeProto::INT);
  hs->set_i(8);
  auto* seq = n->add_attribute();
  seq->set_name("output_sequence");
  seq->set_type(onnx::AttributeProto::INT);
  seq->set_i(1);
  ImportStats st;
  Graph g2 = import_onnx_bytes(m.SerializeAsString(), "lstm6.onnx", {}, nullptr, &st);
  EXPECT_EQ(st.upgraded_from, 6);
  EXPECT_EQ(tensor_named(g2, "y").shape, (std::vector<int64_t>{5, 1, 2, 8}));
  EXPECT_EQ(g2.total_param_bytes(), 4u * (32 * 4 + 32 * 8));
}

TEST(OnnxImportErrors, OpsetTheConverterCannotUpgrade) {
  // Cast-1's `to` was a string; ONNX 1.12's converter has no 5 -> 6 adapter for it.
  onnx::ModelProto m = old_model(5, "Cast");
  auto* to = m.mutable_graph()->mutable_node(0)->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::STRING);
  to->set_s("FLOAT16");
  const std::string msg =
      error_of<FormatError>([&] { import_onnx_bytes(m.SerializeAsString(), "cast5.onnx"); });
  EXPECT_EQ(msg,
            "cast5.onnx: opset_import: opset 5 is older than 7 and ONNX's version converter "
            "cannot upgrade it: No Adapter From Version $5 for Cast");
}

TEST(OnnxImportErrors, UpgradeOfAGraphOutputNothingDefines) {
  // libonnx's IR import would dereference the missing producer (a crash); found by fuzzing.
  onnx::ModelProto m = old_model(6, "Relu");
  m.mutable_graph()->mutable_node(0)->set_output(0, "z");
  const std::string msg =
      error_of<FormatError>([&] { import_onnx_bytes(m.SerializeAsString(), "cut.onnx"); });
  EXPECT_EQ(msg, "cut.onnx: graph output 'y': is the output of no node and no graph input "
                 "(truncated or corrupt file?)");
}

TEST(OnnxImportErrors, OpsetZero) {
  onnx::ModelProto m = old_model(0, "Relu");
  const std::string msg =
      error_of<FormatError>([&] { import_onnx_bytes(m.SerializeAsString(), "zero.onnx"); });
  EXPECT_EQ(msg,
            "zero.onnx: opset_import: opset 0 is not an ONNX opset (they start at 1; truncated "
            "file?)");
}

// ONNX's test_identity: the input passes through an Identity to the output. It is data (one
// view op), not a weight that folding would leave as a graph of constants only.
TEST(OnnxImport, PassThroughInputIsData) {
  ImportStats st;
  Graph g = import_onnx(fixture("pass_through.onnx"), {}, nullptr, &st);
  EXPECT_EQ(st.data_inputs, 1u);
  EXPECT_EQ(st.param_tensors, 0u);
  ASSERT_EQ(g.num_ops(), 1u);
  const Op& id = g.op(0);
  EXPECT_EQ(id.type, "Identity");
  EXPECT_DOUBLE_EQ(id.flops, 0);
  ASSERT_EQ(id.inputs.size(), 1u);
  EXPECT_EQ(g.tensor(id.inputs[0]).name, "x");
  EXPECT_EQ(tensor_named(g, "y").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(g.batch_size(), 2);
}

TEST(OnnxImport, PassThroughChainBesideAWeightSlot) {
  // x -> Transpose -> y (a graph output) and Transpose(x) -> MatMul slot 1: x still reaches an
  // output through layout ops only, so it is data, whatever else reads it.
  onnx::ModelProto m = tiny_model();
  onnx::GraphProto* g = m.mutable_graph();
  auto* t = g->add_node();
  t->set_name("/T");
  t->set_op_type("Transpose");
  t->add_input("w");
  t->add_output("wt");
  g->add_output()->set_name("wt");
  ImportStats st;
  import_onnx_bytes(m.SerializeAsString(), "tiny.onnx", {}, nullptr, &st);
  EXPECT_EQ(st.data_inputs, 2u);
  EXPECT_EQ(st.param_tensors, 0u);
}

TEST(OnnxImportErrors, NoNodesOutputsAreInputs) {
  onnx::ModelProto m = tiny_model();
  m.mutable_graph()->clear_node();
  m.mutable_graph()->add_output()->set_name("input.1");
  const std::string msg =
      error_of<FormatError>([&] { import_onnx_bytes(m.SerializeAsString(), "empty.onnx"); });
  EXPECT_EQ(msg, "empty.onnx: graph: has no nodes: its outputs are its inputs, there is nothing "
                 "to compute");
}

TEST(OnnxImportErrors, TrainingDomainModel) {
  const std::string path = fixture("training_adagrad.onnx");
  const std::string msg = error_of<FormatError>([&] { import_onnx(path); });
  EXPECT_EQ(msg, path +
                     ": node '#0' (Adagrad): domain 'ai.onnx.preview.training' holds training "
                     "operators (optimizer updates, gradients); placer imports a model's forward "
                     "graph and derives the training step itself: export the model for inference");
}

TEST(OnnxImportErrors, TrainingDomainOnlyImported) {
  onnx::ModelProto m = tiny_model();
  m.clear_opset_import();
  auto* os = m.add_opset_import();
  os->set_domain("ai.onnx.training");
  os->set_version(1);
  const std::string msg =
      error_of<FormatError>([&] { import_onnx_bytes(m.SerializeAsString(), "t.onnx"); });
  EXPECT_EQ(msg, "t.onnx: opset_import: domain 'ai.onnx.training' holds training operators "
                 "(optimizer updates, gradients); placer imports a model's forward graph and "
                 "derives the training step itself: export the model for inference");
}

// Blocks of Shape -> Gather -> Div -> Unsqueeze -> Concat -> Reshape -> MatMul -> Relu over x
// [batch, 4, 8] with a symbolic batch. ONNX's data propagation stops at Div, so after the
// whole-graph pass every block's Reshape (and all that follows) is unsized; the folding sweep
// must size them all in one go.
TEST(OnnxImportBytes, ShapeChainsThroughDivResolveInOneSweep) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("batch");
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  tt->mutable_shape()->add_dim()->set_dim_value(8);
  auto node = [&](const std::string& type, const std::string& name, std::vector<std::string> ins) {
    auto* n = g->add_node();
    n->set_op_type(type);
    n->set_name(name);
    for (const auto& i : ins) n->add_input(i);
    n->add_output(name);
    return n;
  };
  auto constant = [&](const std::string& name, std::vector<int64_t> v, bool scalar) {
    auto* a = node("Constant", name, {})->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
    if (!scalar) a->mutable_t()->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) a->mutable_t()->add_int64_data(x);
  };
  std::string x = "x";
  constexpr int kBlocks = 3;
  for (int i = 0; i < kBlocks; ++i) {
    const std::string s = "/layers." + std::to_string(i) + "/";
    auto* w = g->add_input();
    w->set_name("layers." + std::to_string(i) + ".weight");
    auto* wt = w->mutable_type()->mutable_tensor_type();
    wt->set_elem_type(onnx::TensorProto::FLOAT);
    wt->mutable_shape()->add_dim()->set_dim_value(8);
    wt->mutable_shape()->add_dim()->set_dim_value(8);
    node("Shape", s + "Shape", {x});
    constant(s + "c0", {0}, true);
    node("Gather", s + "Gather", {s + "Shape", s + "c0"});
    constant(s + "c1", {1}, true);
    node("Div", s + "Div", {s + "Gather", s + "c1"});
    constant(s + "c2", {0}, false);
    node("Unsqueeze", s + "Unsqueeze", {s + "Div", s + "c2"});
    constant(s + "c3", {-1, 8}, false);
    auto* axis = node("Concat", s + "Concat", {s + "Unsqueeze", s + "c3"})->add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(0);
    node("Reshape", s + "Reshape", {x, s + "Concat"});
    node("MatMul", s + "MatMul", {s + "Reshape", w->name()});
    node("Relu", s + "Relu", {s + "MatMul"});
    x = s + "Relu";
  }
  ImportOptions o;
  o.batch_size = 2;
  ImportStats st;
  std::vector<std::string> warnings;
  Graph graph = import_onnx_bytes(m.SerializeAsString(), "chain.onnx", o, &warnings, &st);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(graph.num_ops(), 3u * kBlocks);  // Reshape, MatMul, Relu
  EXPECT_EQ(st.shape_folds, 5u * kBlocks);   // Shape, Gather, Div, Unsqueeze, Concat
  EXPECT_EQ(st.inference_passes, 1u);
  EXPECT_GT(st.nodes_reinferred, 0u);
  // Reshape target: Concat of [batch] and [-1, 8] = [2, -1, 8], so x stays [2, 4, 8];
  // per block MatMul 2*(2*4*8)*8, Relu 64.
  EXPECT_DOUBLE_EQ(graph.total_flops(), kBlocks * (2.0 * 64 * 8 + 64));
  EXPECT_EQ(tensor_named(graph, "/layers.2/Relu").shape, (std::vector<int64_t>{2, 4, 8}));
}

// ---------------------------------------------------------------- scopes

TEST(OnnxScope, TorchNodeNames) {
  int32_t layer = 0;
  EXPECT_EQ(onnx_node_scope("/encoder/layer.3/attention/self/MatMul_1", &layer),
            "encoder.layer.3.attention.self");
  EXPECT_EQ(layer, 3);
  EXPECT_EQ(onnx_node_scope("/layer1/layer1.0/conv1/Conv", &layer), "layer1.0.conv1");
  EXPECT_EQ(layer, -1);
  EXPECT_EQ(onnx_node_scope("/layer2/layer2.1/downsample/downsample.0/Conv", &layer),
            "layer2.1.downsample.0");
  EXPECT_EQ(onnx_node_scope("/encoder/layers.11/self_attn/Softmax", &layer),
            "encoder.layers.11.self_attn");
  EXPECT_EQ(layer, 11);
  EXPECT_EQ(onnx_node_scope("/transformer/h.7/mlp/c_fc/Gemm", &layer), "transformer.h.7.mlp.c_fc");
  EXPECT_EQ(layer, 7);
  EXPECT_EQ(onnx_node_scope("/blocks/blocks.2/attn/MatMul", &layer), "blocks.2.attn");
  EXPECT_EQ(layer, 2);
  EXPECT_EQ(onnx_node_scope("/encoder/layers/encoder_layer_4/mlp/Gelu", &layer),
            "encoder.layers.encoder_layer_4.mlp");
  EXPECT_EQ(layer, 4);
  EXPECT_EQ(onnx_node_scope("/Flatten", &layer), "");
  EXPECT_EQ(layer, -1);
  EXPECT_EQ(onnx_node_scope("Conv_12", &layer), "");
  EXPECT_EQ(onnx_node_scope("", &layer), "");
}

}  // namespace
}  // namespace placer
