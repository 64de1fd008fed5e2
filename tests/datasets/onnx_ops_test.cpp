// ONNX import: the per-op FLOP rules, on hand-made fixtures (ops_zoo.onnx, conv_zoo.onnx)
// and on single nodes.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "datasets/onnx_cost.h"
#include "datasets/onnx_import.h"
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

TEST(OnnxOps, TransformerStyleOps) {
  std::vector<std::string> warnings;
  ImportStats st;
  Graph g = import_onnx(fixture("ops_zoo.onnx"), {}, &warnings, &st);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(st.opset, 17);
  ASSERT_EQ(g.num_ops(), 38u);
  EXPECT_EQ(st.folded_nodes, 14u);  // 14 Constant nodes

  // x is [2, 4, 8]: 64 elements; the row statistics [2, 4, 1]: 8.
  const std::map<std::string, double> expected = {
      {"/embed/Gather", 0},
      {"/embed/pos/Gather", 0},
      {"/embed/Add", 64},
      {"/ln/LayerNormalization", 512},
      // Decomposed layer norm: each piece as elementwise / reduction.
      {"/ln2/ReduceMean", 72},
      {"/ln2/Sub", 64},
      {"/ln2/Pow", 64},
      {"/ln2/ReduceMean_1", 72},
      {"/ln2/Add", 8},
      {"/ln2/Sqrt", 8},
      {"/ln2/Div", 64},
      {"/ln2/Mul", 64},
      {"/ln2/Add_1", 64},
      // GELU through Erf (Erf: 4 per element).
      {"/mlp/act/Div", 64},
      {"/mlp/act/Erf", 256},
      {"/mlp/act/Add", 64},
      {"/mlp/act/Mul", 64},
      {"/mlp/act/Mul_1", 64},
      {"/mlp/Tanh", 256},
      {"/mlp/Sigmoid", 256},
      {"/mask/Greater", 64},
      {"/mask/Where", 64},
      {"/mask/ReduceMean", 72},
      {"/mask/Expand", 0},
      {"/mask/Add", 64},
      {"/mask/Cast", 64},
      {"/split/Split", 0},
      {"/split/Concat", 0},
      {"/split/Slice", 0},
      {"/head/Dropout", 64},
      {"/head/LogSoftmax", 320},
      {"/head/Softmax", 320},
      {"/head/Unsqueeze", 0},
      {"/head/Squeeze", 0},
      {"/head/ReduceSum", 64},
      {"/head/ReduceMax", 64},
      {"/lm/Reshape", 0},
      {"/lm/Gemm", 1280},
  };
  double total = 0;
  for (const auto& [name, flops] : expected) {
    EXPECT_DOUBLE_EQ(op_named(g, name).flops, flops) << name;
    total += flops;
  }
  EXPECT_DOUBLE_EQ(total, 4520);
  EXPECT_DOUBLE_EQ(g.total_flops(), 4520);

  // Embedding: a Gather from a parameter table reads only the gathered rows.
  const Op& emb = op_named(g, "/embed/Gather");
  EXPECT_EQ(emb.category, OpCategory::kEmbedding);
  EXPECT_EQ(emb.param_bytes, 320u);     // [10, 8]
  EXPECT_EQ(emb.bytes_accessed, 576u);  // ids 64 + rows 256 + output 256
  // The position lookup reads only weights and constants: no input tensor, not batch-scaled.
  const Op& pos = op_named(g, "/embed/pos/Gather");
  EXPECT_TRUE(pos.inputs.empty());
  EXPECT_FALSE(pos.batch_scaled);
  EXPECT_EQ(pos.param_bytes, 128u);
  EXPECT_FALSE(g.tensor(pos.outputs[0]).batch_scaled);
  EXPECT_TRUE(op_named(g, "/embed/Add").batch_scaled);
  // The tied LM head reads the embedding table; its first consumer owns it.
  EXPECT_EQ(op_named(g, "/lm/Gemm").param_bytes, 0u);
  EXPECT_EQ(op_named(g, "/lm/Gemm").bytes_accessed, 256u + 320 + 320);
  EXPECT_EQ(g.total_param_bytes(), 4u * (80 + 32 + 8 + 8 + 8 + 8));

  EXPECT_EQ(op_named(g, "/ln/LayerNormalization").category, OpCategory::kNormalization);
  EXPECT_EQ(op_named(g, "/ln2/ReduceMean").category, OpCategory::kReduction);
  EXPECT_EQ(op_named(g, "/ln2/Pow").category, OpCategory::kElementwise);
  EXPECT_EQ(op_named(g, "/split/Split").category, OpCategory::kDataMovement);
  EXPECT_EQ(op_named(g, "/split/Split").outputs.size(), 2u);
  EXPECT_EQ(op_named(g, "/head/Softmax").category, OpCategory::kSoftmax);
  EXPECT_EQ(op_named(g, "/head/Squeeze").bytes_accessed, 1u);  // views move nothing
  EXPECT_EQ(op_named(g, "/split/Concat").bytes_accessed, 2u * 256);
  EXPECT_EQ(op_named(g, "/mask/Greater").outputs.size(), 1u);
  EXPECT_EQ(g.tensor(op_named(g, "/mask/Greater").outputs[0]).dtype, DType::kBool);
  EXPECT_EQ(g.tensor(op_named(g, "/mask/Greater").outputs[0]).bytes, 64u);
}

