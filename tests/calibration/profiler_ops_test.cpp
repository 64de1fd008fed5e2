// Per-op rows of profiler traces (profiler_ops.h): the recorded CPU-op inputs, the FLOP /
// byte rules, dtypes, kernel counts, the predictions of check_profiled_ops, and gzipped
// traces. The numbers are hand-computed from tests/data/calibration/kineto_ops.json.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "simulator/calibration/profiler_check.h"
#include "simulator/calibration/profiler_trace.h"
#include "simulator/cost_profile.h"
#include "src/io/cluster_yaml.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"
#include "tests/scratch_dir_test.h"

namespace placer {
namespace {

std::string data(const std::string& name) {
  return std::string(PLACER_TEST_DATA_DIR) + "/calibration/" + name;
}

const ProfiledOp& row(const std::vector<ProfiledOp>& rows, const std::string& op,
                      const std::string& kind = "kernel") {
  for (const ProfiledOp& r : rows) {
    if (r.op == op && r.kind == kind) return r;
  }
  ADD_FAILURE() << "no " << kind << " row for " << op;
  static const ProfiledOp none;
  return none;
}

TEST(ProfilerTraceInputs, RecordShapesArgsAreKept) {
  const ProfilerTrace t = load_profiler_trace(data("kineto_ops.json"));
  ASSERT_TRUE(t.ops.count(2));
  const ProfiledCpuOp& mm = t.ops.at(2);
  EXPECT_EQ(mm.name, "aten::mm");
  EXPECT_EQ(mm.id, 2);
  ASSERT_EQ(mm.inputs.size(), 2u);
  EXPECT_EQ(mm.inputs[0].type, "float");
  EXPECT_EQ(mm.inputs[1].dims, (std::vector<std::vector<long long>>{{128, 32}}));
  EXPECT_EQ(mm.inputs[1].strides, (std::vector<std::vector<long long>>{{1, 128}}));
  EXPECT_FALSE(mm.inputs[0].list);
  // A TensorList: dims as a list of lists, one per member.
  const ProfiledCpuOp& fa = t.ops.at(4);
  ASSERT_EQ(fa.inputs.size(), 3u);
  EXPECT_TRUE(fa.inputs[0].list);
  EXPECT_EQ(fa.inputs[0].dims, (std::vector<std::vector<long long>>{{100, 10}, {10}}));
  EXPECT_EQ(fa.inputs[2].type, "Scalar");
  EXPECT_EQ(fa.inputs[2].value, "1");
  // A TensorList whose members were not recorded (torch 2.11 foreach ops): no dims.
  const ProfiledCpuOp& fm = t.ops.at(5);
  EXPECT_TRUE(fm.inputs[0].list);
  EXPECT_TRUE(fm.inputs[0].dims.empty());
  // Concrete inputs and a 0-dim / None argument.
  const ProfiledCpuOp& conv = t.ops.at(6);
  EXPECT_EQ(conv.inputs[3].value, "[2, 2]");
  EXPECT_EQ(t.ops.at(1).inputs[2].type, "");
  // No record_shapes args at all.
  EXPECT_TRUE(t.ops.at(10).inputs.empty());
  // Kernel grid and memset bytes.
  EXPECT_EQ(t.kernels[0].blocks, 8);
  bool memset = false;
  for (const ProfiledKernel& k : t.kernels) {
    if (k.cat == "gpu_memset") {
      memset = true;
      EXPECT_DOUBLE_EQ(k.bytes, 4096);
    }
  }
  EXPECT_TRUE(memset);
}

TEST(ProfilerTraceInputs, OlderTracesWithoutTypesParse) {
  // kineto_trace.json: "Input Dims" without "Input type", and ops without any args.
  const ProfilerTrace t = load_profiler_trace(data("kineto_trace.json"));
  ASSERT_TRUE(t.ops.count(7));
  EXPECT_EQ(t.ops.at(7).inputs.size(), 3u);
  EXPECT_EQ(t.ops.at(7).inputs[0].type, "");
  EXPECT_TRUE(t.ops.at(8).inputs.empty());
  std::vector<std::string> notes;
  const std::vector<ProfiledOp> rows = profiled_ops(t, &notes);
  ASSERT_EQ(rows.size(), 2u);  // addmm, relu (the memcpy and NCCL kernel have no CPU op)
  EXPECT_EQ(rows[0].op, "aten::addmm");
  EXPECT_DOUBLE_EQ(rows[0].bytes, 0);  // no types: no element sizes
  EXPECT_FALSE(rows[1].has_shapes);
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("2 kernel / memcpy / memset events"), std::string::npos) << notes[0];
}

TEST(ProfiledOps, RulesOnTheFixture) {
  std::vector<std::string> notes;
  const std::vector<ProfiledOp> rows = profiled_ops(load_profiler_trace(data("kineto_ops.json")), &notes);
  // 9 ops with kernels (aten::linear launched none), then the conv's memset.
  ASSERT_EQ(rows.size(), 10u);
  EXPECT_EQ(rows[0].op, "aten::mm");
  EXPECT_EQ(rows[9].kind, "memset");

  // mm [64,128] x [128,32]: 2 x 64 x 32 x 128 FLOPs; (64x128 + 128x32 + 64x32) x 4 bytes.
  const ProfiledOp& mm = row(rows, "aten::mm");
  EXPECT_DOUBLE_EQ(mm.flops, 524288);
  EXPECT_DOUBLE_EQ(mm.bytes, 57344);
  EXPECT_EQ(mm.dtype, DType::kF32);
  EXPECT_EQ(mm.category, OpCategory::kMatMul);
  EXPECT_EQ(mm.kernels, 1);
  EXPECT_DOUBLE_EQ(mm.measured_s, 10e-6);
  EXPECT_EQ(mm.op_id, 2);

  // add_ in place, bf16 [1024,256] += [256]: reads 262144 x 2 + 256 x 2, writes 262144 x 2.
  const ProfiledOp& add = row(rows, "aten::add_");
  EXPECT_DOUBLE_EQ(add.bytes, 1049088);
  EXPECT_DOUBLE_EQ(add.flops, 262144);
  EXPECT_EQ(add.dtype, DType::kBF16);
  EXPECT_EQ(add.rule, "in-place");
  EXPECT_EQ(add.category, OpCategory::kElementwise);

  // _foreach_add_(TensorList, TensorList): E = 1000 + 10, 2 lists read + 1 written, bf16
  // from the kernel name (the inputs are TensorLists).
  const ProfiledOp& fa = row(rows, "aten::_foreach_add_");
  EXPECT_EQ(fa.dtype, DType::kBF16);
  EXPECT_DOUBLE_EQ(fa.flops, 1010);
  EXPECT_DOUBLE_EQ(fa.bytes, 3 * 1010 * 2);
  EXPECT_EQ(fa.category, OpCategory::kOptimizer);
  EXPECT_EQ(fa.rule, "foreach");

  // _foreach_mul_ without recorded dims: 3 + 2 thread blocks x 65536 elements, f32, one list
  // read + written; two kernels (7 us).
  const ProfiledOp& fm = row(rows, "aten::_foreach_mul_");
  EXPECT_EQ(fm.dtype, DType::kF32);
  EXPECT_DOUBLE_EQ(fm.flops, 327680);
  EXPECT_DOUBLE_EQ(fm.bytes, 2 * 327680.0 * 4);
  EXPECT_EQ(fm.kernels, 2);
  EXPECT_DOUBLE_EQ(fm.measured_s, 7e-6);
  EXPECT_EQ(fm.rule, "foreach (grid)");

  // cudnn_convolution [8,3,32,32] * [16,3,3,3], padding 1, stride 2: 16 x 16 output;
  // 2 x 8 x 16 x 256 x 3 x 9 FLOPs; x 98304 + w 1728 + y 131072 bytes. Two kernels (one
  // tied through the runtime call's correlation): 3 + 20 us.
  const ProfiledOp& conv = row(rows, "aten::cudnn_convolution");
  EXPECT_DOUBLE_EQ(conv.flops, 1769472);
  EXPECT_DOUBLE_EQ(conv.bytes, 231104);
  EXPECT_EQ(conv.kernels, 2);
  EXPECT_DOUBLE_EQ(conv.measured_s, 23e-6);
  EXPECT_EQ(conv.category, OpCategory::kConv);
  const ProfiledOp& memset = row(rows, "aten::cudnn_convolution", "memset");
  EXPECT_DOUBLE_EQ(memset.bytes, 4096);
  EXPECT_DOUBLE_EQ(memset.measured_s, 1e-6);
  EXPECT_EQ(memset.kernels, 1);

  // convolution_backward, mask [True, True, False]: twice the forward FLOPs; reads dy
  // (131072), w (1728) and x (98304), writes dx (98304) and dw (1728).
  const ProfiledOp& cb = row(rows, "aten::convolution_backward");
  EXPECT_DOUBLE_EQ(cb.flops, 2 * 1769472.0);
  EXPECT_DOUBLE_EQ(cb.bytes, 331136);

  // masked_fill_ bf16 [2,4,8,8] with a broadcast bool [8,8] mask: 512 x 2 + 64 read,
  // 512 x 2 written.
  const ProfiledOp& mf = row(rows, "aten::masked_fill_");
  EXPECT_DOUBLE_EQ(mf.bytes, 2112);
  EXPECT_DOUBLE_EQ(mf.flops, 512);

  // An op without a rule: the generic elementwise one, counted in a note.
  const ProfiledOp& fr = row(rows, "aten::frobnicate");
  EXPECT_FALSE(fr.known);
  EXPECT_DOUBLE_EQ(fr.bytes, 800);
  // No recorded inputs: bytes 0; the dtype most ops of the trace have (f32).
  const ProfiledOp& relu = row(rows, "aten::relu");
  EXPECT_FALSE(relu.has_shapes);
  EXPECT_DOUBLE_EQ(relu.bytes, 0);
  EXPECT_EQ(relu.dtype, DType::kF32);

  std::string all;
  for (const std::string& n : notes) all += n + "\n";
  EXPECT_NE(all.find("1 kernel / memcpy / memset events"), std::string::npos) << all;
  EXPECT_NE(all.find("generic elementwise rule: aten::frobnicate (1)"), std::string::npos) << all;
  EXPECT_NE(all.find("bytes 0: aten::relu (1)"), std::string::npos) << all;
}

TEST(ProfiledOps, RulesOfTheBigOps) {
  // The shapes of a GPT / ResNet step (as torch 2.11 records them), one op each.
  const std::string trace = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::bmm", "ts": 1, "dur": 1, "args": {"External id": 1,
     "Input Dims": [[16, 1024, 64], [16, 64, 1024]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "ts": 1, "dur": 1, "args": {"External id": 2,
     "Input Dims": [[3072], [1024, 1024], [1024, 3072], [], []],
     "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::native_dropout", "ts": 1, "dur": 1, "args": {"External id": 3,
     "Input Dims": [[1, 1024, 1024], [], []], "Input type": ["c10::BFloat16", "Scalar", "Scalar"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::sum", "ts": 1, "dur": 1, "args": {"External id": 4,
     "Input Dims": [[1024, 3072], [], [], []], "Input type": ["float", "ScalarList", "Scalar", ""],
     "Concrete Inputs": ["", "[0]", "True", ""]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "ts": 1, "dur": 1, "args": {"External id": 5,
     "Input Dims": [[1, 1024, 16, 64], [1, 1024, 16, 64], []], "Input type": ["float", "c10::BFloat16", "Scalar"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::cat", "ts": 1, "dur": 1, "args": {"External id": 6,
     "Input Dims": [[[1, 4, 8], [1, 4, 8]], []], "Input type": ["TensorList", "Scalar"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::div", "ts": 1, "dur": 1, "args": {"External id": 7,
     "Input Dims": [[64, 2048, 7, 7], []], "Input type": ["c10::BFloat16", "long int"],
     "Input Strides": [[2048, 1, 0, 0], []]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::native_layer_norm", "ts": 1, "dur": 1, "args": {"External id": 8,
     "Input Dims": [[1, 1024, 1024], [], [1024], [1024], []],
     "Input type": ["c10::BFloat16", "ScalarList", "c10::BFloat16", "c10::BFloat16", "Scalar"],
     "Concrete Inputs": ["", "[1024]", "", "", "1e-05"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::max_pool2d_with_indices", "ts": 1, "dur": 1, "args": {"External id": 9,
     "Input Dims": [[64, 64, 112, 112], [], [], [], [], []],
     "Input type": ["float", "ScalarList", "ScalarList", "ScalarList", "ScalarList", "Scalar"],
     "Concrete Inputs": ["", "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", "False"]}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 10, "dur": 1, "args": {"External id": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 11, "dur": 1, "args": {"External id": 2}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 12, "dur": 1, "args": {"External id": 3}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 13, "dur": 1, "args": {"External id": 4}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 14, "dur": 1, "args": {"External id": 5}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 15, "dur": 1, "args": {"External id": 6}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 16, "dur": 1, "args": {"External id": 7}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 17, "dur": 1, "args": {"External id": 8}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 18, "dur": 1, "args": {"External id": 9}}]})";
  const std::vector<ProfiledOp> rows = profiled_ops(parse_profiler_trace(trace, "t.json"));
  ASSERT_EQ(rows.size(), 9u);
  const double mib = 1 << 20;
  // bmm: 2 x 16 x 1024 x 1024 x 64; reads 2 x 1 Mi elements, writes 16 Mi (bf16).
  EXPECT_DOUBLE_EQ(row(rows, "aten::bmm").flops, 2.0 * 16 * 1024 * 1024 * 64);
  EXPECT_DOUBLE_EQ(row(rows, "aten::bmm").bytes, (2 * mib + 16 * mib) * 2);
  // addmm: 2mnk + mn; bias, A, B read, m x n written.
  EXPECT_DOUBLE_EQ(row(rows, "aten::addmm").flops, 2.0 * 1024 * 3072 * 1024 + 1024.0 * 3072);
  EXPECT_DOUBLE_EQ(row(rows, "aten::addmm").bytes, (3072 + mib + 3 * mib + 3 * mib) * 2);
  // native_dropout: reads x, writes y and a bool mask.
  EXPECT_DOUBLE_EQ(row(rows, "aten::native_dropout").bytes, mib * (2 + 2 + 1));
  // sum over dim 0 of [1024, 3072] f32: reads all, writes 3072.
  EXPECT_DOUBLE_EQ(row(rows, "aten::sum").bytes, (1024.0 * 3072 + 3072) * 4);
  EXPECT_EQ(row(rows, "aten::sum").category, OpCategory::kReduction);
  // copy_ bf16 -> f32: reads the source, writes the destination.
  EXPECT_DOUBLE_EQ(row(rows, "aten::copy_").bytes, mib * (2 + 4));
  // cat of two [1,4,8] (dtype: the trace's majority, bf16): reads 64, writes 64 elements.
  EXPECT_EQ(row(rows, "aten::cat").dtype, DType::kBF16);
  EXPECT_DOUBLE_EQ(row(rows, "aten::cat").bytes, 2 * 64 * 2);
  // div of an expanded [64,2048,1,1] view by a 0-dim long tensor: reads 64 x 2048 x 2 + 8,
  // writes 64 x 2048 x 49 x 2.
  EXPECT_DOUBLE_EQ(row(rows, "aten::div").bytes, 64 * 2048 * 2 + 8 + 64.0 * 2048 * 49 * 2);
  // native_layer_norm: x, weight, bias read; y and 1024 rows of mean / rstd (f32) written.
  EXPECT_DOUBLE_EQ(row(rows, "aten::native_layer_norm").bytes,
                   mib * 2 + 2 * 1024 * 2 + mib * 2 + 2 * 1024 * 4);
  EXPECT_EQ(row(rows, "aten::native_layer_norm").category, OpCategory::kNormalization);
  // max pool 3x3 / 2, padding 1 on 112 x 112 -> 56 x 56; output + int64 indices.
  const double pooled = 64.0 * 64 * 56 * 56;
  EXPECT_DOUBLE_EQ(row(rows, "aten::max_pool2d_with_indices").bytes,
                   64.0 * 64 * 112 * 112 * 4 + pooled * 4 + pooled * 8);
  EXPECT_DOUBLE_EQ(row(rows, "aten::max_pool2d_with_indices").flops, pooled * 9);
}

TEST(ProfiledOps, PredictionsWithAConstantEfficiencyProfile) {
  // two_gpus: f32 10 TFLOP/s (bf16 falls back to it), 1 TB/s, launch 5 us; efficiency 1.
  const Cluster cluster = load_cluster_yaml(std::string(PLACER_TEST_DATA_DIR) + "/two_gpus.cluster.yaml");
  const ProfiledCheckReport r =
      check_profiled_ops(cluster, uniform_profile(1.0), {load_profiler_trace(data("kineto_ops.json"))});
  ASSERT_EQ(r.rows.size(), 10u);
  auto find = [&](const std::string& op, const std::string& kind = "kernel") -> const ProfiledRow& {
    for (const ProfiledRow& x : r.rows) {
      if (x.op.op == op && x.op.kind == kind) return x;
    }
    ADD_FAILURE() << op;
    return r.rows.front();
  };
  // Kernel durations hold no launch gaps: the prediction is the op's time less the 5 us
  // launch overhead, whatever the number of kernels.
  // mm: max(524288 / 1e13, 57344 / 1e12) s.
  EXPECT_NEAR(find("aten::mm").predicted_s, 57344e-12, 1e-15);
  EXPECT_NEAR(find("aten::mm").rel_error, (57.344e-9 - 10e-6) / 10e-6, 1e-9);
  EXPECT_EQ(find("aten::mm").group, "matmul f32");
  // add_: 1049088 B / 1 TB/s.
  EXPECT_NEAR(find("aten::add_").predicted_s, 1049088e-12, 1e-15);
  EXPECT_EQ(find("aten::add_").group, "elementwise bf16");
  // Two kernels, _foreach_mul_: 2621440 B / 1 TB/s.
  EXPECT_NEAR(find("aten::_foreach_mul_").predicted_s, 2621440e-12, 1e-15);
  // conv: max(1769472 / 1e13, 231104 / 1e12) s.
  EXPECT_NEAR(find("aten::cudnn_convolution").predicted_s, 231104e-12, 1e-15);
  // convolution_backward: compute bound, 3538944 / 1e13 s.
  EXPECT_NEAR(find("aten::convolution_backward").predicted_s, 3538944e-13, 1e-15);
  // The memset row: 4096 B / 1 TB/s, its own group.
  EXPECT_NEAR(find("aten::cudnn_convolution", "memset").predicted_s, 4096e-12, 1e-15);
  EXPECT_EQ(find("aten::cudnn_convolution", "memset").group, "memset");
  // Kernel rows are "all ops"; the memset is summarised apart.
  EXPECT_EQ(r.overall.error.points, 9);
  EXPECT_EQ(r.transfers.error.points, 1);
  double meas = 0, pred = 0;
  for (const ProfiledRow& x : r.rows) {
    if (x.op.kind == "kernel") meas += x.op.measured_s, pred += x.predicted_s;
  }
  EXPECT_NEAR(r.overall.measured_s, meas, 1e-15);
  EXPECT_NEAR(r.overall.ratio(), pred / meas, 1e-12);
  // Groups by measured time, largest first.
  ASSERT_GE(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].first, "conv f32");  // 23 + 30 us
  EXPECT_EQ(r.groups[0].second.error.points, 2);
}

TEST(ProfiledOps, MedianAndP90AreNearestRank) {
  // Errors of the fixture's 9 kernel rows under the uniform profile, sorted: the median is
  // the 5th, the p90 the 9th (nearest rank).
  const Cluster cluster = load_cluster_yaml(std::string(PLACER_TEST_DATA_DIR) + "/two_gpus.cluster.yaml");
  const ProfiledCheckReport r =
      check_profiled_ops(cluster, uniform_profile(1.0), {load_profiler_trace(data("kineto_ops.json"))});
  std::vector<double> abs_err, signed_err;
  for (const ProfiledRow& x : r.rows) {
    if (x.op.kind != "kernel") continue;
    abs_err.push_back(std::fabs(x.rel_error));
    signed_err.push_back(x.rel_error);
  }
  std::sort(abs_err.begin(), abs_err.end());
  std::sort(signed_err.begin(), signed_err.end());
  ASSERT_EQ(abs_err.size(), 9u);
  EXPECT_DOUBLE_EQ(r.overall.error.median, abs_err[4]);
  EXPECT_DOUBLE_EQ(r.overall.error.p90, abs_err[8]);
  EXPECT_DOUBLE_EQ(r.overall.signed_median, signed_err[4]);
}

class ProfilerTraceGzip : public testing::ScratchDirTest {};

TEST_F(ProfilerTraceGzip, GzippedTraceReadsAsThePlainOne) {
  const ProfilerTrace plain = load_profiler_trace(data("kineto_ops.json"));
  const ProfilerTrace gz = load_profiler_trace(data("kineto_ops.json.gz"));
  EXPECT_EQ(gz.source, data("kineto_ops.json.gz"));
  ASSERT_EQ(gz.kernels.size(), plain.kernels.size());
  EXPECT_EQ(gz.ops.size(), plain.ops.size());
  const std::vector<ProfiledOp> a = profiled_ops(plain), b = profiled_ops(gz);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].op, b[i].op);
    EXPECT_DOUBLE_EQ(a[i].bytes, b[i].bytes);
    EXPECT_DOUBLE_EQ(a[i].measured_s, b[i].measured_s);
  }
}

TEST_F(ProfilerTraceGzip, CorruptOrTruncatedGzipIsOneLineNamingTheFile) {
  const std::string gz = read_text_file(data("kineto_ops.json.gz"), "fixture");
  const std::string cut = path("cut.json.gz");
  {
    std::ofstream out(cut, std::ios::binary);
    out << gz.substr(0, gz.size() / 2);
  }
  try {
    load_profiler_trace(cut);
    ADD_FAILURE() << "expected a FormatError";
  } catch (const FormatError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(cut + ": corrupt gzip data (", 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  // Gzip magic followed by garbage.
  EXPECT_THROW(gunzip(std::string("\x1f\x8b\x08\x00garbage", 12), "g.gz"), FormatError);
  // A .gz name with plain content.
  const std::string plain = path("plain.json.gz");
  {
    std::ofstream out(plain, std::ios::binary);
    out << "{\"traceEvents\": []}";
  }
  try {
    load_profiler_trace(plain);
    ADD_FAILURE() << "expected a FormatError";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(plain + ": not gzip data", 0), 0u) << e.what();
  }
  // Missing file: FileError naming it.
  EXPECT_THROW(load_profiler_trace(path("missing.json.gz")), FileError);
}

}  // namespace
}  // namespace placer
