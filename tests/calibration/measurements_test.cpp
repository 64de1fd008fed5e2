// Parsers of calibration inputs: the placer-calibrate CSV, nccl-tests logs (several
// versions, MPI-tagged lines, malformed rows) and PyTorch profiler (Kineto) traces.
#include <gtest/gtest.h>

#include <string>

#include "simulator/calibration/measurements.h"
#include "simulator/calibration/profiler_trace.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"

namespace placer {
namespace {

std::string data(const std::string& name) {
  return std::string(PLACER_TEST_DATA_DIR) + "/calibration/" + name;
}

// The message of the FormatError thrown by f (fails the test when none is thrown).
template <typename F>
std::string format_error(F f) {
  try {
    f();
  } catch (const FormatError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a FormatError";
  return "";
}

TEST(MeasurementsCsv, ReadsRowsAndHeader) {
  const MeasurementSet s = load_measurements(data("measurements.csv"));
  EXPECT_EQ(s.format, "csv");
  ASSERT_EQ(s.rows.size(), 5u);
  EXPECT_EQ(s.header.at("nccl"), "2.21.5");
  EXPECT_EQ(s.header.at("device_count"), "2");
  EXPECT_EQ(s.header.at("some_future_key"), "ignored");
  const Measurement& g = s.rows[0];
  EXPECT_EQ(g.kind, MeasureKind::kGemm);
  EXPECT_EQ(g.op, "gemm");
  EXPECT_EQ(g.dtype, "fp32");
  EXPECT_EQ(g.shape, "m=1024;n=1024;k=1024");
  EXPECT_DOUBLE_EQ(g.flops, 2147483648.0);
  EXPECT_DOUBLE_EQ(g.bytes, 12582912.0);
  EXPECT_DOUBLE_EQ(g.time_s, 0.000224);
  EXPECT_DOUBLE_EQ(g.min_s, 0.000220);
  EXPECT_DOUBLE_EQ(g.max_s, 0.000230);
  EXPECT_EQ(g.iters, 50);
  EXPECT_EQ(g.line, 12);
  EXPECT_EQ(g.where(), data("measurements.csv") + ":12");
  const Measurement& c = s.rows[4];
  EXPECT_EQ(c.kind, MeasureKind::kCollective);
  EXPECT_EQ(c.op, "all_reduce");
  EXPECT_EQ(c.devices, 2);
  EXPECT_EQ(c.hosts, 1);
  EXPECT_EQ(s.rows[3].kind, MeasureKind::kMemcpy);
  EXPECT_EQ(s.rows[3].op, "p2p");
}

TEST(MeasurementsCsv, ErrorsNameTheLine) {
  EXPECT_NE(format_error([] {
              load_measurements(data("measurements_missing_column.csv"));
            }).find("measurements_missing_column.csv:2: header row: missing column 'max_s'"),
            std::string::npos);
  EXPECT_NE(format_error([] {
              load_measurements(data("measurements_bad_row.csv"));
            }).find("measurements_bad_row.csv:4: expected 12 comma-separated fields, got 10"),
            std::string::npos);
  EXPECT_NE(format_error([] {
              load_measurements(data("measurements_bad_kind.csv"));
            }).find("measurements_bad_kind.csv:2: kind: unknown kind 'attention'"),
            std::string::npos);
  const std::string header =
      "kind,op,dtype,shape,flops,bytes,devices,hosts,time_s,min_s,max_s,iters\n";
  EXPECT_NE(format_error([&] {
              parse_measurements_csv(header + "gemm,gemm,fp32,m=1,1e9,10,1,1,zero,0,0,5\n",
                                     "x.csv");
            }).find("x.csv:2: time_s: expected a finite number of normal magnitude, got 'zero'"),
            std::string::npos);
  EXPECT_NE(format_error([&] {
              parse_measurements_csv(header + "gemm,gemm,fp32,m=1,1e9,10,1,1,0,0,0,5\n", "x.csv");
            }).find("x.csv:2: time_s: must be > 0"),
            std::string::npos);
  EXPECT_NE(format_error([&] {
              parse_measurements_csv(
                  header + "collective,all_to_all_v,fp32,c=1,0,8,2,1,1e-5,1e-5,1e-5,5\n", "x.csv");
            }).find("x.csv:2: op: unknown collective 'all_to_all_v'"),
            std::string::npos);
  EXPECT_NE(format_error([] {
              parse_measurements_csv("# only comments\n", "empty.csv");
            }).find("empty.csv: no header row"),
            std::string::npos);
}

TEST(NcclTests, CurrentFormatTwoHosts) {
  const MeasurementSet s = load_measurements(data("all_reduce_perf.h100_2x8.log"));
  EXPECT_EQ(s.format, "nccl-tests");
  ASSERT_EQ(s.rows.size(), 5u);
  EXPECT_EQ(s.header.at("ranks"), "16");
  EXPECT_EQ(s.header.at("hosts"), "2");
  EXPECT_EQ(s.header.at("device"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s.header.at("nGpus"), "1");
  const Measurement& r = s.rows[3];  // 1 GiB
  EXPECT_EQ(r.op, "all_reduce");
  EXPECT_EQ(r.kind, MeasureKind::kCollective);
  EXPECT_EQ(r.dtype, "fp32");
  EXPECT_DOUBLE_EQ(r.bytes, 1073741824.0);
  EXPECT_DOUBLE_EQ(r.time_s, 6759.0e-6);
  EXPECT_DOUBLE_EQ(r.min_s, 6737.4e-6);
  EXPECT_DOUBLE_EQ(r.max_s, 6759.0e-6);
  EXPECT_EQ(r.devices, 16);
  EXPECT_EQ(r.hosts, 2);
  EXPECT_EQ(r.iters, 20);
  EXPECT_DOUBLE_EQ(s.rows[0].time_s, 135.8e-6);
  EXPECT_DOUBLE_EQ(s.rows[4].bytes, 8589934592.0);
}

TEST(NcclTests, OldFormatInfersRanksFromBusBandwidth) {
  // No root column, "error" instead of "#wrong", 5 of 32 ranks listed.
  const MeasurementSet s = load_measurements(data("old_format.all_reduce_perf.log"));
  ASSERT_EQ(s.rows.size(), 5u);
  EXPECT_EQ(s.header.at("ranks"), "32");
  EXPECT_EQ(s.header.at("hosts"), "0");  // unknown: the log does not list them all
  EXPECT_EQ(s.rows[2].devices, 32);
  EXPECT_DOUBLE_EQ(s.rows[2].bytes, 16777216.0);
  EXPECT_DOUBLE_EQ(s.rows[2].time_s, 447.8e-6);
  EXPECT_DOUBLE_EQ(s.rows[2].min_s, 447.8e-6);
  EXPECT_DOUBLE_EQ(s.rows[2].max_s, 449.8e-6);
  EXPECT_EQ(s.header.at("device"), "NVIDIA A100-SXM4-80GB");
}

TEST(NcclTests, MpiTaggedLinesAndNcclInfo) {
  const MeasurementSet s = load_measurements(data("interleaved_mpi.all_reduce_perf.log"));
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_EQ(s.header.at("ranks"), "24");  // from busbw / algbw; no "# Rank" lines
  EXPECT_EQ(s.header.at("hosts"), "0");
  EXPECT_DOUBLE_EQ(s.rows[0].bytes, 1048576.0);
  EXPECT_DOUBLE_EQ(s.rows[0].time_s, 1626.5e-6);
  EXPECT_DOUBLE_EQ(s.rows[1].min_s, 416.7e-6);
  EXPECT_DOUBLE_EQ(s.rows[2].time_s, 622.6e-6);
}

TEST(NcclTests, SendRecvFromTheShippedLog) {
  const MeasurementSet s =
      load_measurements(std::string(PLACER_SOURCE_DIR) +
                        "/datasets/clusters/measurements/a100_8gpu.sendrecv_perf.log");
  ASSERT_EQ(s.rows.size(), 4u);
  EXPECT_EQ(s.rows[0].op, "send_recv");
  EXPECT_EQ(s.rows[0].devices, 2);
  EXPECT_DOUBLE_EQ(s.rows[3].time_s, 5503.4e-6);
}

TEST(NcclTests, OutOfPlaceOnlyTableWithRootColumn) {
  // The published B200 tables print size, count, type, redop, root and the out-of-place
  // time, algbw and busbw only (8 fields, no #wrong): the header's root column tells.
  const std::string dir = std::string(PLACER_SOURCE_DIR) + "/datasets/clusters/measurements/";
  const MeasurementSet one = load_measurements(dir + "b200_gke_a4_8.all_reduce_perf.log");
  ASSERT_EQ(one.rows.size(), 12u);
  EXPECT_EQ(one.header.at("ranks"), "8");  // busbw / algbw = 1.75 = 2 (8 - 1) / 8
  EXPECT_EQ(one.rows[0].op, "all_reduce");
  EXPECT_DOUBLE_EQ(one.rows[0].bytes, 8388608.0);
  EXPECT_DOUBLE_EQ(one.rows[0].time_s, 80.32e-6);
  EXPECT_DOUBLE_EQ(one.rows[9].time_s, 10171e-6);
  EXPECT_DOUBLE_EQ(one.rows[9].min_s, 10171e-6);
  const MeasurementSet two = load_measurements(dir + "b200_gke_a4_2x8.all_reduce_perf.log");
  ASSERT_EQ(two.rows.size(), 12u);
  EXPECT_EQ(two.rows[11].devices, 16);
  EXPECT_DOUBLE_EQ(two.rows[11].time_s, 47062e-6);
}

TEST(NcclTests, MalformedRowsAreNamedByLine) {
  EXPECT_NE(format_error([] {
              load_measurements(data("malformed.all_gather_perf.log"));
            }).find("malformed.all_gather_perf.log:9: malformed result row"),
            std::string::npos);
  EXPECT_NE(format_error([] { load_measurements(data("bad_time.broadcast_perf.log")); })
                .find("bad_time.broadcast_perf.log:6: out-of-place time: expected a finite number "
                      "of normal magnitude, got 'fast'"),
            std::string::npos);
  EXPECT_NE(format_error([] {
              load_measurements(data("no_op.log"));
            }).find("no_op.log:2: cannot tell which collective"),
            std::string::npos);
  EXPECT_NE(format_error([] {
              parse_nccl_tests_log("# nThread 1 nGpus 2\nnothing here\n", "e.log", "all_reduce");
            }).find("e.log: no nccl-tests result rows"),
            std::string::npos);
  EXPECT_NE(format_error([] {
              parse_nccl_tests_log("x", "e.log", "allsum");
            }).find("e.log: unknown collective 'allsum'"),
            std::string::npos);
}

TEST(NcclTests, OpGivenExplicitly) {
  // "OP=path" names the collective of a log that does not say.
  const MeasurementSet s = load_measurements("broadcast=" + data("no_op.log"));
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.rows[0].op, "broadcast");
  EXPECT_DOUBLE_EQ(s.rows[0].time_s, 20e-6);
  EXPECT_EQ(normalize_collective_name("AllReduce"), "all_reduce");
  EXPECT_EQ(normalize_collective_name("sendrecv_perf"), "send_recv");
  EXPECT_EQ(normalize_collective_name("matmul"), "");
}

TEST(ProfilerTrace, KernelsGetTheirCpuOps) {
  const ProfilerTrace t = load_profiler_trace(data("kineto_trace.json"));
  EXPECT_EQ(t.cpu_ops, 2);
  ASSERT_EQ(t.kernels.size(), 4u);
  // Through the CUDA runtime call's correlation id.
  EXPECT_EQ(t.kernels[0].name, "ampere_sgemm_128x64_tn");
  EXPECT_EQ(t.kernels[0].op_name, "aten::addmm");
  EXPECT_EQ(t.kernels[0].op_id, 7);
  EXPECT_DOUBLE_EQ(t.kernels[0].dur_s, 900e-6);
  EXPECT_DOUBLE_EQ(t.kernels[0].start_s, 1020e-6);
  EXPECT_DOUBLE_EQ(t.kernels[0].op_flops, 137438953472.0);
  EXPECT_EQ(t.kernels[0].category, OpCategory::kMatMul);
  // Directly through the External id.
  EXPECT_EQ(t.kernels[1].op_name, "aten::relu");
  EXPECT_EQ(t.kernels[1].category, OpCategory::kElementwise);
  EXPECT_DOUBLE_EQ(t.kernels[1].dur_s, 25.5e-6);
  EXPECT_EQ(t.kernels[2].cat, "gpu_memcpy");
  EXPECT_EQ(t.kernels[2].op_name, "");
  EXPECT_EQ(t.kernels[3].category, OpCategory::kCommunication);
}

TEST(ProfilerTrace, Classification) {
  EXPECT_EQ(classify_kernel("aten::cudnn_convolution", "sm80_xmma_fprop_implicit_gemm"),
            OpCategory::kConv);
  EXPECT_EQ(classify_kernel("", "sm80_xmma_fprop_implicit_gemm_indexed_f16f16"), OpCategory::kConv);
  EXPECT_EQ(classify_kernel("aten::mm", "cutlass_80_tensorop_s1688gemm"), OpCategory::kMatMul);
  EXPECT_EQ(classify_kernel("aten::_softmax", "softmax_warp_forward"), OpCategory::kSoftmax);
  EXPECT_EQ(classify_kernel("aten::native_layer_norm", "vectorized_layer_norm_kernel"),
            OpCategory::kNormalization);
  EXPECT_EQ(classify_kernel("aten::sum", "reduce_kernel"), OpCategory::kReduction);
  EXPECT_EQ(classify_kernel("aten::embedding", "indexSelectLargeIndex"), OpCategory::kEmbedding);
  EXPECT_EQ(classify_kernel("Optimizer.step#Adam.step", "multi_tensor_apply_kernel"),
            OpCategory::kOptimizer);
  EXPECT_EQ(classify_kernel("", "some_custom_kernel"), OpCategory::kOther);
}

TEST(ProfilerTrace, MalformedInput) {
  EXPECT_NE(
      format_error([] {
        load_profiler_trace(data("kineto_bad_dur.json"));
      }).find("kineto_bad_dur.json: traceEvents[1]: kernel event 'k1' needs numeric ts and dur"),
      std::string::npos);
  EXPECT_NE(format_error([] {
              parse_profiler_trace("{\"traceEvents\": [", "t.json");
            }).find("t.json: line 1, column 18: malformed JSON"),
            std::string::npos);
  EXPECT_NE(format_error([] {
              parse_profiler_trace("{\"events\": []}", "t.json");
            }).find("t.json: not a Chrome trace"),
            std::string::npos);
  // A bare array of events is accepted.
  EXPECT_EQ(parse_profiler_trace("[]", "a.json").kernels.size(), 0u);
}

TEST(Measurements, MissingFile) {
  EXPECT_THROW(load_measurements(data("does_not_exist.csv")), FileError);
}

}  // namespace
}  // namespace placer
