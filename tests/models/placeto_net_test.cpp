// PlacetoNet's logit clipping (models/placeto_net.h): logits = c * tanh(raw / c), masked
// devices still -1e9, a floor on every allowed device's probability, and 0 = unclipped.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <torch/torch.h>

#include "models/placeto_net.h"
#include "src/util/error.h"

namespace placer {
namespace {

// A chain of 3 nodes 0 -> 1 -> 2; devices 0, 1, 3 of 4 allowed.
PlacetoGraphTensors chain3() {
  const std::vector<int> par_off = {0, 0, 1, 2}, par = {0, 1};
  const std::vector<int> chi_off = {0, 1, 2, 2}, chi = {1, 2};
  // relation[v][u]: 0 self, 1 u ancestor of v, 2 u descendant of v.
  const std::vector<uint8_t> rel = {0, 2, 2, 1, 0, 2, 1, 1, 0};
  return placeto_graph_tensors(3, par_off, par, chi_off, chi, rel, {1, 1, 0, 1});
}

// The last layer outputs its bias only: logits before clipping = `raw` for every state.
PlacetoNet net_with_raw_logits(double clip, const std::vector<float>& raw) {
  torch::manual_seed(3);
  PlacetoNet net(PlacetoNetOptions(/*input_dim=*/9, /*max_devices=*/4).logit_clip(clip));
  torch::NoGradGuard g;
  net->p3->weight.zero_();
  for (size_t i = 0; i < raw.size(); ++i) net->p3->bias[int64_t(i)] = raw[i];
  return net;
}

TEST(PlacetoNetClip, SquashesLogitsAndKeepsTheMask) {
  const PlacetoGraphTensors g = chain3();
  const std::vector<float> raw = {12.f, -7.f, 4.f, 1.f};
  torch::manual_seed(1);
  const torch::Tensor x = torch::rand({2, 3, 9});
  const torch::Tensor cur = torch::tensor({0, 2}, torch::kLong);

  PlacetoNet clipped = net_with_raw_logits(2.5, raw);
  const torch::Tensor l = clipped->forward(x, cur, g);
  ASSERT_EQ(l.sizes(), (std::vector<int64_t>{2, 4}));
  for (int64_t b = 0; b < 2; ++b) {
    EXPECT_NEAR(l[b][0].item<double>(), 2.5 * std::tanh(12.0 / 2.5), 1e-5);  // 2.49983
    EXPECT_NEAR(l[b][1].item<double>(), 2.5 * std::tanh(-7.0 / 2.5), 1e-5);  // -2.48158
    EXPECT_EQ(l[b][2].item<double>(), -1e9);                                // masked
    EXPECT_NEAR(l[b][3].item<double>(), 2.5 * std::tanh(1.0 / 2.5), 1e-5);   // 0.95014
  }
  // Probabilities: device 2 exactly 0, every allowed device above the floor
  // 1 / (1 + 2 e^5) = 0.003358 (3 allowed devices, clip 2.5).
  const torch::Tensor p = torch::softmax(l, -1);
  EXPECT_EQ(p[0][2].item<double>(), 0.0);
  const double floor = 1.0 / (1.0 + 2.0 * std::exp(5.0));
  EXPECT_NEAR(floor, 0.003358, 1e-6);
  for (int d : {0, 1, 3}) EXPECT_GT(p[0][d].item<double>(), floor);
  // By hand: exp of the clipped logits, normalised over devices 0, 1, 3.
  const double e0 = std::exp(2.5 * std::tanh(12.0 / 2.5));
  const double e1 = std::exp(2.5 * std::tanh(-7.0 / 2.5));
  const double e3 = std::exp(2.5 * std::tanh(1.0 / 2.5));
  EXPECT_NEAR(p[1][1].item<double>(), e1 / (e0 + e1 + e3), 1e-6);
  EXPECT_NEAR(p[1][1].item<double>(), 0.005631, 1e-5);

  // Unclipped (0): the raw logits, the same greedy device.
  PlacetoNet plain = net_with_raw_logits(0, raw);
  const torch::Tensor r = plain->forward(x, cur, g);
  EXPECT_NEAR(r[0][0].item<double>(), 12.0, 1e-5);
  EXPECT_NEAR(r[0][1].item<double>(), -7.0, 1e-5);
  EXPECT_EQ(r[0][2].item<double>(), -1e9);
  EXPECT_EQ(r.argmax(-1)[0].item<int64_t>(), l.argmax(-1)[0].item<int64_t>());
  EXPECT_LT(torch::softmax(r, -1)[0][1].item<double>(), 1e-8);  // e^-19 / ...: saturated
}

TEST(PlacetoNetClip, DefaultAndErrors) {
  EXPECT_EQ(PlacetoNetOptions(9, 4).logit_clip(), 2.5);
  EXPECT_THROW(PlacetoNet(PlacetoNetOptions(9, 4).logit_clip(-1)), ValidationError);
  EXPECT_THROW(PlacetoNet(PlacetoNetOptions(9, 4).logit_clip(std::nan(""))), ValidationError);
  EXPECT_THROW(PlacetoNet(PlacetoNetOptions(9, 4).logit_clip(INFINITY)), ValidationError);
}

}  // namespace
}  // namespace placer
