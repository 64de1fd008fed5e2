#include "models/transformer_xl.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "src/util/error.h"

namespace placer {
namespace {

TransformerXL small_net(int64_t segment, int64_t mem_len) {
  return TransformerXL(TransformerXLOptions(8, 2).layers(2).segment(segment).mem_len(mem_len));
}

TEST(TransformerXL, OptionDefaults) {
  TransformerXLOptions o(16, 4);
  EXPECT_EQ(o.layers(), 2);
  EXPECT_EQ(o.ffn(), 64);
  EXPECT_EQ(o.segment(), 128);
  EXPECT_EQ(o.mem_len(), 128);
  EXPECT_EQ(o.dropout(), 0.0);
  EXPECT_THROW(TransformerXL(TransformerXLOptions(10, 4)), Error);
}

TEST(TransformerXL, RelShiftMatchesExplicitIndexing) {
  const int64_t qlen = 3, klen = 5;
  auto x = torch::arange(qlen * (klen + qlen - 1), torch::kFloat).view({qlen, klen + qlen - 1});
  auto out = rel_shift(x, klen);
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{qlen, klen}));
  // Column r of x is distance klen-1-r; out[i][j] must be distance (klen-qlen+i)-j.
  for (int64_t i = 0; i < qlen; ++i) {
    for (int64_t j = 0; j < klen; ++j) {
      EXPECT_EQ(out[i][j].item<float>(), x[i][qlen - 1 - i + j].item<float>()) << i << "," << j;
    }
  }
  // Hand values: row 0 starts at column 2, row 2 at column 0.
  EXPECT_EQ(out[0][0].item<float>(), 2.0f);
  EXPECT_EQ(out[2][4].item<float>(), 2.0f * 7 + 4);
  // Leading (head) dimensions are shifted independently.
  auto batched = rel_shift(torch::stack({x, -x}, 0), klen);
  EXPECT_TRUE(torch::equal(batched[0], out));
  EXPECT_TRUE(torch::equal(batched[1], -out));
  EXPECT_THROW(rel_shift(x, klen + 1), Error);
}

TEST(TransformerXL, RelativeSinusoids) {
  auto r = relative_sinusoids(2, 3, 4);  // distances 2, 1, 0, -1
  ASSERT_EQ(r.sizes(), (std::vector<int64_t>{4, 4}));
  EXPECT_NEAR(r[0][0].item<float>(), std::sin(2.0), 1e-6);
  EXPECT_NEAR(r[0][1].item<float>(), std::sin(2.0 / 100.0), 1e-6);
  EXPECT_NEAR(r[2][2].item<float>(), 1.0, 1e-6);  // cos(0)
  EXPECT_NEAR(r[3][0].item<float>(), std::sin(-1.0), 1e-6);
}

TEST(TransformerXL, ShapesOfOutputsAndMemories) {
  torch::manual_seed(1);
  auto net = small_net(3, 4);
  auto x = torch::randn({7, 8});
  auto first = net->forward(x.narrow(0, 0, 3));
  EXPECT_EQ(first.out.sizes(), (std::vector<int64_t>{3, 8}));
  ASSERT_EQ(first.mems.size(), 2u);
  EXPECT_EQ(first.mems[0].sizes(), (std::vector<int64_t>{3, 8}));
  auto second = net->forward(x.narrow(0, 3, 3), first.mems);
  EXPECT_EQ(second.mems[1].sizes(), (std::vector<int64_t>{4, 8}));  // capped at mem_len
  // Layer-0 memory is the raw input: the last 4 rows of x[0:6].
  EXPECT_TRUE(torch::equal(second.mems[0], x.narrow(0, 2, 4)));
  auto all = net->forward_sequence(x);
  EXPECT_EQ(all.out.sizes(), (std::vector<int64_t>{7, 8}));
  ASSERT_EQ(all.mems.size(), 2u);
  EXPECT_EQ(all.mems[0].sizes(), (std::vector<int64_t>{4, 8}));
  EXPECT_TRUE(torch::equal(all.mems[0], x.narrow(0, 3, 4)));
  EXPECT_THROW(net->forward(x, {first.mems[0]}), Error);
}

