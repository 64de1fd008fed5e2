#include "datasets/family_nas.h"

#include <gtest/gtest.h>

#include "datasets/family_inception.h"
#include "src/util/error.h"
#include "tests/datasets/family_test_util.h"

namespace placer {
namespace {

using testing::expect_well_formed;
using testing::fp;

// Normal cell: node0 = sep_conv_3x3(h[i-1]) + identity(h[i-2]).
// Reduction cell: node0 = max_pool(h[i-2]) + avg_pool(h[i-1]), both stride 2.
EnasCnnOptions tiny_enas() {
  EnasCnnOptions o;
  o.cells_per_stage = 1;
  o.filters = 4;
  o.image = 8;
  o.in_channels = 3;
  o.classes = 10;
  o.batch = 2;
  NasNode n;
  n.input[0] = 1;
  n.op[0] = NasOp::kSepConv3;
  n.input[1] = 0;
  n.op[1] = NasOp::kIdentity;
  o.normal.nodes = {n};
  NasNode r;
  r.input[0] = 0;
  r.op[0] = NasOp::kMaxPool3;
  r.input[1] = 1;
  r.op[1] = NasOp::kAvgPool3;
  o.reduction.nodes = {r};
  return o;
}

TEST(FamilyEnasCnn, HandCountedTinyNetwork) {
  const Graph g = make_enas_cnn(tiny_enas());
  // Cells: normal, reduction, normal, reduction, normal. Stem 2 ops; a normal cell 12
  // (2 x 3 preprocess, sep conv 4, add, concat); a reduction cell 10 (6, 2 pools, add,
  // concat); head 4 (relu, global pool, classifier, loss).
  EXPECT_EQ(g.num_ops(), 2u + 3 * 12 + 2 * 10 + 4);
  // Parameters (f32): stem 116, cells 108 + 96 + 280 + 320 + 880, classifier 176.
  EXPECT_EQ(g.total_param_bytes(), 1976u * 4);
  // FLOPs per part, worked out by hand from the rules in family_nas.h: stem 31744, cells
  // 35840, 38656, 22272, 27520, 16256, head 996.
  EXPECT_DOUBLE_EQ(g.total_flops(), 173284);
  // A few single ops.
  EXPECT_DOUBLE_EQ(g.op(g.find_op("cells.0.node0.left.depthwise")).flops, 2.0 * 2 * 8 * 8 * 4 * 9);
  EXPECT_DOUBLE_EQ(g.op(g.find_op("cells.2.preprocess0.conv")).flops, 2.0 * 2 * 4 * 4 * 8 * 4);
  EXPECT_DOUBLE_EQ(g.op(g.find_op("cells.1.node0.left.pool")).flops, 9.0 * 2 * 8 * 4 * 4);
  const Op& concat = g.op(g.find_op("cells.4.concat"));
  EXPECT_EQ(g.tensor(concat.outputs[0]).shape, (std::vector<int64_t>{2, 16, 2, 2}));
  EXPECT_EQ(concat.layer, 4);
  EXPECT_EQ(g.op(g.find_op("cells.3.node0.left.pool")).type, "MaxPool");
  EXPECT_EQ(g.op(g.find_op("cells.3.node0.right.pool")).type, "AveragePool");
  // Identity on h[i-2] in a normal cell is an edge, not an op.
  EXPECT_EQ(g.find_op("cells.0.node0.right.reduce.conv"), kNoOp);
  expect_well_formed(g);
}

TEST(FamilyEnasCnn, SampledCellsAreSeeded) {
  EnasCnnOptions o;
  o.seed = 11;
  const Graph a = make_enas_cnn(o), b = make_enas_cnn(o);
  EXPECT_EQ(fp(a), fp(b));
  o.seed = 12;
  EXPECT_NE(fp(make_enas_cnn(o)), fp(a));
  expect_well_formed(a);
  // Each node's inputs come from earlier states only.
  const NasCell c = sample_nas_cell(7, enas_ops(), 5);
  ASSERT_EQ(c.nodes.size(), 7u);
  for (size_t j = 0; j < c.nodes.size(); ++j) {
    for (int k = 0; k < 2; ++k) {
      EXPECT_LT(c.nodes[j].input[k], static_cast<int>(j) + 2);
      EXPECT_NE(c.nodes[j].op[k], NasOp::kSepConv7);  // not in ENAS's set
    }
  }
}

TEST(FamilyEnasCnn, RejectsBadCells) {
  EnasCnnOptions o = tiny_enas();
  o.normal.nodes[0].input[0] = 2;  // node 0 cannot read itself
  EXPECT_THROW(make_enas_cnn(o), Error);
  o = tiny_enas();
  o.filters = 0;
  EXPECT_THROW(make_enas_cnn(o), Error);
}

TEST(FamilyAmoebaNet, DoubleSepConvsAndImagenetStem) {
  AmoebaNetOptions o;
  o.cells_per_stage = 0;  // only the 2 stem and 2 stage reduction cells
  o.filters = 16;
  o.image = 32;
  o.classes = 10;
  o.batch = 1;
  NasNode r;
  r.input[0] = 0;
  r.op[0] = NasOp::kSepConv3;
  r.input[1] = 1;
  r.op[1] = NasOp::kIdentity;
  o.reduction.nodes = {r};
  o.normal.nodes = {r};
  const Graph g = make_amoebanet(o);
  // Reduction cell: 6 preprocess + sep conv twice (8) + factorized reduce (2) + add + concat.
  EXPECT_EQ(g.num_ops(), 2u + 4 * 18 + 4);
  // Stem conv stride 2: 32 -> 16; stem cells at max(8, F/4) = max(8, F/2) = 8 channels.
  const Op& stem = g.op(g.find_op("stem.conv"));
  EXPECT_EQ(g.tensor(stem.outputs[0]).shape, (std::vector<int64_t>{1, 8, 16, 16}));
  // The second separable conv runs at stride 1 on the reduced 8x8 map.
  EXPECT_DOUBLE_EQ(g.op(g.find_op("cells.0.node0.left.1.depthwise")).flops, 2.0 * 8 * 8 * 8 * 9);
  EXPECT_DOUBLE_EQ(g.op(g.find_op("cells.0.node0.left.0.depthwise")).flops, 2.0 * 8 * 8 * 8 * 9);
  EXPECT_EQ(g.op(g.find_op("cells.0.node0.right.reduce.conv")).param_bytes, 8u * 8 * 4);
  // 32 -> 16 (stem) -> 8, 4 (stem cells) -> 2, 1 (stage reductions at 32 and 64 channels).
  const Op& last = g.op(g.find_op("cells.3.concat"));
  EXPECT_EQ(g.tensor(last.outputs[0]).shape, (std::vector<int64_t>{1, 64, 1, 1}));
  expect_well_formed(g);
}

TEST(FamilyAmoebaNet, SeededAndUsesNasnetOps) {
  AmoebaNetOptions o;
  o.cells_per_stage = 2;
  o.filters = 32;
  o.seed = 3;
  const Graph a = make_amoebanet(o);
  EXPECT_EQ(fp(a), fp(make_amoebanet(o)));
  o.seed = 4;
  EXPECT_NE(fp(a), fp(make_amoebanet(o)));
  expect_well_formed(a);
  bool has_nasnet_only = false;
  for (int s = 0; s < 20 && !has_nasnet_only; ++s) {
    for (const NasNode& n : sample_nas_cell(5, amoeba_ops(), s).nodes) {
      for (NasOp op : n.op) {
        has_nasnet_only = has_nasnet_only || op == NasOp::kSepConv7 || op == NasOp::kDilConv3 ||
                          op == NasOp::kConv1x7_7x1;
      }
    }
  }
  EXPECT_TRUE(has_nasnet_only);
}

TEST(FamilyInception, HandCountedOneModule) {
  InceptionOptions o;
  o.modules_per_stage = {1};
  o.min_branches = o.max_branches = 2;  // the 1x1 branch and the pool branch
  o.width = 8;                          // branch widths drawn in [8, 8]
  o.image = 32;
  o.classes = 10;
  o.batch = 1;
  const Graph g = make_inception(o);
  EXPECT_EQ(g.num_ops(), 17u + 8 + 3);
  // Stem 172672, module 3104, classifier 176 parameters.
  EXPECT_EQ(g.total_param_bytes(), 175952u * 4);
  // Stem 33464320, module 128256, head 626.
  EXPECT_DOUBLE_EQ(g.total_flops(), 33593202);
  const Op& cat = g.op(g.find_op("stage0.module0.concat"));
  EXPECT_EQ(g.tensor(cat.outputs[0]).shape, (std::vector<int64_t>{1, 16, 4, 4}));
  EXPECT_EQ(g.op(g.find_op("stage0.module0.branch1.pool")).type, "AveragePool");
  expect_well_formed(g);
}

TEST(FamilyInception, DefaultIsInceptionV3Sized) {
  InceptionOptions o;
  o.batch = 1;
  const Graph g = make_inception(o);
  // 17 stem + 9 modules of 4 branches (1x1: 3, pool: 4, two drawn of 6 to 9 ops) + 2
  // reductions of 14 + head 3.
  EXPECT_GE(g.num_ops(), 17u + 9 * (3 + 4 + 6 + 6 + 1) + 28 + 3);
  EXPECT_LE(g.num_ops(), 17u + 9 * (3 + 4 + 9 + 9 + 1) + 28 + 3);
  // Inception-v3 is ~5.7 GMACs per 299x299 image; this coarser variant lands within 2x.
  EXPECT_GT(g.total_flops(), 4e9);
  EXPECT_LT(g.total_flops(), 25e9);
  expect_well_formed(g);
  InceptionOptions p = o;
  p.seed = 2;
  EXPECT_NE(fp(g), fp(make_inception(p)));
  EXPECT_EQ(fp(g), fp(make_inception(o)));
  p.min_branches = 1;
  EXPECT_THROW(make_inception(p), Error);
}

}  // namespace
}  // namespace placer
