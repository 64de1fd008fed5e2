#include "grid.h"

namespace placer::calibrate {

std::vector<std::size_t> size_sweep(std::size_t min_bytes, std::size_t max_bytes, int step) {
  std::vector<std::size_t> sizes;
  if (min_bytes == 0 || min_bytes > max_bytes || step < 2) return sizes;
  std::size_t s = min_bytes;
  while (true) {
    sizes.push_back(s);
    if (s > max_bytes / static_cast<std::size_t>(step)) break;
    s *= static_cast<std::size_t>(step);
  }
  if (sizes.back() != max_bytes) sizes.push_back(max_bytes);
  return sizes;
}

std::string GemmShape::shape() const {
  return "m=" + std::to_string(m) + ";n=" + std::to_string(n) + ";k=" + std::to_string(k);
}

std::vector<GemmShape> gemm_shapes(bool quick) {
  std::vector<GemmShape> shapes;
  const std::vector<std::int64_t> square =
      quick ? std::vector<std::int64_t>{256, 1024, 4096}
            : std::vector<std::int64_t>{256, 512, 1024, 2048, 4096, 8192};
  for (auto s : square) shapes.push_back({s, s, s});
  // Skinny and tall: small-batch inference (m = 64), transformer projections (tokens x
  // hidden -> 4*hidden and back), and a short reduction dimension.
  shapes.push_back({64, 4096, 4096});
  shapes.push_back({8192, 4096, 1024});
  shapes.push_back({4096, 256, 4096});
  if (!quick) {
    shapes.push_back({16, 8192, 8192});
    shapes.push_back({256, 8192, 2048});
    shapes.push_back({8192, 16384, 4096});
    shapes.push_back({8192, 4096, 16384});
    shapes.push_back({8192, 8192, 256});
    shapes.push_back({2048, 2048, 8192});
  }
  return shapes;
}

std::string ConvShape::shape() const {
  return "n=" + std::to_string(n) + ";c=" + std::to_string(c) + ";h=" + std::to_string(h) +
         ";w=" + std::to_string(w) + ";k=" + std::to_string(k) + ";r=" + std::to_string(r) +
         ";s=" + std::to_string(s) + ";stride=" + std::to_string(stride) +
         ";pad=" + std::to_string(pad);
}

std::uint64_t ConvShape::flops() const {
  return 2ull * static_cast<std::uint64_t>(n) * k * out_h() * out_w() * c * r * s;
}

std::uint64_t ConvShape::bytes(std::size_t elem) const {
  const std::uint64_t in = static_cast<std::uint64_t>(n) * c * h * w;
  const std::uint64_t filt = static_cast<std::uint64_t>(k) * c * r * s;
  const std::uint64_t out = static_cast<std::uint64_t>(n) * k * out_h() * out_w();
  return (in + filt + out) * elem;
}

std::vector<ConvShape> conv_shapes(bool quick) {
  //                 n   c    h    w    k    r  s  stride pad
  std::vector<ConvShape> all = {
      {32, 3, 224, 224, 64, 7, 7, 2, 3},     // ResNet-50 conv1
      {32, 64, 56, 56, 64, 1, 1, 1, 0},      // ResNet-50 conv2_x 1x1 reduce
      {32, 64, 56, 56, 64, 3, 3, 1, 1},      // ResNet-50 conv2_x 3x3
      {32, 64, 56, 56, 256, 1, 1, 1, 0},     // ResNet-50 conv2_x 1x1 expand
      {32, 128, 28, 28, 128, 3, 3, 1, 1},    // ResNet-50 conv3_x 3x3
      {32, 256, 14, 14, 256, 3, 3, 1, 1},    // ResNet-50 conv4_x 3x3
      {32, 1024, 14, 14, 256, 1, 1, 1, 0},   // ResNet-50 conv4_x 1x1 reduce
      {32, 512, 7, 7, 512, 3, 3, 1, 1},      // ResNet-50 conv5_x 3x3
      {32, 64, 224, 224, 64, 3, 3, 1, 1},    // VGG-16 conv1_2
      {32, 128, 112, 112, 128, 3, 3, 1, 1},  // VGG-16 conv2_2
      {32, 256, 56, 56, 256, 3, 3, 1, 1},    // VGG-16 conv3_x
      {32, 512, 28, 28, 512, 3, 3, 1, 1},    // VGG-16 conv4_x
      {32, 512, 14, 14, 512, 3, 3, 1, 1},    // VGG-16 conv5_x
  };
  if (!quick) return all;
  return {all[0], all[2], all[5], all[11]};
}

std::vector<std::size_t> element_counts(std::size_t elem, std::size_t max_bytes, bool quick) {
  std::vector<std::size_t> counts;
  const std::size_t step = quick ? 16 : 4;
  for (std::size_t n = 1024; n <= (std::size_t{1} << 28) && n * elem <= max_bytes; n *= step)
    counts.push_back(n);
  return counts;
}

}  // namespace placer::calibrate