TEST(OnnxOps, ConvolutionVariantsAndPooling) {
  Graph g = import_onnx(fixture("conv_zoo.onnx"));
  ASSERT_EQ(g.num_ops(), 11u);
  // Depthwise, dilated: W [4,1,3,3] -> 9 MACs per output; + bias.
  EXPECT_DOUBLE_EQ(op_named(g, "/dw/Conv").flops, 2 * 256 * 9 + 256);
  // ConvTranspose: every input element meets Cout/group x kernel = 2*2*2 weights.
  EXPECT_DOUBLE_EQ(op_named(g, "/up/ConvTranspose").flops, 2 * 256 * 8 + 1024);
  EXPECT_EQ(g.tensor(op_named(g, "/up/ConvTranspose").outputs[0]).shape,
            (std::vector<int64_t>{1, 4, 16, 16}));
  EXPECT_DOUBLE_EQ(op_named(g, "/norm/InstanceNormalization").flops, 8 * 1024);
  EXPECT_DOUBLE_EQ(op_named(g, "/pool/AveragePool").flops, 256 * 4);
  EXPECT_DOUBLE_EQ(op_named(g, "/gap/GlobalAveragePool").flops, 256 + 4);
  EXPECT_DOUBLE_EQ(op_named(g, "/act/Sigmoid").flops, 4 * 4);
  EXPECT_DOUBLE_EQ(op_named(g, "/scale/Mul").flops, 256);
  EXPECT_DOUBLE_EQ(op_named(g, "/pool2/MaxPool").flops, 256 * 9);
  EXPECT_DOUBLE_EQ(op_named(g, "/act2/Tanh").flops, 4 * 256);
  EXPECT_DOUBLE_EQ(op_named(g, "/head/Flatten").flops, 0);
  EXPECT_DOUBLE_EQ(op_named(g, "/head/MatMul").flops, 2 * 256 * 3);
  EXPECT_DOUBLE_EQ(g.total_flops(), 24596);
  EXPECT_EQ(op_named(g, "/gap/GlobalAveragePool").category, OpCategory::kReduction);
  EXPECT_EQ(op_named(g, "/up/ConvTranspose").category, OpCategory::kConv);
  EXPECT_EQ(op_named(g, "/dw/Conv").param_bytes, 4u * (36 + 4));
  EXPECT_EQ(op_named(g, "/norm/InstanceNormalization").param_bytes, 32u);
}

// ---------------------------------------------------------------- single nodes

using onnx_import::node_cost;
using onnx_import::ValueDesc;

ValueDesc shaped(std::vector<int64_t> shape, bool param = false) {
  ValueDesc v;
  v.present = true;
  v.shape_known = true;
  v.shape = shape;
  v.elems = 1;
  for (int64_t d : shape) v.elems *= static_cast<double>(d);
  v.is_param = param;
  return v;
}

onnx::NodeProto node(const std::string& type) {
  onnx::NodeProto n;
  n.set_op_type(type);
  n.set_name("/n/" + type);
  return n;
}

void set_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

TEST(OnnxOpRules, BatchedBroadcastMatMul) {
  // [2, 1, 5, 3] @ [4, 3, 6] -> [2, 4, 5, 6]: 240 outputs x K=3 x 2.
  const auto c =
      node_cost(node("MatMul"), {shaped({2, 1, 5, 3}), shaped({4, 3, 6})}, {shaped({2, 4, 5, 6})});
  EXPECT_DOUBLE_EQ(c.flops, 2 * 240 * 3);
  EXPECT_EQ(c.category, OpCategory::kMatMul);
  // A vector times a matrix: K is the vector's only dim.
  EXPECT_DOUBLE_EQ(node_cost(node("MatMul"), {shaped({7}), shaped({7, 2})}, {shaped({2})}).flops,
                   2 * 2 * 7);
}

