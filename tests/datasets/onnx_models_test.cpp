// ONNX import of real exported models (scripts/export_models.py): ResNet-50 against its
// published cost, and every exported model in datasets/models importing cleanly.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "datasets/onnx_import.h"
#include "src/graph/training_step.h"

namespace placer {
namespace {

namespace fs = std::filesystem;

// ResNet-50 forward: 4.1 GMACs per 224x224 image (He et al. 2016 report 3.8 G multiply-adds
// without the shortcut projections' share; torchvision's model card and fvcore/ptflops give
// 4.09-4.12 G). FLOPs = 2 x MACs (docs/import.md).
constexpr double kResNet50Macs = 4.1e9;

TEST(OnnxModels, ResNet50MatchesPublishedMacs) {
  const std::string path = std::string(PLACER_TEST_DATA_DIR) + "/onnx/resnet50.onnx";
  if (!fs::exists(path)) {
    GTEST_SKIP() << path << " not exported yet (scripts/export_models.py --models resnet50 "
                 << "--batch-size 1 --out tests/data/onnx)";
  }
  std::vector<std::string> warnings;
  ImportStats st;
  Graph g = import_onnx(path, {}, &warnings, &st);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  ASSERT_GT(g.batch_size(), 0);
  const double batch = static_cast<double>(g.batch_size());

  // 53 Conv, 53 BatchNormalization, 49 Relu, 16 Add, MaxPool, GlobalAveragePool, Flatten, Gemm.
  EXPECT_EQ(g.num_ops(), 175u);
  int conv = 0, bn = 0, relu = 0, add = 0;
  double dense_flops = 0;
  for (const Op& o : g.ops()) {
    conv += o.type == "Conv";
    bn += o.type == "BatchNormalization";
    relu += o.type == "Relu";
    add += o.type == "Add";
    if (o.category == OpCategory::kConv || o.category == OpCategory::kMatMul)
      dense_flops += o.flops;
  }
  EXPECT_EQ(conv, 53);
  EXPECT_EQ(bn, 53);
  EXPECT_EQ(relu, 49);
  EXPECT_EQ(add, 16);

  // Convolutions + the classifier: 4.1 GMACs per image within 5%; all ops as well.
  const double macs = dense_flops / 2 / batch;
  EXPECT_NEAR(macs, kResNet50Macs, 0.05 * kResNet50Macs) << macs;
  const double all_macs = g.total_flops() / 2 / batch;
  EXPECT_NEAR(all_macs, kResNet50Macs, 0.05 * kResNet50Macs) << all_macs;

  // torchvision's resnet50 has 25,557,032 parameters; BatchNorm running statistics are
  // buffers (2 x 26,560 channels).
  EXPECT_EQ(g.total_param_bytes(), 25557032u * 4);
  EXPECT_EQ(st.param_tensors, 161u);
  EXPECT_EQ(st.state_bytes, 53120u * 4);

  EXPECT_EQ(g.op(g.find_op("/layer1/layer1.0/conv1/Conv")).scope, "layer1.0.conv1");
  EXPECT_EQ(g.op(g.find_op("/layer3/layer3.0/downsample/downsample.0/Conv")).scope,
            "layer3.0.downsample.0");
  EXPECT_EQ(g.op(g.find_op("/fc/Gemm")).scope, "fc");
  EXPECT_EQ(g.op(g.find_op("/fc/Gemm")).param_bytes, (2048u * 1000 + 1000) * 4);

  // Batch 4 scales every op (the export keeps the batch symbolic or one static dim).
  ImportOptions o;
  o.batch_size = 4;
  Graph g4 = import_onnx(path, o);
  EXPECT_EQ(g4.batch_size(), 4);
  EXPECT_NEAR(g4.total_flops() / 4, g.total_flops() / batch, 1e-6 * g.total_flops());

  Graph step = expand_training_step(g);
  EXPECT_EQ(step.num_ops(), 175u * 2 + 53 + 53 + 1);  // forward, backward, updates (conv, bn, fc)
}

// The 6-layer nn.TransformerEncoder LM of export_models.py (d 512, 8 heads, ffn 2048, vocab
// 32000), exported at batch 1, sequence 16 into tests/data/onnx.
TEST(OnnxModels, TransformerEncoderMatchesAnalyticCount) {
  const std::string path = std::string(PLACER_TEST_DATA_DIR) + "/onnx/transformer_enc6_d512.onnx";
  if (!fs::exists(path)) GTEST_SKIP() << path << " not exported";
  std::vector<std::string> warnings;
  Graph g = import_onnx(path, {}, &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  const double b = static_cast<double>(g.batch_size()), l = 6, d = 512, f = 2048, v = 32000;
  ASSERT_EQ(g.tensor(0).shape.size(), 2u);
  const double s = static_cast<double>(g.tensor(0).shape[1]);  // tokens [b, s]
  double matmul = 0;
  std::set<int32_t> layers;
  for (const Op& o : g.ops()) {
    if (o.category == OpCategory::kMatMul) matmul += o.flops;
    if (o.layer >= 0) layers.insert(o.layer);
  }
  // Narayanan et al. 2021 (ffn = 4d): 24 b s l d^2 (1 + s / 6d) + 2 b s d V, plus the bias
  // additions of the 6 attention-output Gemms (the other biases are separate Add ops).
  const double expected =
      24 * b * s * l * d * d * (1 + s / (6 * d)) + 2 * b * s * d * v + l * b * s * d;
  EXPECT_NEAR(matmul, expected, 1e-9 * expected);
  EXPECT_EQ(layers, (std::set<int32_t>{0, 1, 2, 3, 4, 5}));
  // Parameters: token + position embeddings, 6 layers, final norm, LM head.
  const double layer_params = 3 * d * d + 3 * d + d * d + d + d * f + f + f * d + d + 4 * d;
  const double params = v * d + s * d + l * layer_params + 2 * d + d * v + v;
  EXPECT_EQ(g.total_param_bytes(), static_cast<uint64_t>(4 * params));
  EXPECT_EQ(g.op(g.find_op("/embedding/Gather")).category, OpCategory::kEmbedding);
  EXPECT_EQ(g.op(g.find_op("/encoder/layers.3/self_attn/Softmax")).scope,
            "encoder.layers.3.self_attn");
}

// The LSTM seq2seq of export_models.py (2 + 2 layers, hidden 512, vocab 32000), batch 1, seq 16.
TEST(OnnxModels, LstmSeq2SeqMatchesAnalyticCount) {
  const std::string path = std::string(PLACER_TEST_DATA_DIR) + "/onnx/lstm_seq2seq_l2_h512.onnx";
  if (!fs::exists(path)) GTEST_SKIP() << path << " not exported";
  std::vector<std::string> warnings;
  Graph g = import_onnx(path, {}, &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  const double b = static_cast<double>(g.batch_size()), h = 512, v = 32000;
  const double t = static_cast<double>(g.tensor(0).shape[1]);  // src [b, t]
  double recurrent = 0, matmul = 0;
  int lstm = 0;
  for (const Op& o : g.ops()) {
    if (o.category == OpCategory::kRecurrent) recurrent += o.flops, ++lstm;
    if (o.category == OpCategory::kMatMul) matmul += o.flops;
  }
  EXPECT_EQ(lstm, 4);  // torch exports one LSTM node per layer
  // Per layer and step: 2*4H(I+H) + 4H + 2*4H (biases) + 24H, with I = H.
  EXPECT_DOUBLE_EQ(recurrent, 4 * t * b * (2 * 4 * h * 2 * h + 4 * h + 8 * h + 24 * h));
  EXPECT_DOUBLE_EQ(matmul, 2 * b * t * h * v);
  // Embeddings, 4 LSTM layers (W, R, two biases), projection: 57,588,992 parameters; the gate
  // reordering Slice / Concat nodes are folded into the LSTMs, which own their weights.
  EXPECT_EQ(g.total_param_bytes(), 57588992u * 4);
  for (const Op& o : g.ops()) {
    if (o.type == "LSTM") {
      EXPECT_EQ(o.param_bytes, (2 * 4 * 512 * 512 + 8 * 512) * 4u) << o.name;
    }
  }
}

// Every model exported into datasets/models (any subfolder) imports without errors and
// without warnings, with parameters and a positive cost.
TEST(OnnxModels, ExportedCorpusImportsCleanly) {
  const fs::path dir = fs::path(PLACER_SOURCE_DIR) / "datasets" / "models";
  std::vector<fs::path> files;
  if (fs::exists(dir)) {
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (e.is_regular_file() && e.path().extension() == ".onnx") files.push_back(e.path());
    }
  }
  if (files.empty()) GTEST_SKIP() << "no exported ONNX models under " << dir;
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    std::vector<std::string> warnings;
    ImportOptions opts;
    opts.seq_len = 128;               // for models exported with a symbolic sequence
    opts.dim_overrides["batch"] = 8;  // export_models.py --dynamic-batch names it "batch"
    Graph g = import_onnx(f.string(), opts, &warnings);
    EXPECT_GT(g.num_ops(), 0u);
    EXPECT_GT(g.total_flops(), 0);
    EXPECT_GT(g.total_param_bytes(), 0u);
    for (const std::string& w : warnings) ADD_FAILURE() << "warning: " << w;
  }
}

}  // namespace
}  // namespace placer
