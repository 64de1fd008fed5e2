// Plan -> framework configuration -> plan gives the same plan (the same plan file) and the
// same simulated step time, for each parallelism Megatron-LM and DeepSpeed express.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "export_fixture.h"
#include "src/io/plan_export.h"
#include "src/io/plan_import.h"
#include "src/io/plan_io.h"
#include "src/util/error.h"

namespace placer {
namespace {

using export_test::config;

struct Case {
  const char* name;
  MegatronConfig m;
  int layers;
  DType dtype;
  const char* expect;  ///< a line the configuration must contain
  bool flash = false;  ///< a graph with fused attention (context parallelism)
};

MegatronConfig with(MegatronConfig m, void (*edit)(MegatronConfig&)) {
  edit(m);
  return m;
}

Case megatron_case(const char* name, MegatronConfig m, const char* expect, int layers = 4,
                   DType dtype = DType::kF16) {
  m.loss_scaling = dtype == DType::kF16;
  return {name, m, layers, dtype, expect};
}

/// A case on the fused-attention GPT (context parallelism), in bf16.
Case context_case(const char* name, MegatronConfig m, const char* expect) {
  m.loss_scaling = false;
  return {name, m, 4, DType::kBF16, expect, true};
}

/// Exports megatron_plan's plan of case `k` to `format`, checks the text holds k.expect,
/// reads it back with `read` (the launcher's world size) and compares plan file and step time.
void expect_round_trip(const Case& k, ExportFormat format, FrameworkConfig (*read)(const std::string&, int)) {
  const Graph g = export_test::gpt(k.layers, k.dtype, k.flash);
  const Cluster c = export_test::dgx();
  const Plan plan = megatron_plan(g, k.m);
  plan.validate(g, c);
  const std::string text = export_plan(plan, g, c, format);
  EXPECT_NE(text.find(k.expect), std::string::npos) << text;
  // The world size and rank 0's device come from the launcher (`plan from-megatron
  // --world-size --first-device`), not from the configuration.
  FrameworkConfig f = read(text, k.m.tp * k.m.cp * k.m.pp * k.m.dp);
  f.config.first_device = k.m.first_device;
  const Plan back = plan_of_framework_config(f, g);
  EXPECT_EQ(plan_to_yaml(back, g, c), plan_to_yaml(plan, g, c)) << text;
  EXPECT_EQ(export_test::step_time(g, c, back), export_test::step_time(g, c, plan));
}

class MegatronRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(MegatronRoundTrip, GivesTheSamePlanAndStepTime) {
  expect_round_trip(GetParam(), ExportFormat::kMegatron, parse_megatron_arguments);
}

INSTANTIATE_TEST_SUITE_P(
    Parallelisms, MegatronRoundTrip,
    ::testing::Values(
        megatron_case("tp", config(2, 1, 1, 16), "--tensor-model-parallel-size 2 \\"),
        megatron_case("pp", config(1, 2, 1, 2), "--pipeline-model-parallel-size 2 \\"),
        megatron_case("dp", config(1, 1, 8, 1), "--global-batch-size 16 \\"),
        megatron_case("grid", config(2, 2, 2, 2), "world size 8 = tp 2 x pp 2 x dp 2"),
        megatron_case(
            "sp", with(config(2, 2, 2, 1), [](MegatronConfig& m) { m.sequence_parallel = true; }),
            "--sequence-parallel \\"),
        megatron_case("full_recompute",
                      with(config(1, 2, 4, 1),
                           [](MegatronConfig& m) { m.recompute = Recompute::kFull; }),
                      "--recompute-method uniform \\"),
        megatron_case("selective_recompute",
                      with(config(2, 1, 4, 1),
                           [](MegatronConfig& m) { m.recompute = Recompute::kSelective; }),
                      "--recompute-granularity selective \\"),
        megatron_case("virtual_stages",
                      with(config(1, 2, 2, 2), [](MegatronConfig& m) { m.virtual_stages = 2; }),
                      "--num-layers-per-virtual-pipeline-stage 1 \\"),
        megatron_case("zero1",
                      with(config(2, 2, 2, 1), [](MegatronConfig& m) { m.zero_stage = 1; }),
                      "--use-distributed-optimizer \\"),
        megatron_case("overlap",
                      with(config(1, 1, 8, 2),
                           [](MegatronConfig& m) { m.overlap_grad_reduce = true; }),
                      "--overlap-grad-reduce \\"),
        // 5 layers on 2 stages: megatron_plan's split 3 + 2 is Megatron-LM's uneven first stage.
        megatron_case("uneven_first", config(1, 2, 4, 1),
                      "--decoder-first-pipeline-num-layers 3 \\", 5),
        megatron_case("uneven_last",
                      with(config(1, 3, 2, 1), [](MegatronConfig& m) { m.last_stage_layers = 1; }),
                      "--decoder-last-pipeline-num-layers 1 \\", 5),
        megatron_case("bf16_no_clip",
                      with(config(2, 2, 2, 1), [](MegatronConfig& m) { m.grad_clipping = false; }),
                      "--clip-grad 0.0", 4, DType::kBF16),
        megatron_case("first_device",
                      with(config(2, 1, 2, 2), [](MegatronConfig& m) { m.first_device = 4; }),
                      "on cluster devices 4..7"),
        megatron_case("fp8", with(config(2, 2, 2, 1), [](MegatronConfig& m) { m.fp8 = true; }),
                      "--fp8-format hybrid", 4, DType::kBF16),
        megatron_case("no_scatter_gather",
                      with(config(2, 2, 2, 1), [](MegatronConfig& m) { m.scatter_gather = false; }),
                      "--no-scatter-gather-tensors-in-pipeline \\"),
        context_case("cp_ring", with(config(2, 1, 2, 1), [](MegatronConfig& m) { m.cp = 2; }),
                     "world size 8 = tp 2 x cp 2 x pp 1 x dp 2"),
        context_case("cp_allgather",
                     with(config(1, 2, 1, 2),
                          [](MegatronConfig& m) {
                            m.cp = 4;
                            m.cp_comm = ContextParallelComm::kAllGather;
                          }),
                     "--cp-comm-type allgather \\"),
        context_case("cp_ulysses",
                     with(config(1, 1, 2, 2),
                          [](MegatronConfig& m) {
                            m.cp = 4;
                            m.cp_comm = ContextParallelComm::kAllToAll;
                          }),
                     "--context-parallel-size 4 \\")),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

class DeepSpeedRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(DeepSpeedRoundTrip, GivesTheSamePlanAndStepTime) {
  expect_round_trip(GetParam(), ExportFormat::kDeepSpeed, parse_deepspeed_config);
}

INSTANTIATE_TEST_SUITE_P(
    Parallelisms, DeepSpeedRoundTrip,
    ::testing::Values(
        megatron_case("dp", config(1, 1, 8, 2), "\"gradient_accumulation_steps\": 1"),
        megatron_case("accumulation", config(1, 1, 4, 1), "\"gradient_accumulation_steps\": 4"),
        megatron_case("pp", config(1, 2, 4, 1), "\"stages\": 2"),
        megatron_case("full_recompute", with(config(1, 2, 4, 1), [](MegatronConfig& m) { m.recompute = Recompute::kFull; }),
                      "\"activation_checkpoint_interval\": 1"),
        megatron_case("zero1_pp", with(config(1, 2, 4, 2), [](MegatronConfig& m) { m.zero_stage = 1; }), "\"stage\": 1"),
        megatron_case("zero3", with(config(1, 1, 8, 1), [](MegatronConfig& m) { m.zero_stage = 3; }), "\"stage\": 3"),
        megatron_case("overlap", with(config(1, 1, 8, 1), [](MegatronConfig& m) { m.overlap_grad_reduce = true; }),
                      "\"overlap_comm\": true"),
        megatron_case("uneven_parts", config(1, 2, 4, 1), "\"parts\": [\n      0,\n      3,\n      5", 5),
        megatron_case("bf16", config(1, 2, 4, 1), "\"bf16\"", 4, DType::kBF16)),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

// A plan read from its file (placement written compactly, grids as read) exports as the
// plan megatron_plan built.
TEST(ExportRoundTrip, APlanReadFromItsFileExportsTheSameArguments) {
  const Graph g = export_test::gpt(4, DType::kF16);
  const Cluster c = export_test::dgx();
  MegatronConfig m = config(2, 2, 2, 1);
  m.sequence_parallel = true;
  m.recompute = Recompute::kFull;
  const Plan plan = megatron_plan(g, m);
  const Plan read = parse_plan_yaml(plan_to_yaml(plan, g, c), "p.plan.yaml", g, c);
  EXPECT_EQ(export_plan(read, g, c, ExportFormat::kMegatron), export_plan(plan, g, c, ExportFormat::kMegatron));
}

// Megatron-LM's own spellings read as their documented meaning; what placer does not model
// is listed, with its value skipped.
TEST(MegatronArguments, ReadsEqualsSpellingsAliasesAndDefaults) {
  const FrameworkConfig f = parse_megatron_arguments(
      "# launched by torchrun\n--tensor-model-parallel-size=2 \\\n --pipeline-model-parallel-size 2 "
      "--micro-batch-size 4 --lr 3e-4 --seed 7 --recompute-activations --bf16 "
      "--num-virtual-stages-per-pipeline-rank 2 --use-flash-attn",
      16);
  EXPECT_EQ(f.config.tp, 2);
  EXPECT_EQ(f.config.pp, 2);
  EXPECT_EQ(f.config.dp, 4);
  EXPECT_EQ(f.config.micro_batch, 4);
  EXPECT_EQ(f.config.global_batch, 16);  // Megatron-LM's default: micro-batch x dp
  EXPECT_EQ(f.config.virtual_stages, 2);
  EXPECT_EQ(f.config.recompute, Recompute::kSelective);
  EXPECT_EQ(f.dtype, DType::kBF16);
  EXPECT_FALSE(f.config.loss_scaling);
  EXPECT_TRUE(f.config.grad_clipping);
  EXPECT_EQ(f.config.zero_stage, 0);
  EXPECT_TRUE(f.config.scatter_gather);  // Megatron-LM's default
  EXPECT_EQ(f.attention, "flash");       // --use-flash-attn
  EXPECT_EQ(f.ignored, (std::vector<std::string>{"--lr", "--seed"}));
}

// The attention backend is recorded (a graph option); --fp8-format is the plan's FP8.
TEST(MegatronArguments, ReadsTheAttentionBackendAndFp8) {
  const std::string base = "--micro-batch-size 1 ";
  EXPECT_EQ(parse_megatron_arguments(base + "--attention-backend fused", 8).attention, "flash");
  EXPECT_EQ(parse_megatron_arguments(base + "--attention-backend unfused", 8).attention, "unfused");
  EXPECT_EQ(parse_megatron_arguments(base, 8).attention, "");
  EXPECT_FALSE(parse_megatron_arguments(base + "--no-scatter-gather-tensors-in-pipeline", 8)
                   .config.scatter_gather);
  EXPECT_FALSE(parse_megatron_arguments(base, 8).config.fp8);
  EXPECT_TRUE(parse_megatron_arguments(base + "--fp8-format hybrid", 8).config.fp8);
  EXPECT_TRUE(parse_megatron_arguments(base + "--fp8-format=e4m3", 8).config.fp8);
  try {
    parse_megatron_arguments(base + "--fp8-format e5m2", 8);
    ADD_FAILURE() << "e5m2 accepted";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("--fp8-format: 'e5m2' (use hybrid or e4m3)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_megatron_arguments(base + "--attention-backend magic", 8), ValidationError);
}

// DeepSpeed derives the third of train_batch_size, the micro-batch and the accumulation
// steps from the other two.
TEST(DeepSpeedConfig, DerivesTheMicroBatchFromTheOtherTwo) {
  const FrameworkConfig f = parse_deepspeed_config(
      R"({"train_batch_size": 32, "gradient_accumulation_steps": 2, "fp16": {"enabled": true},
          "zero_optimization": {"stage": 2}, "optimizer": {"type": "Adam"}})",
      8);
  EXPECT_EQ(f.config.dp, 8);
  EXPECT_EQ(f.config.micro_batch, 2);
  EXPECT_EQ(f.config.global_batch, 32);
  EXPECT_EQ(f.config.zero_stage, 2);
  EXPECT_EQ(f.dtype, DType::kF16);
  EXPECT_TRUE(f.config.loss_scaling);
  EXPECT_FALSE(f.config.grad_clipping);  // DeepSpeed's default gradient_clipping is 0
  EXPECT_EQ(f.ignored, (std::vector<std::string>{"optimizer"}));
}

}  // namespace
}  // namespace placer

namespace placer {
namespace {

// The mixture-of-experts arguments read back as the configuration that wrote them;
// Megatron-LM's defaults (top-2 routing, expert tensor parallelism = tp) fill what is left
// out, and the configuration's experts must be the graph's.
// tp 2, dp 4, ep 4, etp 1, bf16.
MegatronConfig expert_parallel_config() {
  MegatronConfig m = export_test::config(2, 1, 4, 2);
  m.ep = 4;
  m.etp = 1;
  m.loss_scaling = false;  // bf16
  return m;
}

TEST(MegatronArguments, ExpertParallelArgumentsReadBack) {
  const MegatronConfig m = expert_parallel_config();
  const MoeShape moe{8, 2, 4};
  const std::string text = megatron_arguments(m, 4, DType::kBF16, moe);
  for (const char* arg :
       {"--num-experts 8 \\", "--moe-router-topk 2 \\", "--expert-model-parallel-size 4 \\",
        "--expert-tensor-parallel-size 1 \\"}) {
    EXPECT_NE(text.find(arg), std::string::npos) << arg << "\n" << text;
  }
  const FrameworkConfig f = parse_megatron_arguments(text, 8);
  EXPECT_EQ(f.experts, 8);
  EXPECT_EQ(f.top_k, 2);
  EXPECT_EQ(f.config.ep, 4);
  EXPECT_EQ(f.config.etp, 1);
  const FrameworkConfig d = parse_megatron_arguments(
      "--tensor-model-parallel-size 2 --micro-batch-size 1 --num-experts 8", 8);
  EXPECT_EQ(d.config.etp, 2);
  EXPECT_EQ(d.top_k, 2);
  const Graph dense = export_test::gpt(4, DType::kBF16);
  try {
    plan_of_framework_config(f, dense);
    FAIL() << "no error";
  } catch (const ValidationError& e) {
    EXPECT_STREQ(e.what(), "experts: 8 routed experts, top 2, but graph 'gpt' has 0, top 0");
  }
  // An expert-parallel plan of a dense graph does not export.
  const Plan p = megatron_plan(dense, m);
  try {
    export_megatron_style(p, dense, ExportFormat::kMegatron);
    FAIL() << "no error";
  } catch (const ValidationError& e) {
    EXPECT_STREQ(e.what(),
                 "expert_parallel: the graph has no mixture-of-experts layers to spread "
                 "over 4 expert-parallel ranks");
  }
}

// The flex token dispatcher: --moe-token-dispatcher-type flex with its backend, read back;
// alltoall (Megatron-core's default) writes neither; unknown values are named errors.
TEST(MegatronArguments, FlexTokenDispatcherReadsBack) {
  MegatronConfig m = expert_parallel_config();
  const MoeShape moe{8, 2, 4};
  EXPECT_EQ(megatron_arguments(m, 4, DType::kBF16, moe).find("dispatcher"), std::string::npos);
  for (const ExpertDispatcher d : {ExpertDispatcher::kDeepEP, ExpertDispatcher::kHybridEP}) {
    m.dispatcher = d;
    const std::string text = megatron_arguments(m, 4, DType::kBF16, moe);
    EXPECT_NE(text.find("--moe-token-dispatcher-type flex \\"), std::string::npos) << text;
    EXPECT_NE(text.find(std::string("--moe-flex-dispatcher-backend ") + to_string(d)),
              std::string::npos)
        << text;
    EXPECT_EQ(parse_megatron_arguments(text, 8).config.dispatcher, d);
  }
  const std::string base = "--micro-batch-size 1 --num-experts 8 --expert-model-parallel-size 4 ";
  EXPECT_EQ(
      parse_megatron_arguments(base + "--moe-token-dispatcher-type flex", 8).config.dispatcher,
      ExpertDispatcher::kDeepEP);  // Megatron-core's default flex backend
  EXPECT_EQ(parse_megatron_arguments(base, 8).config.dispatcher, ExpertDispatcher::kAllToAll);
  for (const auto& [args, message] :
       {std::pair<const char*, const char*>{
            "--moe-token-dispatcher-type allgather",
            "--moe-token-dispatcher-type: 'allgather' (use alltoall or flex)"},
        {"--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend nccl",
         "--moe-flex-dispatcher-backend: 'nccl' (use deepep or hybridep)"},
        {"--moe-flex-dispatcher-backend deepep",
         "--moe-flex-dispatcher-backend: needs --moe-token-dispatcher-type flex"}}) {
    try {
      parse_megatron_arguments(base + args, 8);
      FAIL() << "no error: " << args;
    } catch (const ValidationError& e) {
      EXPECT_STREQ(e.what(), message);
    }
  }
}

// The expert all-to-all overlap: --overlap-moe-expert-parallel-comm when the configuration
// has it, read back; absent, off; without expert parallelism a named error.
TEST(MegatronArguments, ExpertAllToAllOverlapReadsBack) {
  MegatronConfig m = expert_parallel_config();
  const MoeShape moe{8, 2, 4};
  const std::string flag = "--overlap-moe-expert-parallel-comm";
  const std::string off = megatron_arguments(m, 4, DType::kBF16, moe);
  EXPECT_EQ(off.find(flag), std::string::npos) << off;
  EXPECT_FALSE(parse_megatron_arguments(off, 8).config.moe_a2a_overlap);
  m.moe_a2a_overlap = true;
  const std::string on = megatron_arguments(m, 4, DType::kBF16, moe);
  EXPECT_NE(on.find(flag), std::string::npos) << on;
  EXPECT_TRUE(parse_megatron_arguments(on, 8).config.moe_a2a_overlap);
  try {
    parse_megatron_arguments("--micro-batch-size 1 --num-experts 8 " + flag, 8);
    FAIL() << "no error";
  } catch (const ValidationError& e) {
    EXPECT_STREQ(e.what(),
                 "--overlap-moe-expert-parallel-comm: needs --expert-model-parallel-size > 1");
  }
}

// DeepSpeed's config has neither: named refusals.
TEST(DeepSpeedConfig, RefusesContextAndExpertParallelism) {
  MegatronConfig m = export_test::config(1, 1, 4, 2);
  m.cp = 2;
  try {
    deepspeed_config(m, 4, DType::kF16);
    FAIL() << "no error";
  } catch (const ValidationError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "context_parallel.degree: 2: a DeepSpeed config has no ring attention", 0),
              0u)
        << e.what();
  }
  m.cp = 1;
  m.ep = 2;
  try {
    deepspeed_config(m, 4, DType::kF16);
    FAIL() << "no error";
  } catch (const ValidationError& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("expert_parallel.degree: 2: DeepSpeed-MoE sets ep_size", 0), 0u)
        << e.what();
  }
}

}  // namespace
}  // namespace placer