TEST(OnnxOpRules, GemmTransposedA) {
  onnx::NodeProto n = node("Gemm");
  set_int(&n, "transA", 1);
  // A^T: A is [K=6, M=4]; B [6, 5]; C present: 2*4*5*6 + 20.
  const auto c =
      node_cost(n, {shaped({6, 4}), shaped({6, 5}, true), shaped({5}, true)}, {shaped({4, 5})});
  EXPECT_DOUBLE_EQ(c.flops, 2 * 4 * 5 * 6 + 20);
}

TEST(OnnxOpRules, Einsum) {
  onnx::NodeProto n = node("Einsum");
  auto* a = n.add_attribute();
  a->set_name("equation");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("bhqd,bhkd->bhqk");
  // Iteration space b*h*q*k*d = 2*3*4*5*8.
  const auto c = node_cost(n, {shaped({2, 3, 4, 8}), shaped({2, 3, 5, 8})}, {shaped({2, 3, 4, 5})});
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 2 * 3 * 4 * 5 * 8);
  EXPECT_TRUE(c.has_rule);
}

TEST(OnnxOpRules, LstmBatchMajorLayoutAndPeepholes) {
  onnx::NodeProto n = node("LSTM");
  set_int(&n, "hidden_size", 2);
  set_int(&n, "layout", 1);
  ValueDesc absent;
  // X [B=3, T=4, I=5]; W [1, 8, 5]; R [1, 8, 2]; no B; P (slot 7) present.
  const auto c = node_cost(n,
                           {shaped({3, 4, 5}), shaped({1, 8, 5}, true), shaped({1, 8, 2}, true),
                            absent, absent, absent, absent, shaped({1, 6}, true)},
                           {shaped({3, 4, 1, 2})});
  // Per step: 2*4*2*(5+2) = 112, + 8 (gate sum) + 24*2 + 6*2 (peepholes) = 180; x T*B = 12.
  EXPECT_DOUBLE_EQ(c.flops, 12 * 180);
}

TEST(OnnxOpRules, VariadicAndResize) {
  // Sum of 3 inputs: 2 additions per element; Mean adds the division.
  EXPECT_DOUBLE_EQ(
      node_cost(node("Sum"), {shaped({4}), shaped({4}), shaped({4})}, {shaped({4})}).flops, 8);
  EXPECT_DOUBLE_EQ(
      node_cost(node("Mean"), {shaped({4}), shaped({4}), shaped({4})}, {shaped({4})}).flops, 12);
  onnx::NodeProto r = node("Resize");
  auto* a = r.add_attribute();
  a->set_name("mode");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("linear");
  // Bilinear on [1, 2, 4, 4]: 2 * 2^2 per output element.
  EXPECT_DOUBLE_EQ(node_cost(r, {shaped({1, 2, 2, 2})}, {shaped({1, 2, 4, 4})}).flops, 32 * 8);
  EXPECT_DOUBLE_EQ(node_cost(node("Resize"), {shaped({1, 2, 2, 2})}, {shaped({1, 2, 4, 4})}).flops,
                   0);
}

TEST(OnnxOpRules, MissingShapeIsReported) {
  ValueDesc unknown;
  unknown.present = true;
  EXPECT_THROW(node_cost(node("Conv"), {shaped({1, 3, 8, 8}), unknown}, {shaped({1, 4, 6, 6})}),
               onnx_import::MissingShape);
  // Views and data movement need no shapes.
  EXPECT_NO_THROW(node_cost(node("Reshape"), {unknown, unknown}, {unknown}));
  EXPECT_TRUE(node_cost(node("Reshape"), {unknown, unknown}, {unknown}).view);
}

TEST(OnnxOpRules, FallbackForUnknownOp) {
  const auto c = node_cost(node("NonMaxSuppression"), {shaped({1, 10, 4}), shaped({1, 1, 10})},
                           {shaped({7, 3})});
  EXPECT_FALSE(c.has_rule);
  EXPECT_DOUBLE_EQ(c.flops, 21);
}

}  // namespace
}  // namespace placer
