// placer-calibrate's host-only pieces: command-line parsing, size sweeps and shapes.
#include <gtest/gtest.h>

#include <vector>

#include "args.h"
#include "grid.h"

namespace placer::calibrate {
namespace {

Options parse(std::vector<const char*> args) {
  args.insert(args.begin(), "placer-calibrate");
  return parse_args(static_cast<int>(args.size()), args.data());
}

TEST(CalibrateArgs, Defaults) {
  const Options o = parse({});
  EXPECT_EQ(o.out, "placer-calibrate.csv");
  EXPECT_FALSE(o.quick);
  EXPECT_EQ(o.only, all_kinds());
  EXPECT_EQ(o.dtypes, all_dtypes());
  EXPECT_EQ(o.min_bytes, 8u);
  EXPECT_EQ(o.max_bytes, 1073741824u);
  EXPECT_EQ(o.step, 2);
  EXPECT_EQ(o.warmup, 5);
  EXPECT_EQ(o.iters, 20);
  EXPECT_TRUE(o.devices.empty());
  EXPECT_TRUE(o.ranks.empty());
  EXPECT_EQ(o.command, "placer-calibrate");
}

TEST(CalibrateArgs, AllOptions) {
  const Options o = parse({"--out", "m.csv", "--only", "collective,gemm", "--dtypes=bf16,fp32",
                           "--min-bytes", "4K", "--max-bytes=64MiB", "--warmup", "1", "--iters",
                           "7", "--devices", "2,0", "--step", "4", "--ranks", "8,2,4"});
  EXPECT_EQ(o.out, "m.csv");
  EXPECT_EQ(o.only, (std::vector<std::string>{"gemm", "collective"}));  // canonical order
  EXPECT_EQ(o.dtypes, (std::vector<std::string>{"fp32", "bf16"}));
  EXPECT_EQ(o.min_bytes, 4096u);
  EXPECT_EQ(o.max_bytes, 64u << 20);
  EXPECT_EQ(o.warmup, 1);
  EXPECT_EQ(o.iters, 7);
  EXPECT_EQ(o.step, 4);
  EXPECT_EQ(o.devices, (std::vector<int>{2, 0}));
  EXPECT_EQ(o.ranks, (std::vector<int>{2, 4, 8}));  // sorted
  EXPECT_TRUE(o.runs("gemm"));
  EXPECT_FALSE(o.runs("conv"));
  EXPECT_TRUE(o.has_dtype("bf16"));
  EXPECT_FALSE(o.has_dtype("fp16"));
}

TEST(CalibrateArgs, QuickLowersDefaultsButExplicitValuesWin) {
  const Options q = parse({"--quick"});
  EXPECT_EQ(q.warmup, 2);
  EXPECT_EQ(q.iters, 5);
  EXPECT_EQ(q.step, 4);
  const Options e = parse({"--iters", "9", "--quick"});
  EXPECT_EQ(e.iters, 9);
  EXPECT_EQ(e.warmup, 2);
}

TEST(CalibrateArgs, CommandIsRecordedQuoted) {
  const Options o = parse({"--out", "a b.csv", "--quick"});
  EXPECT_EQ(o.command, "placer-calibrate --out 'a b.csv' --quick");
}

TEST(CalibrateArgs, Sizes) {
  EXPECT_EQ(parse_size("8", "x"), 8u);
  EXPECT_EQ(parse_size("8B", "x"), 8u);
  EXPECT_EQ(parse_size("64k", "x"), 65536u);
  EXPECT_EQ(parse_size("1M", "x"), 1048576u);
  EXPECT_EQ(parse_size("1G", "x"), 1073741824u);
  EXPECT_EQ(parse_size("2GiB", "x"), 2147483648u);
  EXPECT_EQ(format_size(1073741824u), "1 GiB");
  EXPECT_EQ(format_size(1536u), "1.50 KiB");
  EXPECT_EQ(format_size(8u), "8 B");
}

void expect_usage_error(std::vector<const char*> args, const std::string& needle) {
  try {
    parse(args);
    FAIL() << "no error; expected one mentioning '" << needle << "'";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(CalibrateArgs, BadInputIsAPreciseUsageError) {
  expect_usage_error({"--bogus"}, "unknown argument '--bogus'");
  expect_usage_error({"--iters"}, "--iters: missing value");
  expect_usage_error({"--iters", "0"}, "out of range [1, 100000]");
  expect_usage_error({"--iters", "5x"}, "expected an integer, got '5x'");
  expect_usage_error({"--warmup", "-1"}, "out of range");
  expect_usage_error({"--only", "gemm,fft"}, "unknown value 'fft'");
  expect_usage_error({"--only", ""}, "--only: empty list");
  expect_usage_error({"--dtypes", "fp8"}, "unknown value 'fp8'");
  expect_usage_error({"--max-bytes", "1Q"}, "unknown size unit 'Q'");
  expect_usage_error({"--max-bytes", "G"}, "expected a size");
  expect_usage_error({"--max-bytes", "99999999999999999999"}, "too large");
  expect_usage_error({"--min-bytes", "0"}, "at least 1 byte");
  expect_usage_error({"--min-bytes", "2M", "--max-bytes", "1M"}, "larger than --max-bytes");
  expect_usage_error({"--devices", "0,0"}, "listed twice");
  expect_usage_error({"--devices", "0,,1"}, "expected an integer");
  expect_usage_error({"--step", "1"}, "out of range [2, 1024]");
  expect_usage_error({"--quick=yes"}, "takes no value");
  expect_usage_error({"--ranks", "1"}, "--ranks: 1 is out of range [2, 1024]");
  expect_usage_error({"--ranks", "4,2,4"}, "--ranks: 4 is listed twice");
}

TEST(CalibrateGrid, SizeSweepIsGeometricAndEndsAtMax) {
  EXPECT_EQ(size_sweep(8, 128, 2), (std::vector<std::size_t>{8, 16, 32, 64, 128}));
  EXPECT_EQ(size_sweep(8, 100, 4), (std::vector<std::size_t>{8, 32, 100}));
  EXPECT_EQ(size_sweep(8, 8, 2), (std::vector<std::size_t>{8}));
  EXPECT_TRUE(size_sweep(16, 8, 2).empty());
  const auto full = size_sweep(8, std::size_t{1} << 30, 2);
  EXPECT_EQ(full.size(), 28u);  // 2^3 .. 2^30
  EXPECT_EQ(full.back(), std::size_t{1} << 30);
}

TEST(CalibrateGrid, GemmShapesAndCounts) {
  const auto quick = gemm_shapes(true), full = gemm_shapes(false);
  EXPECT_EQ(quick.size(), 6u);
  EXPECT_EQ(full.size(), 15u);
  EXPECT_EQ(full[5].shape(), "m=8192;n=8192;k=8192");
  EXPECT_EQ(full[5].flops(), 2ull * 8192 * 8192 * 8192);  // 1.0995e12
  const GemmShape s{64, 4096, 4096};
  EXPECT_EQ(s.flops(), 2147483648ull);
  EXPECT_EQ(s.bytes(2), (64ull * 4096 + 4096ull * 4096 + 64ull * 4096) * 2);
}

TEST(CalibrateGrid, ConvShapeArithmetic) {
  const ConvShape conv1{32, 3, 224, 224, 64, 7, 7, 2, 3};  // ResNet-50 conv1
  EXPECT_EQ(conv1.out_h(), 112);
  EXPECT_EQ(conv1.out_w(), 112);
  // 2 * N*K*P*Q * C*R*S = 2 * 32*64*112*112 * 3*7*7
  EXPECT_EQ(conv1.flops(), 2ull * 32 * 64 * 112 * 112 * 3 * 7 * 7);
  EXPECT_EQ(conv1.bytes(4), (32ull * 3 * 224 * 224 + 64ull * 3 * 7 * 7 + 32ull * 64 * 112 * 112) * 4);
  EXPECT_EQ(conv1.shape(), "n=32;c=3;h=224;w=224;k=64;r=7;s=7;stride=2;pad=3");
  EXPECT_EQ(conv_shapes(false).size(), 13u);
  EXPECT_EQ(conv_shapes(true).size(), 4u);
}

TEST(CalibrateGrid, ElementCountsRespectMaxBytes) {
  EXPECT_EQ(element_counts(4, 64 * 1024, false), (std::vector<std::size_t>{1024, 4096, 16384}));
  EXPECT_EQ(element_counts(2, 1 << 20, true), (std::vector<std::size_t>{1024, 16384, 262144}));
  const auto full = element_counts(4, std::size_t{1} << 30, false);
  EXPECT_EQ(full.back(), std::size_t{1} << 28);  // 1 GiB of fp32
  EXPECT_EQ(full.size(), 10u);
  EXPECT_TRUE(element_counts(4, 1000, false).empty());
}

}  // namespace
}  // namespace placer::calibrate
