// Every plan a target cannot express is one ValidationError naming the plan field and why;
// configurations placer cannot read name the argument or key.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "export_fixture.h"
#include "src/io/plan_export.h"
#include "src/io/plan_import.h"
#include "src/util/error.h"

namespace placer {
namespace {

using export_test::config;

/// Moves every forward op of `layer` from its stage to stage `to`.
void move_layer(Plan& p, const Graph& g, int layer, size_t to) {
  for (PipelineStage& st : p.pipeline.stages) {
    st.ops.erase(std::remove_if(st.ops.begin(), st.ops.end(), [&](OpId o) { return g.op(o).layer == layer; }),
                 st.ops.end());
  }
  for (OpId o = 0; o < g.num_ops(); ++o) {
    if (g.op(o).phase == Phase::kForward && g.op(o).layer == layer) p.pipeline.stages[to].ops.push_back(o);
  }
}

struct Case {
  const char* name;
  ExportFormat format;
  MegatronConfig m;
  void (*edit)(Plan&, const Graph&);  ///< applied to megatron_plan's plan
  const char* expect;                 ///< the message must contain it
  int layers = 4;
  DType dtype = DType::kF16;
};

void none(Plan&, const Graph&) {}

MegatronConfig with(MegatronConfig m, void (*edit)(MegatronConfig&)) {
  edit(m);
  return m;
}

MegatronConfig bf16(MegatronConfig m) {
  m.loss_scaling = false;
  m.overlap_grad_reduce = true;
  return m;
}

class Inexpressible : public ::testing::TestWithParam<Case> {};

TEST_P(Inexpressible, IsOneErrorNamingThePart) {
  const Case& k = GetParam();
  const Graph g = export_test::gpt(k.layers, k.dtype);
  const Cluster c = export_test::dgx();
  Plan p = megatron_plan(g, k.m);
  k.edit(p, g);
  std::string message = "(no error)";
  try {
    export_plan(p, g, c, k.format);
  } catch (const ValidationError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find(k.expect), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

const ExportFormat kMeg = ExportFormat::kMegatron, kDs = ExportFormat::kDeepSpeed,
                   kTitan = ExportFormat::kTorchTitan, kMap = ExportFormat::kDeviceMap;

INSTANTIATE_TEST_SUITE_P(
    Plans, Inexpressible,
    ::testing::Values(
        Case{"megatron_gpipe", kMeg, with(config(1, 2, 4, 1), [](MegatronConfig& m) { m.schedule = PipelineSchedule::kGPipe; }),
             none, "pipeline.schedule: gpipe: Megatron-LM runs 1F1B"},
        Case{"megatron_zero2", kMeg, with(config(1, 1, 8, 1), [](MegatronConfig& m) { m.zero_stage = 2; }), none,
             "data_parallel.zero_stage: 2: Megatron-LM's distributed optimizer is ZeRO-1"},
        Case{"non_contiguous_stages", kMeg, config(1, 2, 4, 1),
             [](Plan& p, const Graph& g) { move_layer(p, g, 1, 1), move_layer(p, g, 2, 0); },
             "pipeline.stages[0]: holds layer 2 after stage 1 holds layer 1: the stages are not contiguous"},
        Case{"layer_split", kMeg, config(1, 2, 4, 1),
             [](Plan& p, const Graph& g) {
               const OpId o = g.find_op("language_model.encoder.layers.1.mlp.dense_4h_to_h");
               auto& s0 = p.pipeline.stages[0].ops;
               s0.erase(std::find(s0.begin(), s0.end(), o));
               p.pipeline.stages[1].ops.push_back(o);
             },
             "pipeline.stages[1]: layer 1 is split between stages 0 and 1"},
        Case{"fractional_samples", kMeg, config(1, 2, 4, 1), [](Plan& p, const Graph&) { p.pipeline.micro_batches = 3; },
             "pipeline.micro_batches: 3 micro-batches x 4 data-parallel ranks do not divide the batch 16"},
        Case{"explicit_partitions", kMeg, config(1, 2, 4, 1),
             [](Plan& p, const Graph& g) {
               p.partitions.push_back({g.find_op("language_model.encoder.layers.0.mlp.dense_h_to_4h"), 2, {0, 1}});
             },
             "partitions: 1 explicit per-op partitions (first: op 'language_model.encoder.layers.0.mlp.dense_h_to_4h')"},
        Case{"replicas", kMeg, config(1, 2, 2, 1), [](Plan& p, const Graph&) { p.data_parallel.replicas = 2; },
             "data_parallel.replicas: 2 replicas of the whole plan"},
        Case{"per_op_placement", kDs, config(1, 1, 1, 16), [](Plan& p, const Graph& g) { p = Plan::single_device(g); },
             "pipeline: none: the plan places ops one by one"},
        Case{"uneven_middle", kMeg, config(1, 4, 2, 1), [](Plan& p, const Graph& g) { move_layer(p, g, 3, 1); },
             "pipeline.stages: layers per stage {2, 2, 1, 1} are neither an even split nor", 6},
        Case{"megatron_indivisible_layers", kMeg, config(1, 4, 2, 1), none,
             "pipeline.stages: 6 layers do not split evenly over 4 stages", 6},
        Case{"devices_out_of_rank_order", kMeg, config(1, 2, 4, 1),
             [](Plan& p, const Graph&) { std::reverse(p.pipeline.stages[0].devices.begin(), p.pipeline.stages[0].devices.end()); },
             "pipeline.stages[0].devices: devices [3, 2, 1, 0] are not Megatron's rank order, which puts this stage on [3, 4, 5, 6]"},
        Case{"per_stage_recompute", kMeg, config(1, 2, 4, 1),
             [](Plan& p, const Graph&) { p.pipeline.stages[1].recompute = Recompute::kFull; },
             "pipeline.stages[1].recompute: full differs from the plan's none"},
        Case{"fp16_without_loss_scaling", kMeg, with(config(1, 2, 4, 1), [](MegatronConfig& m) { m.loss_scaling = false; }),
             none, "precision.loss_scaling: false, but Megatron-LM trains fp16 with dynamic loss scaling"},
        Case{"deepspeed_tp", kDs, config(2, 1, 4, 2), none, "tensor_parallel.degree: 2: a DeepSpeed config has no tensor parallelism"},
        Case{"deepspeed_virtual", kDs, with(config(1, 2, 4, 1), [](MegatronConfig& m) { m.virtual_stages = 2; }), none,
             "pipeline.virtual_stages: 2: DeepSpeed's pipeline engine has no interleaved schedule"},
        Case{"deepspeed_selective", kDs, with(config(1, 2, 4, 1), [](MegatronConfig& m) { m.recompute = Recompute::kSelective; }),
             none, "recompute: selective: DeepSpeed checkpoints whole layers"},
        Case{"deepspeed_zero2_pipeline", kDs, with(config(1, 2, 4, 1), [](MegatronConfig& m) { m.zero_stage = 2; }), none,
             "data_parallel.zero_stage: 2 with a pipeline"},
        Case{"torchtitan_fp16", kTitan, config(1, 2, 4, 1), none, "precision: fp16: torchtitan trains in bf16 or fp32"},
        Case{"torchtitan_zero1", kTitan, with(bf16(config(1, 2, 4, 1)), [](MegatronConfig& m) { m.zero_stage = 1; }), none,
             "data_parallel.zero_stage: 1: torchtitan replicates (DDP) or shards with FSDP", 4, DType::kBF16},
        Case{"torchtitan_tp_without_sp", kTitan, bf16(config(2, 2, 2, 1)), none,
             "tensor_parallel.sequence_parallel: false: torchtitan's tensor parallelism always", 4, DType::kBF16},
        Case{"torchtitan_no_overlap", kTitan, with(bf16(config(1, 2, 4, 1)), [](MegatronConfig& m) { m.overlap_grad_reduce = false; }),
             none, "data_parallel.overlap: false: torchtitan's DDP and FSDP always overlap", 4, DType::kBF16},
        Case{"torchtitan_no_clipping", kTitan, with(bf16(config(1, 2, 4, 1)), [](MegatronConfig& m) { m.grad_clipping = false; }),
             none, "precision.grad_clipping: false: torchtitan always clips", 4, DType::kBF16},
        Case{"megatron_every_2nd_layer", kMeg, with(config(1, 2, 4, 1), [](MegatronConfig& m) { m.recompute = Recompute::kFull, m.recompute_every = 2; }),
             none, "recompute_every: 2: Megatron-LM checkpoints groups of consecutive layers"},
        Case{"megatron_selective_op", kMeg, with(config(1, 2, 4, 1), [](MegatronConfig& m) { m.recompute = Recompute::kSelectiveOp; }),
             none, "recompute: selective_op: Megatron-LM's selective recomputation is the core attention's"},
        Case{"deepspeed_fp8", kDs, with(config(1, 2, 4, 1), [](MegatronConfig& m) { m.fp8 = true; }), none,
             "precision.fp8: true: a DeepSpeed config has no FP8 GEMMs"},
        Case{"deepspeed_fsdp", kDs, with(config(1, 1, 8, 1), [](MegatronConfig& m) { m.zero_stage = 3, m.fsdp.enabled = true; }),
             none, "data_parallel.fsdp: enabled: DeepSpeed's ZeRO-3 prefetches by bucket size"},
        Case{"deepspeed_every_2nd_layer", kDs, with(config(1, 2, 4, 1), [](MegatronConfig& m) { m.recompute = Recompute::kFull, m.recompute_every = 2; }),
             none, "recompute_every: 2: DeepSpeed checkpoints groups of consecutive layers"},
        Case{"torchtitan_core_attention_selective", kTitan,
             with(bf16(config(1, 2, 4, 1)), [](MegatronConfig& m) { m.recompute = Recompute::kSelective; }), none,
             "recompute: selective (the core attention's): torchtitan's selective modes are op-level", 4, DType::kBF16},
        Case{"torchtitan_every_2nd_layer_op_level", kTitan,
             with(bf16(config(1, 2, 4, 1)), [](MegatronConfig& m) { m.recompute = Recompute::kSelectiveOp, m.recompute_every = 2; }),
             none, "recompute_every: 2 with recompute selective_op: torchtitan checkpoints every k-th layer whole", 4, DType::kBF16},
        Case{"torchtitan_zero3_without_fsdp", kTitan, with(bf16(config(1, 1, 8, 1)), [](MegatronConfig& m) { m.zero_stage = 3; }),
             none, "data_parallel.fsdp: off with zero_stage 3: torchtitan shards with FSDP2's per-block schedule", 4, DType::kBF16},
        Case{"torchtitan_fsdp_prefetch_2", kTitan,
             with(bf16(config(1, 1, 8, 1)), [](MegatronConfig& m) { m.zero_stage = 3, m.fsdp.enabled = true, m.fsdp.forward_prefetch = 2; }),
             none, "data_parallel.fsdp: prefetch 2 / 1: torchtitan's FSDP2 prefetches one block ahead", 4, DType::kBF16},
        Case{"torchtitan_fsdp_no_reshard", kTitan,
             with(bf16(config(1, 1, 8, 1)), [](MegatronConfig& m) { m.zero_stage = 3, m.fsdp.enabled = true, m.fsdp.reshard_after_forward = false; }),
             none, "data_parallel.fsdp.reshard_after_forward: false: torchtitan writes it as", 4, DType::kBF16},
        Case{"device_map_tp", kMap, config(2, 1, 1, 16), none, "tensor_parallel.degree: a device map has no tensor parallelism"},
        Case{"device_map_data_parallel_stage", kMap, config(1, 2, 4, 4), none,
             "pipeline.stages[0].devices: 4 devices (data-parallel copies)"},
        Case{"device_map_micro_batches", kMap, config(1, 2, 1, 4), none,
             "pipeline.micro_batches: 4: Accelerate runs a device map on the whole batch"},
        Case{"device_map_module_with_parameters_on_two_devices", kMap, config(1, 1, 1, 16),
             [](Plan& p, const Graph& g) {
               p = Plan::single_device(g);
               p.placement[g.find_op("language_model.encoder.layers.0.mlp.dense_4h_to_h")] = 1;
             },
             "placement: module 'language_model.encoder.layers.0.mlp' holds parameters and runs its own ops on "
             "several devices"}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

std::string megatron_error(const std::string& args, int world = 8) {
  try {
    parse_megatron_arguments(args, world);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MegatronArguments, NameTheArgumentPlacerCannotRead) {
  EXPECT_EQ(megatron_error("--tensor-model-parallel-size 2"),
            "--micro-batch-size: missing (Megatron-LM requires it)");
  EXPECT_EQ(megatron_error("--tensor-model-parallel-size 3 --micro-batch-size 1"),
            "--tensor-model-parallel-size: tp 3 x pp 1 does not divide the world size 8");
  EXPECT_NE(megatron_error("--micro-batch-size 1 --recompute-granularity full --recompute-method block")
                .find("--recompute-method: placer models full recomputation of every layer"),
            std::string::npos);
  EXPECT_EQ(megatron_error("--micro-batch-size 1 --context-parallel-size 2 --cp-comm-type a2a+p2p"),
            "--cp-comm-type: 'a2a+p2p' (use p2p, a2a or allgather; a2a+p2p is not modelled)");
  EXPECT_EQ(megatron_error("--micro-batch-size 1 --context-parallel-size 3"),
            "--tensor-model-parallel-size: tp 1 x pp 1 x cp 3 does not divide the world size 8");
  EXPECT_EQ(megatron_error("--micro-batch-size 1 --expert-model-parallel-size 2"),
            "--expert-model-parallel-size: needs --num-experts (a mixture-of-experts model)");
  EXPECT_EQ(megatron_error("--micro-batch-size two"), "--micro-batch-size: 'two' is not a count");
  EXPECT_EQ(megatron_error("--micro-batch-size"), "--micro-batch-size: needs a value");
}

TEST(MegatronArguments, LayersAndBatchMustMatchTheGraph) {
  const Graph g = export_test::gpt(4, DType::kF16);
  try {
    plan_of_framework_config(parse_megatron_arguments("--num-layers 8 --micro-batch-size 2", 8), g);
    FAIL() << "no error";
  } catch (const ValidationError& e) {
    EXPECT_STREQ(e.what(), "--num-layers: 8, but graph 'gpt' has 4 layers");
  }
  try {
    plan_of_framework_config(parse_megatron_arguments("--micro-batch-size 1", 8), g);
    FAIL() << "no error";
  } catch (const ValidationError& e) {
    EXPECT_STREQ(e.what(), "--global-batch-size: 8, but graph 'gpt' is built for batch 16");
  }
}

TEST(MegatronArguments, WrappedProductsAreRefusedNamingBothArguments) {
  EXPECT_EQ(megatron_error("--tensor-model-parallel-size 65536 --pipeline-model-parallel-size 65536 --micro-batch-size 1"),
            "--tensor-model-parallel-size x --pipeline-model-parallel-size: 65536 x 65536 is above the largest 2147483647");
  EXPECT_EQ(megatron_error("--micro-batch-size 1000000000"),
            "--micro-batch-size x data-parallel size: 1000000000 x 8 is above the largest 2147483647");
}

// One validator whichever way a plan comes in: what `placer export` refuses, import refuses,
// naming the argument that set the split. 3 virtual stages x pp 2 = 6 chunks on 8 layers
// (Megatron-LM needs the chunks to divide the layers).
TEST(MegatronArguments, ImportRefusesWhatExportRefuses) {
  const Graph g = export_test::gpt(8, DType::kF16);
  try {
    plan_of_framework_config(
        parse_megatron_arguments("--pipeline-model-parallel-size 2 --virtual-pipeline-model-parallel-size 2 "
                                 "--micro-batch-size 1 --global-batch-size 16 --fp16",
                                 8),
        g);
  } catch (const Error& e) {
    FAIL() << "2 x 2 chunks split 8 layers evenly: " << e.what();
  }
  try {
    plan_of_framework_config(
        parse_megatron_arguments("--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 3 "
                                 "--micro-batch-size 1 --global-batch-size 16 --fp16",
                                 8),
        g);
    FAIL() << "no error";
  } catch (const ValidationError& e) {
    EXPECT_STREQ(e.what(),
                 "--num-virtual-stages-per-pipeline-rank: the plan read does not export back to megatron: "
                 "pipeline.stages: 8 layers do not split evenly over 6 stages and the split is not an even one with "
                 "a different first / last stage");
  }
}

std::string deepspeed_error(const std::string& json) {
  try {
    parse_deepspeed_config(json, 8);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(DeepSpeedConfig, NamesTheKeyPlacerCannotRead) {
  EXPECT_EQ(deepspeed_error(R"({"train_batch_size": 30, "train_micro_batch_size_per_gpu": 2,
                                "gradient_accumulation_steps": 2})"),
            "train_batch_size: 30 != micro-batch 2 x accumulation 2 x dp 8");
  EXPECT_NE(
      deepspeed_error(
          R"({"train_micro_batch_size_per_gpu": 1, "pipeline": {"stages": 4, "parts": [0, 2, 4, 5, 6]}})")
          .find("pipeline.parts: uneven layers per stage: placer builds even splits"),
      std::string::npos);
  EXPECT_EQ(deepspeed_error(R"({"train_micro_batch_size_per_gpu": 1, "pipeline": {"activation_checkpoint_interval": 2}})"),
            "pipeline.activation_checkpoint_interval: 2: placer models checkpointing every layer (1) or none (0)");
  EXPECT_EQ(deepspeed_error(
                R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": "two"}})"),
            "zero_optimization.stage: expected an integer, got the string 'two'");
  EXPECT_EQ(deepspeed_error("[1, 2]"), "expected an object, got an array of 2 values");
  // Wrong types and integers that do not fit are refused, never ignored or narrowed.
  EXPECT_EQ(deepspeed_error(R"({"train_batch_size": 16, "fp16": true})"), "fp16: expected an object, got true");
  EXPECT_EQ(deepspeed_error(R"({"train_batch_size": 16, "zero_optimization": 3})"),
            "zero_optimization: expected an object, got 3");
  EXPECT_EQ(deepspeed_error(R"({"train_batch_size": 16, "pipeline": {"stages": 2, "parts": [0, 4294967300, 8]}})"),
            "pipeline.parts[1]: must be between 0 and 1000000000 (got 4294967300)");
  EXPECT_EQ(deepspeed_error(R"({"train_batch_size": 16, "gradient_accumulation_steps": 536870912})"),
            "gradient_accumulation_steps x dp: 536870912 x 8 is above the largest 2147483647");
}

}  // namespace
}  // namespace placer
