#include "simulator/cost_profile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "src/util/error.h"

namespace placer {
namespace {

std::string expect_error(const std::string& yaml) {
  try {
    parse_cost_profile(yaml, "bad.profile.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << yaml;
  return "";
}

TEST(EfficiencyCurve, ConstantAndPiecewiseLinearInLog10) {
  EXPECT_DOUBLE_EQ(EfficiencyCurve::constant(0.7).at(123.0), 0.7);
  const EfficiencyCurve c = EfficiencyCurve::ramp({{6, 0.2}, {8, 0.6}, {10, 0.8}});
  EXPECT_DOUBLE_EQ(c.at(1e6), 0.2);
  EXPECT_DOUBLE_EQ(c.at(1e7), 0.4);  // halfway in log10 between 6 and 8
  EXPECT_DOUBLE_EQ(c.at(1e9), 0.7);
  EXPECT_DOUBLE_EQ(c.at(1e3), 0.2);   // clamped below
  EXPECT_DOUBLE_EQ(c.at(1e14), 0.8);  // clamped above
  EXPECT_DOUBLE_EQ(c.at(0), 0.2);
}

TEST(CostProfile, DefaultsAreSensible) {
  const CostProfile p = default_profile();
  p.validate();
  const EfficiencyCurve& gemm = p.op(OpCategory::kMatMul).compute;
  EXPECT_GE(gemm.at(1e12), 0.7);
  EXPECT_LE(gemm.at(1e12), 0.8);
  EXPECT_LT(gemm.at(1e7), 0.2);  // small GEMMs are far from peak
  EXPECT_DOUBLE_EQ(p.op(OpCategory::kElementwise).memory.at(1e9), 0.8);
  EXPECT_EQ(p.all_reduce, CollectiveAlgorithm::kAuto);
}

TEST(CostProfile, YamlRoundTrip) {
  CostProfile p = default_profile();
  p.name = "tuned";
  p.description = "fitted on a test box";
  p.op(OpCategory::kConv).compute = EfficiencyCurve::ramp({{7, 0.125}, {9.5, 0.6125}});
  p.op(OpCategory::kMatMul).compute_by_dtype[DType::kF32] = EfficiencyCurve::ramp({{8, 0.5}, {11, 0.75}});
  p.op(OpCategory::kMatMul).compute_by_dtype[DType::kBF16] = EfficiencyCurve::constant(0.625);
  p.op(OpCategory::kSoftmax).memory_by_dtype[DType::kF16] = EfficiencyCurve::ramp({{6, 0.25}, {9, 0.875}});
  p.link(LinkLevel::kInterHost).latency = 7.5e-6;
  p.link(LinkLevel::kInterHost).bandwidth = 12.5e9;
  p.link(LinkLevel::kIntraHost).bandwidth_efficiency = 0.73;
  p.all_reduce = CollectiveAlgorithm::kHierarchical;
  p.launch_overhead = 4e-6;
  p.moe_host_sync = true;
  p.moe_sync_host_time = 1.5e-3;
  p.fsdp_hook_host_time = 350e-6;
  p.op(OpCategory::kAttention).score_time = 1.5e-13;
  p.op(OpCategory::kAttention).backward_score_time = 6.95e-13;
  const CostProfile back = parse_cost_profile(cost_profile_to_yaml(p), "mem");
  EXPECT_EQ(back, p);
  const CostProfile u = uniform_profile(1.0);
  EXPECT_EQ(parse_cost_profile(cost_profile_to_yaml(u), "mem"), u);

  const std::string path = ::testing::TempDir() + "/round_trip.profile.yaml";
  save_cost_profile(p, path);
  EXPECT_EQ(load_cost_profile(path), p);
  std::remove(path.c_str());
}

TEST(CostProfile, ShippedDefaultFileEqualsDefaultProfile) {
  const CostProfile p =
      load_cost_profile(std::string(PLACER_SOURCE_DIR) + "/datasets/clusters/default.profile.yaml");
  EXPECT_EQ(p, default_profile());
}

TEST(CostProfile, PartialFileKeepsDefaults) {
  const CostProfile p = parse_cost_profile(
      "format_version: \"1.0\"\n"
      "name: partial\n"
      "ops:\n"
      "  matmul: {compute_efficiency: 0.5}\n"
      "links:\n"
      "  inter_host: {latency: 3 us, bandwidth: 3.125 GB/s}\n"
      "collectives: {all_reduce: tree}\n"
      "launch_overhead: 5 us\n");
  CostProfile want = default_profile();
  want.name = "partial";
  want.op(OpCategory::kMatMul).compute = EfficiencyCurve::constant(0.5);
  want.link(LinkLevel::kInterHost).latency = 3e-6;
  want.link(LinkLevel::kInterHost).bandwidth = 3.125e9;
  want.all_reduce = CollectiveAlgorithm::kTree;
  want.launch_overhead = 5e-6;
  // Without an `attention` entry, fused attention runs on the file's matmul entry.
  want.op(OpCategory::kAttention) = want.op(OpCategory::kMatMul);
  EXPECT_EQ(p, want);
}

TEST(CostProfile, AttentionEntryOrTheFilesMatmul) {
  const std::string head = "format_version: \"1.0\"\nname: a\nops:\n";
  const CostProfile without =
      parse_cost_profile(head +
                         "  matmul: {compute_efficiency: 0.5, dispatch: 10 us,\n"
                         "           compute_efficiency_by_dtype: {bf16: 0.7}}\n");
  EXPECT_EQ(without.op(OpCategory::kAttention), without.op(OpCategory::kMatMul));
  EXPECT_DOUBLE_EQ(without.op(OpCategory::kAttention).compute_for(DType::kBF16).at(1e12), 0.7);
  // An entry of its own is read like any category: keys left out keep the defaults.
  const CostProfile with =
      parse_cost_profile(head +
                         "  matmul: {compute_efficiency: 0.5, dispatch: 10 us}\n"
                         "  attention: {compute_efficiency: [[10, 0.25], [13, 0.5]]}\n");
  const OpCostProfile& a = with.op(OpCategory::kAttention);
  EXPECT_DOUBLE_EQ(a.compute_for(DType::kBF16).at(1e10), 0.25);
  EXPECT_DOUBLE_EQ(a.compute_for(DType::kBF16).at(1e14), 0.5);
  EXPECT_EQ(a.dispatch, 0);
  EXPECT_EQ(a.score_time, 0);  // no per-score term unless the file gives one
  EXPECT_EQ(a.backward_score_time, 0);
  EXPECT_EQ(a.memory, default_profile().op(OpCategory::kAttention).memory);
  const CostProfile scored = parse_cost_profile(
      head + "  attention: {score_time: 1.5e-13 s, backward_score_time: 0.000695 ns}\n");
  EXPECT_DOUBLE_EQ(scored.op(OpCategory::kAttention).score_time, 1.5e-13);
  EXPECT_DOUBLE_EQ(scored.op(OpCategory::kAttention).backward_score_time, 6.95e-13);
  // The shipped A100 and H100 profiles carry their own curves (docs/calibration.md).
  for (const char* f : {"dgx_a100", "h100"}) {
    const CostProfile shipped = load_cost_profile(std::string(PLACER_SOURCE_DIR) +
                                                  "/datasets/clusters/" + f + ".profile.yaml");
    EXPECT_NE(shipped.op(OpCategory::kAttention), shipped.op(OpCategory::kMatMul)) << f;
    EXPECT_EQ(shipped.op(OpCategory::kAttention).dispatch, shipped.op(OpCategory::kMatMul).dispatch)
        << f;
    EXPECT_GT(shipped.op(OpCategory::kAttention).backward_score_time, 0) << f;
  }
}

TEST(CostProfile, WrongFormatVersionNamesTheFile) {
  const std::string m = expect_error("format_version: \"2.0\"\nname: x\n");
  EXPECT_NE(m.find("bad.profile.yaml"), std::string::npos) << m;
  EXPECT_NE(m.find("format_version"), std::string::npos) << m;
  EXPECT_NE(m.find("2.0"), std::string::npos) << m;
  const std::string missing = expect_error("name: x\n");
  EXPECT_NE(missing.find("format_version"), std::string::npos) << missing;
}

TEST(CostProfile, BadFieldsNameFileAndField) {
  std::string m = expect_error(
      "format_version: \"1.0\"\nops:\n  matmul:\n    compute_efficiency: [[6, 0.2], [5, 0.3]]\n");
  EXPECT_NE(m.find("bad.profile.yaml: ops.matmul.compute_efficiency[1]"), std::string::npos) << m;
  m = expect_error("format_version: \"1.0\"\nops:\n  conv: {memory_efficiency: -0.5}\n");
  EXPECT_NE(m.find("ops.conv.memory_efficiency"), std::string::npos) << m;
  m = expect_error("format_version: \"1.0\"\nops:\n  convolution: {memory_efficiency: 0.5}\n");
  EXPECT_NE(m.find("unknown op category 'convolution'"), std::string::npos) << m;
  m = expect_error(
      "format_version: \"1.0\"\nops:\n  matmul: {compute_efficiency_by_dtype: {fp33: 0.5}}\n");
  EXPECT_NE(m.find("ops.matmul.compute_efficiency_by_dtype.fp33"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown dtype 'fp33'"), std::string::npos) << m;
  m = expect_error(
      "format_version: \"1.0\"\nops:\n  matmul: {compute_efficiency_by_dtype: {bf16: -1}}\n");
  EXPECT_NE(m.find("ops.matmul.compute_efficiency_by_dtype.bf16"), std::string::npos) << m;
  m = expect_error("format_version: \"1.0\"\nops:\n  convolution: {memory_efficiency: 0.5}\n");
  EXPECT_NE(m.find("unknown op category 'convolution'"), std::string::npos) << m;
  m = expect_error("format_version: \"1.0\"\nops:\n  conv: {memory_eficiency: 0.5}\n");
  EXPECT_NE(m.find("ops.conv"), std::string::npos) << m;
  EXPECT_NE(m.find("memory_efficiency"), std::string::npos) << m;  // the suggestion
  m = expect_error("format_version: \"1.0\"\nlinks:\n  inter_host: {bandwidth: fast}\n");
  EXPECT_NE(m.find("links.inter_host.bandwidth"), std::string::npos) << m;
  m = expect_error("format_version: \"1.0\"\nlinks:\n  intra_host: {bandwidth_efficiency: 1.5}\n");
  EXPECT_NE(m.find("links.intra_host.bandwidth_efficiency"), std::string::npos) << m;
  m = expect_error("format_version: \"1.0\"\ncollectives: {all_reduce: butterfly}\n");
  EXPECT_NE(m.find("collectives.all_reduce"), std::string::npos) << m;
  m = expect_error("format_version: \"1.0\"\nmoe_sync_host_time: -2 ms\n");
  EXPECT_NE(m.find("moe_sync_host_time"), std::string::npos) << m;
  m = expect_error("format_version: \"1.0\"\nfsdp_hook_host_time: 1 s\n");
  EXPECT_NE(m.find("fsdp_hook_host_time"), std::string::npos) << m;
  m = expect_error("format_version: \"1.0\"\nops:\n  attention: {score_time: -1e-13 s}\n");
  EXPECT_NE(m.find("bad.profile.yaml: ops.attention.score_time"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  m = expect_error("format_version: \"1.0\"\nops:\n  attention: {backward_score_time: 2 us}\n");
  EXPECT_NE(m.find("ops.attention.backward_score_time"), std::string::npos) << m;
  m = expect_error("format_version: \"1.0\"\nops:\n  matmul: {score_time: 1e-13 s}\n");
  EXPECT_NE(m.find("ops.matmul.score_time: only the attention entry"), std::string::npos) << m;
  m = expect_error("format_version: \"1.0\"\nops: [1, 2]\n");
  EXPECT_NE(m.find("ops"), std::string::npos) << m;
  m = expect_error("format_version: \"1.0\"\nops:\n  matmul: {compute_efficiency: [[6]]}\n");
  EXPECT_NE(m.find("ops.matmul.compute_efficiency[0]"), std::string::npos) << m;
}

TEST(CostProfile, MissingFileIsAFileError) {
  EXPECT_THROW(load_cost_profile("/nonexistent/x.profile.yaml"), FileError);
}

}  // namespace
}  // namespace placer
