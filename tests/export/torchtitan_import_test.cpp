// torchtitan job configs read as plans: the exporter's output reads back as the same plan,
// a hand-written job file gives the plan its keys say, and keys placer cannot read or
// express are errors that name them.
#include <gtest/gtest.h>

#include <string>

#include "export_fixture.h"
#include "src/io/plan_export.h"
#include "src/io/plan_import.h"
#include "src/io/plan_io.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"

namespace placer {
namespace {

using export_test::config;

MegatronConfig titan(MegatronConfig m, int zero_stage, Recompute r = Recompute::kNone) {
  m.sequence_parallel = m.tp > 1;
  m.overlap_grad_reduce = true;
  m.loss_scaling = false;
  m.zero_stage = zero_stage;
  m.fsdp.enabled = zero_stage == 3;  // torchtitan's FSDP2
  m.recompute = r;
  return m;
}

MegatronConfig with(MegatronConfig m, void (*edit)(MegatronConfig&)) {
  edit(m);
  return m;
}

class TorchtitanRoundTrip
    : public ::testing::TestWithParam<std::pair<const char*, MegatronConfig>> {};

TEST_P(TorchtitanRoundTrip, GivesTheSamePlanAndStepTime) {
  const MegatronConfig& m = GetParam().second;
  const Graph g = export_test::gpt(4, DType::kBF16, m.cp > 1);
  const Cluster c = export_test::dgx();
  const Plan plan = megatron_plan(g, m);
  plan.validate(g, c);
  const std::string text = export_plan(plan, g, c, ExportFormat::kTorchTitan);
  const FrameworkConfig f = parse_torchtitan_config(text, m.tp * m.cp * m.pp * m.dp);
  const Plan back = plan_of_framework_config(f, g);
  EXPECT_EQ(plan_to_yaml(back, g, c), plan_to_yaml(plan, g, c)) << text;
  EXPECT_EQ(export_test::step_time(g, c, back), export_test::step_time(g, c, plan));
}

INSTANTIATE_TEST_SUITE_P(
    Parallelisms, TorchtitanRoundTrip,
    ::testing::Values(
        std::make_pair("ddp_accumulating", titan(config(1, 1, 8, 1), 0)),
        std::make_pair("fsdp", titan(config(1, 1, 8, 2), 3, Recompute::kFull)),
        std::make_pair("fsdp_pipeline", titan(config(1, 2, 4, 1), 2)),
        std::make_pair("tp_pp", titan(config(2, 2, 2, 1), 0, Recompute::kSelectiveOp)),
        // replicate 2 x shard 4
        std::make_pair("hsdp", with(titan(config(1, 1, 8, 1), 3),
                                    [](MegatronConfig& m) { m.fsdp.shard_group = 4; })),
        std::make_pair("hsdp_tp", with(titan(config(2, 1, 4, 1), 3),
                                       [](MegatronConfig& m) { m.fsdp.shard_group = 2; })),
        std::make_pair("fp8",
                       with(titan(config(2, 2, 2, 1), 0), [](MegatronConfig& m) { m.fp8 = true; })),
        std::make_pair("every_2nd_layer", with(titan(config(1, 1, 8, 2), 3, Recompute::kFull),
                                               [](MegatronConfig& m) { m.recompute_every = 2; })),
        std::make_pair("cp_ring",
                       with(titan(config(2, 1, 2, 1), 3), [](MegatronConfig& m) { m.cp = 2; })),
        // replicate 2 x shard 2, each shard group spanning the 2 CP ranks (4 copies)
        std::make_pair("hsdp_cp", with(titan(config(1, 1, 4, 1), 3),
                                       [](MegatronConfig& m) {
                                         m.cp = 2;
                                         m.fsdp.shard_group = 4;
                                       })),
        std::make_pair("cp_allgather", with(titan(config(1, 2, 1, 2), 0),
                                            [](MegatronConfig& m) {
                                              m.cp = 4;
                                              m.cp_comm = ContextParallelComm::kAllGather;
                                            })),
        std::make_pair("interleaved",
                       [] {
                         MegatronConfig m = titan(config(1, 2, 2, 2), 0);
                         m.virtual_stages = 2;
                         return m;
                       }())),
    [](const auto& i) { return std::string(i.param.first); });

TEST(TorchtitanJob, AHandWrittenJobGivesThePlanItsKeysSay) {
  const std::string text =
      read_text_file(std::string(PLACER_TEST_DATA_DIR) + "/torchtitan/llama_fsdp_tp.toml", "job");
  const FrameworkConfig f = parse_torchtitan_config(text, 16);
  const MegatronConfig& m = f.config;
  EXPECT_EQ(m.tp, 2);
  EXPECT_EQ(m.pp, 2);
  EXPECT_EQ(m.dp, 4);          // shard -1: 16 / (tp 2 x pp 2)
  EXPECT_EQ(m.zero_stage, 3);  // reshard after forward: always
  EXPECT_TRUE(m.fsdp.enabled);
  EXPECT_EQ(m.fsdp.shard_group, 0);  // replicate 1: one group
  EXPECT_FALSE(m.fp8);               // [float8] options without the converter
  EXPECT_EQ(m.micro_batch, 1);
  EXPECT_EQ(m.global_batch, 16);
  EXPECT_EQ(m.recompute, Recompute::kFull);
  EXPECT_TRUE(m.sequence_parallel);
  EXPECT_TRUE(m.overlap_grad_reduce);
  EXPECT_TRUE(m.grad_clipping);
  EXPECT_FALSE(m.loss_scaling);
  EXPECT_EQ(f.dtype, DType::kBF16);
  EXPECT_EQ(f.attention, "flash");
  EXPECT_EQ(f.notes, (std::vector<std::string>{"compile.enable: compiled (fused) kernels"}));
  // In toml++'s order: sections and keys sorted by name.
  EXPECT_EQ(f.ignored,
            (std::vector<std::string>{"compile.components", "float8.enable_fsdp_float8_all_gather",
                                      "[job]", "model.flavor", "model.name", "[optimizer]",
                                      "parallelism.enable_async_tensor_parallel",
                                      "training.mixed_precision_reduce", "training.steps"}));
  const Graph g = export_test::gpt(4, DType::kBF16);
  const Plan p = plan_of_framework_config(f, g);
  EXPECT_EQ(p.pipeline.stages.size(), 2u);
  EXPECT_EQ(p.pipeline.micro_batches, 4);  // 16 / (1 x dp 4)
  EXPECT_EQ(p.data_parallel.zero_stage, 3);
}

void expect_error(const std::string& toml, const std::string& message) {
  try {
    parse_torchtitan_config(toml, 8);
    ADD_FAILURE() << "no error for: " << toml;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(TorchtitanJob, BadKeysAndWhatPlansCannotExpressAreNamedErrors) {
  const std::string ac = "[activation_checkpoint]\nmode = \"full\"\n";
  expect_error("[parallelism]\ntensor_paralel_degree = 2\n",
               "parallelism.tensor_paralel_degree: unknown key");
  expect_error("[parallelism]\ntensor_parallel_degree = \"2\"\n",
               "parallelism.tensor_parallel_degree: not an integer");
  expect_error("[training\n", "line 1");
  // Headers that toml++ 3.x would enter its key parser with (an abort or undefined behaviour).
  expect_error("[[[1]]]\n", "line 1, column 3: malformed TOML");
  expect_error(ac + "  [[ =\n", "line 3, column 6: malformed TOML");
  expect_error("[[[]]\n", "line 1, column 3");
  expect_error("[\x14raining]\n", "line 1, column 2: malformed TOML: a table header needs a key");
  // Spaces inside a header are TOML: the check lets them through.
  std::string spaced =
      read_text_file(std::string(PLACER_TEST_DATA_DIR) + "/torchtitan/llama_fsdp_tp.toml", "job");
  spaced.replace(spaced.find("[training]"), 10, "[ training ]");
  EXPECT_NO_THROW(parse_torchtitan_config(spaced, 16));
  expect_error(
      ac +
          "[parallelism]\ncontext_parallel_degree = 2\ncontext_parallel_rotate_method = \"ring\"\n",
      "parallelism.context_parallel_rotate_method: 'ring' (use allgather or alltoall)");
  expect_error(
      ac + "[parallelism]\ndata_parallel_replicate_degree = 2\ndata_parallel_shard_degree = "
           "4\nfsdp_reshard_after_forward = \"never\"\n",
      "parallelism.fsdp_reshard_after_forward: HSDP (replicate 2 x shard 4) keeping the "
      "parameters after forward is not modelled");
  expect_error(ac + "[model]\nconverters = [\"quantize.linear.mx\"]\n",
               "model.converters: 'quantize.linear.mx' is not modelled");
  expect_error(
      "[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"0\"\n",
      "activation_checkpoint.selective_ac_option: '0' (use op or a layer interval k >= 1)");
  expect_error(ac + "[parallelism]\ntensor_parallel_degree = 3\n",
               "does not equal the world size 8");
  expect_error(ac + "[parallelism]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = "
                    "\"ZBVZeroBubble\"\n",
               "parallelism.pipeline_parallel_schedule: 'ZBVZeroBubble' is not modelled");
}

// HSDP, float8 and the checkpointing modes as a user writes them, in both torchtitan spellings.
TEST(TorchtitanJob, HsdpFloat8AndCheckpointingModesReadAsPlanFields) {
  const std::string hsdp =
      "[parallelism]\ndata_parallel_replicate_degree = 2\ndata_parallel_shard_degree = -1\n";
  const FrameworkConfig a = parse_torchtitan_config(
      hsdp +
          "[model]\nconverters = [\"quantize.linear.float8\"]\n[quantize.linear.float8]\n"
          "filter_fqns = [\"output\"]\n[activation_checkpoint]\nmode = \"selective\"\n"
          "selective_ac_option = \"op\"\n",
      8);
  EXPECT_EQ(a.config.dp, 8);
  EXPECT_EQ(a.config.zero_stage, 3);
  EXPECT_TRUE(a.config.fsdp.enabled);
  EXPECT_EQ(a.config.fsdp.shard_group, 4);  // shard -1: 8 / replicate 2
  EXPECT_TRUE(a.config.fp8);
  EXPECT_EQ(a.config.recompute, Recompute::kSelectiveOp);
  EXPECT_EQ(a.ignored, (std::vector<std::string>{"[quantize]"}));
  // Older torchtitan: [float8] enable_float8_linear; selective_ac_option as an integer; the
  // default mode (selective, every 2nd layer).
  const FrameworkConfig b = parse_torchtitan_config(
      "[float8]\nenable_float8_linear = true\n[activation_checkpoint]\nmode = \"selective\"\n"
      "selective_ac_option = 3\n",
      8);
  EXPECT_TRUE(b.config.fp8);
  EXPECT_EQ(b.config.recompute, Recompute::kFull);
  EXPECT_EQ(b.config.recompute_every, 3);
  EXPECT_TRUE(b.config.fsdp.enabled);  // shard -1 = 8 ranks, resharded (the default): FSDP2
  EXPECT_EQ(b.config.fsdp.shard_group, 0);
  const FrameworkConfig c = parse_torchtitan_config("[training]\nlocal_batch_size = 2\n", 8);
  EXPECT_EQ(c.config.recompute, Recompute::kFull);
  EXPECT_EQ(c.config.recompute_every, 2);
  EXPECT_FALSE(c.config.fp8);
}

// HSDP with context parallelism: torchtitan's FSDP shards over its dp_shard x cp ranks, so
// replicate 2 x shard 2 x cp 2 on 8 ranks is a plan with dp 4 whose FSDP shard groups hold
// 2 x 2 = 4 of the stage's cp x dp = 8 data-parallel copies; it exports back to those keys.
TEST(TorchtitanJob, HsdpShardGroupsSpanTheContextParallelRanks) {
  const FrameworkConfig f = parse_torchtitan_config(
      "[parallelism]\ndata_parallel_replicate_degree = 2\ndata_parallel_shard_degree = 2\n"
      "context_parallel_degree = 2\ncontext_parallel_rotate_method = \"alltoall\"\n",
      8);
  EXPECT_EQ(f.config.dp, 4);
  EXPECT_EQ(f.config.cp, 2);
  EXPECT_EQ(f.config.cp_comm, ContextParallelComm::kP2P);
  EXPECT_EQ(f.config.zero_stage, 3);
  EXPECT_EQ(f.config.fsdp.shard_group, 4);
  const Graph g = export_test::gpt(4, DType::kBF16, true);
  const Cluster c = export_test::dgx();
  MegatronConfig m = titan(config(1, 1, 4, 1), 3);
  m.cp = 2;
  m.fsdp.shard_group = 4;
  const std::string text = export_plan(megatron_plan(g, m), g, c, ExportFormat::kTorchTitan);
  EXPECT_NE(text.find("data_parallel_replicate_degree = 2\ndata_parallel_shard_degree = 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("context_parallel_degree = 2\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace placer
