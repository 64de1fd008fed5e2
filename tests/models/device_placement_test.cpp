// Device placement of the tensors the models make themselves: every tensor a
// forward pass creates must live on its input's device, or a GPU forward pass fails with a
// device mismatch. A CPU-only LibTorch cannot run CUDA: the helpers that make tensors are
// asked for the "meta" device (shapes only, no data) instead (LibTorch 1.13 cannot move a
// whole module there, so the forward passes are checked on a GPU only:
// tests/gdp/gdp_cuda_test.cpp, when one is visible).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/transformer_xl.h"

namespace placer {
namespace {

TEST(DevicePlacement, RelativeSinusoidsFollowTheOptions) {
  const auto plain = relative_sinusoids(3, 5, 8);
  EXPECT_EQ(plain.scalar_type(), torch::kFloat);
  EXPECT_TRUE(plain.device().is_cpu());
  // Same values, bit for bit, with explicit CPU float options (what the layers pass).
  EXPECT_TRUE(
      torch::equal(plain, relative_sinusoids(3, 5, 8, torch::TensorOptions(torch::kFloat))));
  // Another dtype: computed in float, then converted.
  const auto dbl = relative_sinusoids(3, 5, 8, torch::TensorOptions(torch::kDouble));
  EXPECT_EQ(dbl.scalar_type(), torch::kDouble);
  EXPECT_TRUE(torch::equal(dbl, plain.to(torch::kDouble)));
  const auto meta =
      relative_sinusoids(3, 5, 8, torch::TensorOptions(torch::kFloat).device(torch::kMeta));
  EXPECT_TRUE(meta.device().is_meta());
  EXPECT_EQ(meta.sizes(), plain.sizes());
}

TEST(DevicePlacement, FirstDevicesOnAGivenDevice) {
  DeviceHead head(8, 4);
  const auto cpu = head->first_devices(3);
  EXPECT_TRUE(cpu.device().is_cpu());
  EXPECT_TRUE(torch::equal(cpu, head->first_devices(3, torch::kCPU)));
  EXPECT_TRUE(head->first_devices(3, torch::kMeta).device().is_meta());
}

TEST(DevicePlacement, StepwiseMaskOfAnotherDtype) {
  // forward() moves its mask to the scores' device and dtype: a uint8 mask acts as the bool one.
  torch::manual_seed(3);
  TransformerXL net(TransformerXLOptions(8, 2).layers(2).segment(4).mem_len(4).ffn(16));
  const auto x = torch::randn({4, 8});
  auto mask = torch::zeros({4, 4}, torch::kBool);
  mask[0][3] = true;
  const auto with_bool = net->forward(x, {}, mask).out;
  const auto with_u8 = net->forward(x, {}, mask.to(torch::kUInt8)).out;
  EXPECT_TRUE(torch::equal(with_bool, with_u8));
  EXPECT_FALSE(torch::equal(with_bool, net->forward(x).out));
}

}  // namespace
}  // namespace placer