TEST(TransformerXL, MemoriesAreDetached) {
  torch::manual_seed(2);
  auto net = small_net(3, 3);
  auto x1 = torch::randn({3, 8}, torch::requires_grad());
  auto x2 = torch::randn({3, 8}, torch::requires_grad());
  auto a = net->forward(x1);
  for (const auto& m : a.mems) EXPECT_FALSE(m.requires_grad());
  auto b = net->forward(x2, a.mems);
  // A weighted sum: a plain sum of a LayerNorm output is constant in its input.
  (b.out * torch::randn({3, 8})).sum().backward();
  EXPECT_FALSE(x1.grad().defined());  // nothing flows into the previous segment
  ASSERT_TRUE(x2.grad().defined());
  EXPECT_GT(x2.grad().abs().sum().item<float>(), 0.0f);
  // ...yet the memory does shape the output.
  auto no_mem = net->forward(x2);
  EXPECT_FALSE(torch::allclose(no_mem.out, b.out, 1e-4, 1e-4));
}

// THE required check: processing in segments with memory covering the whole past equals a
// single pass over the full sequence whose mask lets a query see everything up to and
// including its own segment (block-causal). The second segment is compared row by row.
TEST(TransformerXL, SegmentRecurrenceEqualsFullAttentionWhenWindowCovers) {
  torch::manual_seed(3);
  const int64_t s = 3, n = 9;
  auto net = small_net(s, n);  // mem_len >= N
  auto x = torch::randn({n, 8});
  auto seg = net->forward_sequence(x);
  auto idx = torch::arange(n);
  auto block = torch::floor_divide(idx, s);
  auto mask = block.unsqueeze(0) > block.unsqueeze(1);  // key segment after query segment
  auto full = net->forward(x, {}, mask);
  EXPECT_TRUE(torch::allclose(seg.out.narrow(0, 3, 3), full.out.narrow(0, 3, 3), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(seg.out, full.out, 1e-5, 1e-5))
      << (seg.out - full.out).abs().max().item<float>();
  // Control: unmasked full attention lets segment 1 see the future, so it must differ.
  auto unmasked = net->forward(x);
  EXPECT_FALSE(torch::allclose(seg.out.narrow(0, 0, 3), unmasked.out.narrow(0, 0, 3), 1e-3, 1e-3));
}

// The batched layer-by-layer evaluation equals the segment-after-segment recurrence (same
// outputs, memories and input gradients) for memories shorter than, equal to and longer
// than a segment, and a last segment that is cut short.
TEST(TransformerXL, BatchedSegmentsEqualStepwiseRecurrence) {
  for (int64_t mem_len : {0, 2, 4, 7}) {
    for (int64_t n : {1, 4, 11}) {
      torch::manual_seed(5);
      auto net = small_net(4, mem_len);
      // The same parameters (same seed), one segment per call (chunked).
      torch::manual_seed(5);
      auto chunked = TransformerXL(
          TransformerXLOptions(8, 2).layers(2).segment(4).mem_len(mem_len).max_scores(1));
      auto x1 = torch::randn({n, 8}, torch::requires_grad());
      auto x2 = x1.detach().clone().requires_grad_(true);
      auto a = net->forward_sequence(x1);
      auto b = net->forward_sequence_stepwise(x2);
      {
        torch::NoGradGuard no_grad;
        auto c = chunked->forward_sequence(x1.detach());
        EXPECT_TRUE(torch::allclose(c.out, b.out.detach(), 1e-5, 1e-5))
            << "chunked, mem " << mem_len << " n " << n;
      }
      ASSERT_EQ(a.out.sizes(), b.out.sizes());
      EXPECT_TRUE(torch::allclose(a.out, b.out, 1e-5, 1e-5))
          << "mem " << mem_len << " n " << n << ": " << (a.out - b.out).abs().max().item<float>();
      ASSERT_EQ(a.mems.size(), b.mems.size());
      for (size_t l = 0; l < a.mems.size(); ++l) {
        EXPECT_TRUE(torch::allclose(a.mems[l], b.mems[l], 1e-5, 1e-5));
        EXPECT_FALSE(a.mems[l].requires_grad());
      }
      auto w = torch::randn({n, 8});
      (a.out * w).sum().backward();
      (b.out * w).sum().backward();
      EXPECT_TRUE(torch::allclose(x1.grad(), x2.grad(), 1e-4, 1e-5))
          << "mem " << mem_len << " n " << n;
    }
  }
}

// No absolute position: prepending k nodes that nobody may attend to shifts every absolute
// position by k but no relative distance, so the outputs of the real nodes are unchanged.
TEST(TransformerXL, RelativeEncodingIsShiftInvariant) {
  torch::manual_seed(4);
  auto net = small_net(16, 16);
  auto y = torch::randn({5, 8});
  const int64_t k = 4;
  auto x = torch::cat({torch::randn({k, 8}), y}, 0);
  auto mask = (torch::arange(k + 5) < k).unsqueeze(0).expand({k + 5, k + 5}).clone();
  auto shifted = net->forward(x, {}, mask);
  auto plain = net->forward(y);
  EXPECT_TRUE(torch::allclose(shifted.out.narrow(0, k, 5), plain.out, 1e-5, 1e-5));
  // Relative positions do matter: reversing the order of y changes the outputs.
  auto rev = net->forward(y.flip({0}));
  EXPECT_FALSE(torch::allclose(rev.out.flip({0}), plain.out, 1e-3, 1e-3));
}

TEST(Superposition, HandCase) {
  Superposition sp(2, 1);
  {
    torch::NoGradGuard no_grad;
    sp->c->weight.copy_(torch::tensor({{2.0f}, {-1.0f}}));
    sp->c->bias.copy_(torch::tensor({0.0f, 1.0f}));
    sp->g->weight.copy_(torch::tensor({{1.0f, 1.0f}, {0.0f, 1.0f}}));
    sp->g->bias.copy_(torch::tensor({0.0f, -10.0f}));
  }
  // x0 = 3: gate = [6, -2]; x = [1, 2]: gated = [6, -4]; g = [2, -14]; relu = [2, 0].
  // x = [0.5, -1]: gated = [3, 2]; g = [5, -8]; relu = [5, 0].
  auto out = sp->forward(torch::tensor({{1.0f, 2.0f}, {0.5f, -1.0f}}), torch::tensor({3.0f}));
  EXPECT_TRUE(torch::equal(out, torch::tensor({{2.0f, 0.0f}, {5.0f, 0.0f}})));
}

TEST(DeviceHead, MaskedDevicesGetZeroProbability) {
  torch::manual_seed(5);
  DeviceHead head(8, 4);
  auto h = torch::randn({6, 8});
  auto avail = head->first_devices(3);
  EXPECT_TRUE(torch::equal(avail, torch::tensor({true, true, true, false})));
  auto logits = head->forward(h, avail);
  auto prob = torch::softmax(logits, -1);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(prob[i][3].item<float>(), 0.0f);
  EXPECT_TRUE(torch::allclose(prob.sum(-1), torch::ones({6}), 1e-6, 1e-6));
  auto raw = head->proj->forward(h).narrow(1, 0, 3);
  EXPECT_TRUE(torch::allclose(prob.narrow(1, 0, 3), torch::softmax(raw, -1), 1e-6, 1e-6));
  // Per-node masks, and errors for an empty mask or a bad count.
  auto per_node = torch::tensor({{false, true, false, true}}).expand({6, 4});
  auto p2 = torch::softmax(head->forward(h, per_node), -1);
  EXPECT_EQ(p2[2][0].item<float>(), 0.0f);
  EXPECT_EQ(p2[2][2].item<float>(), 0.0f);
  EXPECT_NEAR((p2[2][1] + p2[2][3]).item<float>(), 1.0f, 1e-6);
  EXPECT_THROW(head->forward(h, torch::zeros({4}, torch::kBool)), Error);
  EXPECT_THROW(head->first_devices(5), Error);
}

TEST(TransformerXL, DeterministicUnderManualSeed) {
  auto run = [] {
    torch::manual_seed(42);
    auto net = small_net(3, 3);
    auto x = torch::randn({8, 8});
    return net->forward_sequence(x).out;
  };
  EXPECT_TRUE(torch::equal(run(), run()));
}

TEST(TransformerXL, GradientsReachAllParameters) {
  torch::manual_seed(6);
  auto net = small_net(3, 3);
  Superposition sp(8, 5);
  DeviceHead head(8, 4);
  auto x = sp->forward(torch::randn({7, 8}), torch::randn({5}));
  auto logits = head->forward(net->forward_sequence(x).out, head->first_devices(4));
  (torch::log_softmax(logits, -1).select(1, 0).sum() + logits.pow(2).sum()).backward();
  std::vector<std::pair<std::string, torch::Tensor>> all;
  for (const auto& p : net->named_parameters()) all.emplace_back("txl." + p.key(), p.value());
  for (const auto& p : sp->named_parameters()) all.emplace_back("sp." + p.key(), p.value());
  for (const auto& p : head->named_parameters()) all.emplace_back("head." + p.key(), p.value());
  EXPECT_EQ(all.size(), 2u * 13u + 4u + 2u);  // 13 tensors per layer
  for (const auto& [name, p] : all) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_GT(p.grad().abs().sum().item<float>(), 0.0f) << name;
  }
}

}  // namespace
}  // namespace placer
