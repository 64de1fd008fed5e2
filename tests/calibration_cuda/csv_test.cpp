// placer-calibrate's CSV writer: the format-1 contract read by `placer calibrate fit`.
#include <gtest/gtest.h>

#include <sstream>

#include "csv.h"

namespace placer::calibrate {
namespace {

TEST(CalibrateCsv, SummarizeMedianMinMax) {
  const Stats odd = summarize({3.0, 1.0, 2.0});
  EXPECT_DOUBLE_EQ(odd.median, 2.0);
  EXPECT_DOUBLE_EQ(odd.min, 1.0);
  EXPECT_DOUBLE_EQ(odd.max, 3.0);
  EXPECT_EQ(odd.count, 3);
  const Stats even = summarize({4.0, 1.0, 3.0, 2.0});
  EXPECT_DOUBLE_EQ(even.median, 2.5);
  EXPECT_EQ(even.count, 4);
  EXPECT_THROW(summarize({}), std::invalid_argument);
}

TEST(CalibrateCsv, RowMatchesTheContract) {
  Measurement m;
  m.kind = "gemm";
  m.op = "gemm";
  m.dtype = "fp16";
  m.shape = "m=4096;n=4096;k=4096";
  m.flops = 137438953472ull;
  m.bytes = 100663296ull;
  m.time = summarize({0.000231, 0.000229, 0.000240});
  EXPECT_EQ(format_row(m),
            "gemm,gemm,fp16,m=4096;n=4096;k=4096,137438953472,100663296,1,1,2.310000e-04,"
            "2.290000e-04,2.400000e-04,3");
  m.shape = "a,b";
  EXPECT_THROW(format_row(m), std::invalid_argument);
  m.shape = "";
  EXPECT_THROW(format_row(m), std::invalid_argument);
}

TEST(CalibrateCsv, HeaderThenColumnsThenRows) {
  RunInfo info;
  info.host = "node1";
  info.device = "NVIDIA H100 80GB HBM3";
  info.device_count = 8;
  info.compute_capability = "9.0";
  info.driver = "550.54.15 (CUDA 12.4)";
  info.cuda_runtime = "12.4";
  info.cublas = "12.4.5";
  info.cudnn = "9.1.0";
  info.nccl = "2.21.5";
  info.date = "2026-11-22T10:00:00Z";
  info.command = "placer-calibrate --quick\nx";  // a newline must not break the block
  CsvSink sink;
  Measurement m;
  m.kind = "collective";
  m.op = "all_reduce";
  m.dtype = "fp32";
  m.shape = "count=262144";
  m.bytes = 1048576;
  m.devices = 8;
  m.time = summarize({1e-5, 2e-5});
  sink.add(m);
  std::ostringstream out;
  sink.write(out, info);
  const std::string expected =
      "# placer-calibrate measurements, format 1\n"
      "# tool: placer-calibrate 0.1\n"
      "# host: node1\n"
      "# device: NVIDIA H100 80GB HBM3\n"
      "# device_count: 8\n"
      "# compute_capability: 9.0\n"
      "# driver: 550.54.15 (CUDA 12.4)\n"
      "# cuda_runtime: 12.4\n"
      "# cublas: 12.4.5\n"
      "# cudnn: 9.1.0\n"
      "# nccl: 2.21.5\n"
      "# hosts: 1\n"
      "# world_size: 1\n"
      "# date: 2026-11-22T10:00:00Z\n"
      "# command: placer-calibrate --quick x\n"
      "kind,op,dtype,shape,flops,bytes,devices,hosts,time_s,min_s,max_s,iters\n"
      "collective,all_reduce,fp32,count=262144,0,1048576,8,1,1.500000e-05,1.000000e-05,"
      "2.000000e-05,2\n";
  EXPECT_EQ(out.str(), expected);
}

TEST(CalibrateCsv, UtcNowIsIso8601) {
  const std::string t = utc_now();
  ASSERT_EQ(t.size(), 20u);
  EXPECT_EQ(t[4], '-');
  EXPECT_EQ(t[10], 'T');
  EXPECT_EQ(t.back(), 'Z');
}

}  // namespace
}  // namespace placer::calibrate
