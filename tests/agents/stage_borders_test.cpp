// The bytes that cross between units (stage_borders.h), hand-computed on a small branching
// graph: forward-only and as a training step, each activation once per cut it spans, each
// gradient back from the unit of its reader's backward op, the tensors of input ops left
// out of a chain's cuts, and the crossings per cut (2 with a backward pass, 1 without).
// pipeline-dp's cuts, its folded borders and the stage load's transfers all read this count.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agents/classical/pipeline_dp.h"
#include "agents/classical/pipeline_fold.h"
#include "agents/classical/stage_borders.h"
#include "src/graph/training_step.h"

namespace placer {
namespace {

/// x -> A -> a (100 B) -> B -> b (200 B) -> D (the loss, an Add) <- c (300 B) <- C <- a;
/// a constant k (40 B) is read by C. A, B, C are MatMuls with parameters.
Graph branching_forward() {
  GraphBuilder gb("branching");
  gb.set_batch_size(4);
  const TensorId x = gb.add_tensor("x", 1000);
  auto add = [&](const std::string& name, const std::string& type, const std::vector<TensorId>& in,
                 uint64_t out_bytes, uint64_t params) {
    Op op;
    op.name = name;
    op.type = type;
    op.category = category_of_op_type(type);
    op.flops = 1e6;
    op.param_bytes = params;
    op.inputs = in;
    const TensorId t = gb.add_tensor(name + ".out", out_bytes);
    op.outputs = {t};
    gb.add_op(std::move(op));
    return t;
  };
  const TensorId k = add("K", "Constant", {}, 40, 0);
  const TensorId a = add("A", "MatMul", {x}, 100, 64);
  const TensorId b = add("B", "MatMul", {a}, 200, 64);
  const TensorId c = add("C", "MatMul", {a, k}, 300, 64);
  add("D", "Add", {b, c}, 50, 0);
  return gb.build();
}

/// Units A: 0, B: 1, C: 2, D: 3 (each op's backward op with it), the constant with A.
std::vector<int> units_of(const Graph& g) {
  const std::vector<std::string> order = {"A", "B", "C", "D"};
  std::vector<int> unit(g.num_ops(), -1);
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const Op& op = g.op(o);
    const std::string& name = op.forward_op != kNoOp ? g.op(op.forward_op).name : op.name;
    for (size_t u = 0; u < order.size(); ++u) {
      if (name == order[u]) unit[o] = static_cast<int>(u);
    }
    if (name == "K") unit[o] = 0;
  }
  return unit;
}

/// The tensors of `tensors` made in `from` with gradient `gradient`: their bytes and readers.
double bytes_from(const std::vector<BorderTensor>& tensors, int from, bool gradient,
                  std::vector<int>* readers = nullptr) {
  double bytes = 0;
  for (const BorderTensor& t : tensors) {
    if (t.from != from || t.gradient != gradient || t.from_input) continue;
    bytes += static_cast<double>(t.bytes);
    if (readers) readers->insert(readers->end(), t.readers.begin(), t.readers.end());
  }
  return bytes;
}

TEST(StageBorders, ForwardGraphActivationsOncePerCutOneTrip) {
  const Graph g = branching_forward();
  const std::vector<BorderTensor> tensors = border_tensors(g, units_of(g));
  // a (A -> B, C), b (B -> D), c (C -> D) and the constant's k (unit 0 -> C).
  ASSERT_EQ(tensors.size(), 4u);
  std::vector<int> readers;
  EXPECT_EQ(bytes_from(tensors, 0, false, &readers), 100);
  EXPECT_EQ(readers, (std::vector<int>{1, 2}));
  EXPECT_EQ(bytes_from(tensors, 1, false), 200);
  EXPECT_EQ(bytes_from(tensors, 2, false), 300);
  int inputs = 0;
  for (const BorderTensor& t : tensors) inputs += t.from_input ? 1 : 0;
  EXPECT_EQ(inputs, 1);
  // Cut 1: a; cut 2: a (to C) and b (to D); cut 3: b and c. No gradients, one trip per cut.
  const ChainCutBytes cuts = chain_cut_bytes(tensors, 4);
  EXPECT_EQ(cuts.forward, (std::vector<double>{0, 100, 300, 500, 0}));
  EXPECT_EQ(cuts.back, (std::vector<double>{0, 0, 0, 0, 0}));
  EXPECT_EQ(border_trips(g), 1);
}

TEST(StageBorders, TrainingStepSendsEachConsumersGradientBack) {
  const Graph g = expand_training_step(branching_forward());
  const std::vector<BorderTensor> tensors = border_tensors(g, units_of(g));
  // Forward as before; back: D/grad sends b's gradient (200) to B/grad and c's (300) to
  // C/grad; B/grad and C/grad each send a gradient of a (100) to A/grad. Parameter gradients
  // and the saved activations the backward ops read stay in their units.
  std::vector<int> readers;
  EXPECT_EQ(bytes_from(tensors, 3, true, &readers), 500);
  EXPECT_EQ(readers, (std::vector<int>{1, 2}));
  EXPECT_EQ(bytes_from(tensors, 1, true), 100);
  EXPECT_EQ(bytes_from(tensors, 2, true), 100);
  EXPECT_EQ(bytes_from(tensors, 0, true), 0);
  const ChainCutBytes cuts = chain_cut_bytes(tensors, 4);
  EXPECT_EQ(cuts.forward, (std::vector<double>{0, 100, 300, 500, 0}));
  // Cut 1: both gradients of a; cut 2: C's gradient of a and b's; cut 3: b's and c's.
  EXPECT_EQ(cuts.back, (std::vector<double>{0, 200, 300, 500, 0}));
  // Two trips per cut when gradients are not counted apart: 200, 600, 1000 (the gradients
  // as sent make 300, 600, 1000).
  EXPECT_EQ(border_trips(g), 2);
}

TEST(StageBorders, FoldedSetMovesWhatCrossesItsBorder) {
  // The outer stage {A, D} of the training step: in b, c (500) and both gradients of a
  // (200); out a (100, once for both readers) and the gradients of b, c (500).
  Graph g = expand_training_step(branching_forward());
  LayerChain chain;
  chain.unit_of = units_of(g);
  chain.units.resize(4);
  double in = 0, out = 0;
  unit_borders(g, chain).in_out(unit_mask(0, 1, 3, 4), &in, &out);
  EXPECT_EQ(in, 700);
  EXPECT_EQ(out, 600);
  // Forward only: in b, c; out a.
  const Graph fwd = branching_forward();
  chain.unit_of = units_of(fwd);
  unit_borders(fwd, chain).in_out(unit_mask(0, 1, 3, 4), &in, &out);
  EXPECT_EQ(in, 500);
  EXPECT_EQ(out, 100);
}

}  // namespace
}  // namespace placer
