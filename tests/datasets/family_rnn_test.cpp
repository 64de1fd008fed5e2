#include "datasets/family_rnn.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "src/util/error.h"
#include "tests/datasets/family_test_util.h"

namespace placer {
namespace {

using testing::count_type;
using testing::expect_well_formed;
using testing::fp;

RnnlmOptions tiny_rnnlm() {
  RnnlmOptions o;
  o.layers = 1;
  o.hidden = 4;
  o.vocab = 10;
  o.seq_len = 2;
  o.batch = 2;
  return o;
}

TEST(FamilyRnnlm, HandCountedUnfusedAndFused) {
  RnnlmOptions o = tiny_rnnlm();
  const Graph g = make_rnnlm(o);
  // embedding + split, 1 weight, 12 ops x 2 steps, projection weight, 2 logits, loss.
  EXPECT_EQ(g.num_ops(), 2u + 1 + 24 + 1 + 2 + 1);
  // Embedding 10*4, LSTM (4 + 4 + 1) * 16, projection (4 + 1) * 10.
  EXPECT_EQ(g.total_param_bytes(), (40u + 144 + 50) * 4);
  // Cell: 2*b*(in+h)*4h = 512 plus 24*b*h = 192, two steps; logits 2*2*4*10 twice; loss
  // 5*b*T*V = 200.
  EXPECT_DOUBLE_EQ(g.total_flops(), 2 * 704 + 2 * 160 + 200);
  EXPECT_EQ(count_type(g, "Sigmoid"), 6u);
  EXPECT_EQ(count_type(g, "Parameter"), 2u);
  // Both steps read the one shared weight.
  const OpId w = g.find_op("rnn.layer.0.weights");
  EXPECT_EQ(g.succs(w).size(), 2u);
  EXPECT_EQ(g.op(g.find_op("rnn.layer.0.t1.gates")).scope, "rnn.layer.0");
  expect_well_formed(g);

  o.fused_cells = true;
  const Graph f = make_rnnlm(o);
  EXPECT_EQ(f.num_ops(), 2u + 1 + 2 + 1 + 2 + 1);
  EXPECT_DOUBLE_EQ(f.total_flops(), g.total_flops());
  EXPECT_EQ(f.total_param_bytes(), g.total_param_bytes());
  EXPECT_EQ(f.op(f.find_op("rnn.layer.0.t0.cell")).category, OpCategory::kRecurrent);
  expect_well_formed(f);
}

TEST(FamilyRnnlm, LayersAndSeeds) {
  RnnlmOptions o;
  o.layers = 8;
  o.seq_len = 20;
  const Graph g = make_rnnlm(o);
  EXPECT_EQ(g.num_ops(), size_t(2 + 8 + 12 * 8 * 20 + 1 + 20 + 1));
  EXPECT_EQ(fp(g), fp(make_rnnlm(o)));
  o.hidden = 512;
  EXPECT_NE(fp(g), fp(make_rnnlm(o)));
  o.layers = 0;
  EXPECT_THROW(make_rnnlm(o), Error);
}

TEST(FamilyGnmt, HandCountedTwoLayers) {
  GnmtOptions o;
  o.layers = 2;
  o.hidden = 4;
  o.vocab = 10;
  o.src_len = 2;
  o.tgt_len = 3;
  o.batch = 1;
  const Graph g = make_gnmt(o);
  // Encoder 2 + 3 weights + 12*3 cells*2 steps + 2 concats + memory + keys = 81; decoder
  // 2 + 2 weights + 12*2*3 + 6*3 attention + 2 attention weights + projection weight +
  // 3 logits + loss = 101.
  EXPECT_EQ(g.num_ops(), 81u + 101);
  // Embeddings 2*40, encoder LSTMs 144 + 144 + 208, keys 16, query 16, v 4, decoder LSTMs
  // 2*208, projection 50.
  EXPECT_EQ(g.total_param_bytes(), 1078u * 4);
  // Cells 2*b*(in+h)*4h + 24*b*h: encoder 4*352 + 2*480, keys 64; decoder 3 steps x
  // (2*480 + attention 114); logits 3*80; loss 150.
  EXPECT_DOUBLE_EQ(g.total_flops(), 4 * 352 + 2 * 480 + 64 + 3 * (2 * 480 + 114) + 240 + 150);
  // The backward direction runs from the last step to the first.
  const OpId bw0 = g.find_op("encoder.layer.0.bw.t0.gates");
  const OpId bw1 = g.find_op("encoder.layer.0.bw.t1.h");
  EXPECT_LT(g.topo_rank()[bw1], g.topo_rank()[bw0]);
  // Attention of step t reads the keys; layer 1 at step t reads its context.
  const OpId ctx = g.find_op("attention.t2.context");
  const OpId concat = g.find_op("decoder.layer.1.t2.concat");
  EXPECT_LT(g.topo_rank()[ctx], g.topo_rank()[concat]);
  expect_well_formed(g);
}

TEST(FamilyGnmt, OpCountFormulaWithResiduals) {
  GnmtOptions o;
  o.layers = 4;
  o.src_len = 5;
  o.tgt_len = 7;
  o.hidden = 16;
  // r = 4 - 2 = 2 residual layers per side.
  const size_t enc = 2 + 5 + 12 * 5 * 5 + 5 + 2 * 5 + 2,
               dec = 2 + 4 + 12 * 4 * 7 + 2 * 7 + 6 * 7 + 2 + 1 + 7 + 1;
  const Graph g = make_gnmt(o);
  EXPECT_EQ(g.num_ops(), enc + dec);
  // Residuals 2*5 + 2*7, one per LSTM cell (c), one per attention step (energy).
  EXPECT_EQ(count_type(g, "Add"), size_t(2 * 5 + 2 * 7 + (5 * 5 + 4 * 7) + 7));
  o.fused_cells = true;
  const Graph f = make_gnmt(o);
  EXPECT_EQ(f.num_ops(), enc + dec - 11 * (5 * 5 + 4 * 7));
  EXPECT_DOUBLE_EQ(f.total_flops(), g.total_flops());
  expect_well_formed(f);
  o.residual_from = 1;
  EXPECT_THROW(make_gnmt(o), Error);
}

TEST(FamilyGnmt, Gnmt8UnrolledReaches50kOps) {
  GnmtOptions o;
  o.layers = 8;
  o.src_len = o.tgt_len = 224;
  const auto t0 = std::chrono::steady_clock::now();
  const Graph g = make_gnmt(o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("GNMT-8 unrolled over 224 steps: %zu ops in %.3f s\n", g.num_ops(), secs);
  EXPECT_EQ(g.num_ops(), 27u + 224 * 224);
  EXPECT_GE(g.num_ops(), 50000u);
  expect_well_formed(g);
}

TEST(FamilyEnasRnn, HandCountedCell) {
  EnasRnnOptions o;
  o.hidden = 4;
  o.vocab = 10;
  o.seq_len = 2;
  o.batch = 1;
  o.cell.input = {0, 0, 0};  // nodes 1 and 2 both read node 0: loose ends {1, 2}
  o.cell.act = {RnnAct::kTanh, RnnAct::kIdentity, RnnAct::kRelu};
  const Graph g = make_enas_rnn(o);
  // Per step: node0 5 ops, node1 4 (identity has no activation op), node2 5, output 1.
  EXPECT_EQ(g.num_ops(), 2u + 3 + 2 * 15 + 1 + 2 + 1);
  // Embedding 40, node weights 8*8 + 4*8 + 4*8, projection 50.
  EXPECT_EQ(g.total_param_bytes(), 218u * 4);
  // Per step: node0 128 + 16 + 16 + 12, node1 64 + 16 + 12, node2 64 + 16 + 4 + 12,
  // average of 2 loose ends 8; logits 2 x 80; loss 100.
  EXPECT_DOUBLE_EQ(g.total_flops(), 2 * (172 + 92 + 96 + 8) + 160 + 100);
  const Op& out = g.op(g.find_op("cell.t1.output"));
  EXPECT_EQ(out.inputs.size(), 2u);
  EXPECT_EQ(g.find_op("cell.t0.node1.tanh"), kNoOp);
  expect_well_formed(g);
}

TEST(FamilyEnasRnn, SampledCellsAreSeeded) {
  EnasRnnOptions o;
  o.seq_len = 5;
  o.seed = 1;
  const Graph a = make_enas_rnn(o);
  EXPECT_EQ(fp(a), fp(make_enas_rnn(o)));
  o.seed = 2;
  EXPECT_NE(fp(a), fp(make_enas_rnn(o)));
  expect_well_formed(a);
  const EnasRnnCell c = sample_enas_rnn_cell(12, 9);
  for (size_t j = 1; j < c.input.size(); ++j) EXPECT_LT(c.input[j], static_cast<int>(j));
  o.cell.input = {0, 1};
  o.cell.act = {RnnAct::kTanh, RnnAct::kTanh};
  EXPECT_THROW(make_enas_rnn(o), Error);  // node 1 cannot read itself
}

}  // namespace
}  // namespace placer
