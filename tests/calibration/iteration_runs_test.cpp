// The measured-runs columns of today's stacks: kept in IterationRun, virtual stages and
// master weights and FP8 wired into the plan and graph, the rest refused by name until
// modelled.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>

#include "simulator/calibration/iteration_runs.h"
#include "simulator/cost_profile.h"
#include "src/graph/moe_attrs.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

namespace placer {
namespace {

const std::string kSrc = PLACER_SOURCE_DIR;
const std::string kHeader =
    "gpus,global_batch,micro_batch,hidden,heads,layers,seq_len,tp,dp,pp,iteration_ms";

TEST(IterationRunsModern, ShippedFilesReadEveryColumn) {
  size_t rows = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(kSrc + "/datasets/measurements/modern")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("megatron-bridge_", 0) == 0)
      rows += load_iteration_runs(e.path().string()).size();
  }
  EXPECT_EQ(rows, 121u);  // the README's count
  const std::vector<IterationRun> runs =
      load_iteration_runs(kSrc + "/datasets/measurements/modern/llama_dense_h100.csv");
  ASSERT_EQ(runs.size(), 6u);
  // 8,128,1,4096,32,32,8192,1,8,1,9070.098955,llama,128256,14336,8,none,fp8,3,1,0,flash,1,1,1,1,,0,0,0,0,
  // FP8-CS,1: the recipes' recomputation (none) and Megatron-FSDP's per-block schedule.
  const IterationRun& a = runs[0];
  EXPECT_EQ(a.config.recompute, Recompute::kNone);
  EXPECT_TRUE(a.recompute_given);
  EXPECT_TRUE(a.config.fsdp.enabled);
  EXPECT_TRUE(a.config.fp8);
  EXPECT_EQ(a.dtype, DType::kBF16);
  EXPECT_EQ(a.precision_variant, "FP8-CS");
  EXPECT_EQ(a.attention, "flash");
  EXPECT_TRUE(a.master_weights);
  EXPECT_EQ(a.config.zero_stage, 3);
  EXPECT_EQ(a.etp, 0);
  EXPECT_EQ(a.num_experts, 0);
  // 64,128,1,8192,64,80,8192,4,2,8,...,flash,1,5,1,1,...: tp 4, pp 8, 5 virtual stages.
  EXPECT_EQ(runs[1].config.virtual_stages, 5);
  EXPECT_EQ(runs[1].config.tp, 4);
  EXPECT_EQ(runs[1].config.cp, 1);
}

TEST(IterationRunsModern, AbsentColumnsKeepTheirOldMeaning) {
  const IterationRun r =
      parse_iteration_runs(kHeader + "\n8,64,4,1024,16,12,1024,2,4,1,100\n", "runs.csv")[0];
  EXPECT_EQ(r.attention, "unfused");
  EXPECT_EQ(r.config.recompute, Recompute::kFull);
  EXPECT_FALSE(r.recompute_given);  // the default, not stated
  EXPECT_TRUE(r.master_weights);
  EXPECT_FALSE(r.config.fp8);
  EXPECT_EQ(r.dtype, DType::kF16);
  EXPECT_EQ(r.config.virtual_stages, 1);
  EXPECT_TRUE(r.config.scatter_gather);
  EXPECT_EQ(r.config.cp, 1);
  EXPECT_EQ(r.ep, 1);
  EXPECT_NO_THROW(check_modelled(r));
}

TEST(IterationRunsModern, VirtualStagesScatterGatherAndMasterWeightsReachPlanAndGraph) {
  const Cluster c = load_cluster_yaml(kSrc + "/datasets/clusters/dgx_a100.cluster.yaml");
  const std::vector<IterationRun> runs =
      parse_iteration_runs(kHeader +
                               ",virtual_stages,master_weights,precision,scatter_gather\n8,64,4,"
                               "1024,16,12,1024,2,2,2,100,3,1,bf16,1\n"
                               "8,64,4,1024,16,12,1024,2,2,2,100,3,0,bf16,0\n",
                           "runs.csv");
  RunPredictor pred(c);
  const Plan p = pred.plan(runs[0]);
  EXPECT_EQ(p.pipeline.virtual_stages, 3);
  EXPECT_EQ(p.pipeline.stages.size(), 6u);  // pp 2 x 3 chunks of 2 layers
  EXPECT_TRUE(p.pipeline.scatter_gather);
  EXPECT_FALSE(pred.plan(runs[1]).pipeline.scatter_gather);
  // Adam keeps 2 x 2 B of bf16 state per parameter without fp32 master weights and
  // 3 x 4 B with them.
  uint64_t with = 0, without = 0;
  const Graph& gw = pred.graph(runs[0]);
  for (OpId o = 0; o < gw.num_ops(); ++o) with += gw.op(o).state_bytes;
  const Graph& gn = pred.graph(runs[1]);
  for (OpId o = 0; o < gn.num_ops(); ++o) without += gn.op(o).state_bytes;
  EXPECT_EQ(with, 3 * without);
}

TEST(IterationRunsModern, FsdpColumnTurnsOnThePerBlockSchedule) {
  const Cluster c = load_cluster_yaml(kSrc + "/datasets/clusters/dgx_a100.cluster.yaml");
  const std::vector<IterationRun> runs = parse_iteration_runs(
      kHeader + ",zero_stage,fsdp\n8,64,4,1024,16,12,1024,1,8,1,100,3,1\n"
                "8,64,4,1024,16,12,1024,1,8,1,100,3,\n",
      "runs.csv");
  RunPredictor pred(c);
  const Plan fsdp = pred.plan(runs[0]);
  EXPECT_EQ(fsdp.data_parallel.zero_stage, 3);
  EXPECT_TRUE(fsdp.data_parallel.fsdp.enabled);
  EXPECT_EQ(fsdp.data_parallel.fsdp.forward_prefetch, 1);
  EXPECT_TRUE(fsdp.data_parallel.fsdp.reshard_after_forward);
  EXPECT_FALSE(pred.plan(runs[1]).data_parallel.fsdp.enabled);  // ZeRO-3's accounting
  try {
    parse_iteration_runs(kHeader + ",zero_stage,fsdp\n8,64,4,1024,16,12,1024,1,8,1,100,1,1\n",
                         "runs.csv");
    ADD_FAILURE() << "fsdp 1 with zero_stage 1 accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("runs.csv:2: column 'fsdp': 1 needs zero_stage 3"),
              std::string::npos)
        << e.what();
  }
}

void expect_refused(const std::string& columns, const std::string& values,
                    const std::string& message) {
  const IterationRun r = parse_iteration_runs(
      kHeader + "," + columns + "\n8,64,4,1024,16,12,1024,2,4,1,100," + values + "\n",
      "runs.csv")[0];
  try {
    check_modelled(r);
    ADD_FAILURE() << "accepted: " << columns;
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(IterationRunsModern, UnmodelledColumnsAreNamedErrors) {
  expect_refused("num_experts,moe_topk,moe_ffn", "8,2,512",
                 "column 'num_experts': 8 is not modelled yet (MoE layers need model llama)");
  EXPECT_THROW(parse_iteration_runs(kHeader + ",attention\n8,64,4,1024,16,12,1024,2,4,1,100,fast\n",
                                    "r.csv"),
               FormatError);
  EXPECT_THROW(
      parse_iteration_runs(
          kHeader + ",num_experts,moe_topk\n8,64,4,1024,16,12,1024,2,4,1,100,8,0\n", "r.csv"),
      FormatError);
}

TEST(IterationRunsModern, FlashAndFp8AreModelled) {
  const std::vector<IterationRun> runs = parse_iteration_runs(
      kHeader +
          ",attention,precision,ep\n8,64,4,1024,16,12,1024,2,4,1,100,flash,fp8,1\n"
          "8,64,4,1024,16,12,1024,2,4,1,100,flash,bf16,2\n",
      "runs.csv");
  EXPECT_EQ(runs[0].attention, "flash");
  EXPECT_NO_THROW(check_modelled(runs[0]));
  EXPECT_EQ(runs[0].dtype, DType::kBF16);
  EXPECT_TRUE(runs[0].config.fp8);           // modelled: kept
  EXPECT_NO_THROW(check_modelled(runs[1]));  // ep 2 of a dense model: nothing to spread
}

// An MoE row builds the llama generator's MoE layers and a plan with the row's ep and etp
// (Megatron-core's default etp: tp).
// cp counts in the ranks (8 GPUs = tp 2 x dp 2 x cp 2) and reaches the plan as Megatron-core's
// default exchange, the p2p ring.
TEST(IterationRunsModern, CpRowsRunContextParallelPlans) {
  const Cluster c = load_cluster_yaml(kSrc + "/datasets/clusters/dgx_a100.cluster.yaml");
  const std::vector<IterationRun> runs = parse_iteration_runs(
      kHeader + ",model,attention,cp\n8,64,4,1024,16,4,1024,2,2,1,100,llama,flash,2\n",
      "runs.csv");
  EXPECT_EQ(runs[0].config.cp, 2);
  RunPredictor pred(c);
  const Plan p = pred.plan(runs[0]);
  EXPECT_EQ(p.context_parallel.degree, 2);
  EXPECT_EQ(p.context_parallel.comm, ContextParallelComm::kP2P);
  EXPECT_GT(pred.predict(runs[0], default_profile()), 0);
}

TEST(IterationRunsModern, MoeRowsBuildExpertLayersAndExpertParallelPlans) {
  const Cluster c = load_cluster_yaml(kSrc + "/datasets/clusters/dgx_a100.cluster.yaml");
  const std::vector<IterationRun> runs = parse_iteration_runs(
      kHeader +
          ",model,attention,num_experts,moe_topk,moe_ffn,shared_experts,ep,etp\n"
          "8,64,4,1024,16,4,1024,2,4,1,100,llama,flash,8,2,512,1,4,\n"
          "8,64,4,1024,16,4,1024,2,4,1,100,llama,flash,8,2,512,1,8,1\n",
      "runs.csv");
  RunPredictor pred(c);
  const Plan p = pred.plan(runs[0]);
  EXPECT_EQ(p.expert_parallel.degree, 4);
  EXPECT_EQ(p.expert_parallel.tensor_parallel, 2);
  EXPECT_EQ(pred.plan(runs[1]).expert_parallel.tensor_parallel, 1);
  // 4 layers of 8 experts of 3 x 1024 x 512 and one shared expert of 512.
  const Graph& g = pred.graph(runs[0]);
  uint64_t expert_bytes = 0;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const Op& op = g.op(o);
    if (op.phase == Phase::kForward && op.name.find(".experts.linear_fc") != std::string::npos) {
      expert_bytes += op.param_bytes;
    }
  }
  EXPECT_EQ(expert_bytes, uint64_t(4) * 8 * 3 * 1024 * 512 * 2);
  EXPECT_NE(g.find_op("language_model.encoder.layers.3.mlp.shared_experts.linear_fc1"), kNoOp);
  const CostProfile profile = default_profile();
  EXPECT_GT(pred.predict(runs[0], profile), 0);
  EXPECT_GT(pred.predict(runs[1], profile), 0);
}

// The attention column picks the generator's attention: flash builds one FlashAttention op
// per layer and no s x s softmax; unfused (the default) builds the scores and softmax.
TEST(IterationRunsModern, AttentionColumnSelectsTheGraphsAttention) {
  std::vector<IterationRun> runs = parse_iteration_runs(
      kHeader + ",model,attention\n8,64,4,1024,16,12,1024,2,4,1,100,llama,flash\n"
                "8,64,4,1024,16,12,1024,2,4,1,100,llama,unfused\n",
      "runs.csv");
  runs.push_back(parse_iteration_runs(
      kHeader + ",model\n8,64,4,1024,16,12,1024,2,4,1,100,llama\n", "runs.csv")[0]);
  const Cluster cluster = load_cluster_yaml(kSrc + "/datasets/clusters/dgx_a100.cluster.yaml");
  RunPredictor pred(cluster);
  auto count = [&](const IterationRun& r, const std::string& type) {
    int n = 0;
    for (const Op& op : pred.graph(r).ops()) n += op.type == type;
    return n;
  };
  EXPECT_EQ(count(runs[0], "FlashAttention"), 12);
  EXPECT_EQ(count(runs[0], "Softmax"), 0);
  EXPECT_EQ(count(runs[1], "FlashAttention"), 0);
  EXPECT_EQ(count(runs[1], "Softmax"), 12);
  EXPECT_EQ(count(runs[2], "Softmax"), 12);  // no column: unfused, as before the column
}

// The shipped MoE files state each model's shape (datasets/measurements/modern/README.md,
// "MoE shape columns"): GPT-OSS 120B bf16 on H100 with 64-wide heads and the fused sink
// attention; DeepSeek-V3 on GB300 with MLA, 3 dense layers and (25.11, "w/o MTP") no MTP;
// the presets' whole-iteration CUDA graphs ("CUDA graphs").
TEST(IterationRunsModern, ShippedMoeFilesStateTheModelShapes) {
  const std::string dir = kSrc + "/datasets/measurements/modern/";
  const std::vector<IterationRun> h100 = load_iteration_runs(dir + "moe_h100.csv");
  ASSERT_EQ(h100.size(), 4u);
  EXPECT_EQ(h100[0].head_dim, 64);
  EXPECT_EQ(h100[0].attention, "flash");
  EXPECT_EQ(h100[0].cuda_graph, "none");
  EXPECT_EQ(h100[0].config.recompute, Recompute::kNone);
  EXPECT_EQ(h100[0].ep, 8);
  EXPECT_TRUE(h100[0].linear_bias);  // GPT-OSS: biased linears, GLU clamped at 7
  EXPECT_EQ(h100[0].glu_clamp, 7.0);
  const std::vector<IterationRun> gb300 = load_iteration_runs(dir + "moe_gb300.csv");
  ASSERT_EQ(gb300.size(), 22u);
  const IterationRun& ds = gb300[0];
  // experts, kv / q latent ranks, rotary head part, dense layers, MTP layers
  const std::vector<int64_t> shape{ds.num_experts,      ds.kv_lora_rank,  ds.q_lora_rank,
                                   ds.qk_rope_head_dim, ds.dense_layers, ds.mtp_layers};
  EXPECT_EQ(shape, (std::vector<int64_t>{256, 512, 1536, 64, 3, 0}));
  EXPECT_FALSE(ds.linear_bias);
  EXPECT_EQ(ds.glu_clamp, 0.0);
  int gpt_oss_windowed = 0, full_iteration = 0;
  for (const IterationRun& r : gb300) {
    gpt_oss_windowed += r.hidden == 2880 && r.sliding_window == 128 && r.full_attention_every == 2;
    full_iteration += r.cuda_graph == "full_iteration";
  }
  EXPECT_EQ(gpt_oss_windowed, 8);  // every GPT-OSS row, bf16 and MXFP8
  // GPT-OSS MXFP8 (3 rows) and DeepSeek-V3 MXFP8 at micro-batch 1 (4 rows).
  EXPECT_EQ(full_iteration, 7);
}

// The presets' expert all-to-all overlap ("All-to-all overlap" in the folder's README): on
// GB300 the same 7 rows as the whole-iteration graphs; on GB200 also the GPT-OSS bf16 rows at
// GBS 1280 and micro-batch 4; the overlap reaches the plan.
TEST(IterationRunsModern, ShippedMoeFilesStateTheAllToAllOverlap) {
  const std::string dir = kSrc + "/datasets/measurements/modern/";
  const auto overlapped = [&](const std::string& gpu) {
    int n = 0;
    for (const IterationRun& r : load_iteration_runs(dir + "moe_" + gpu + ".csv")) {
      n += r.config.moe_a2a_overlap;
      if (gpu == "gb300") {
        EXPECT_EQ(r.config.moe_a2a_overlap, r.cuda_graph == "full_iteration");
      }
    }
    return n;
  };
  EXPECT_EQ(overlapped("h100"), 0);
  EXPECT_EQ(overlapped("b200"), 1);  // DeepSeek-V3 ep 32, pp 8, vp 2
  EXPECT_EQ(overlapped("b300"), 1);  // GPT-OSS MXFP8
  EXPECT_EQ(overlapped("gb200"), 14);
  EXPECT_EQ(overlapped("gb300"), 7);
  const Cluster c = load_cluster_yaml(kSrc + "/datasets/clusters/dgx_a100.cluster.yaml");
  const std::string cols =
      ",model,attention,num_experts,moe_topk,moe_ffn,ep,recompute,"
      "virtual_stages,moe_a2a_overlap\n";
  const std::vector<IterationRun> runs = parse_iteration_runs(
      kHeader + cols + "8,64,4,1024,16,4,1024,1,4,2,100,llama,flash,8,2,512,4,none,2,1\n", "r.csv");
  RunPredictor pred(c);
  EXPECT_TRUE(pred.plan(runs[0]).expert_parallel.overlap);
  const auto error = [&](const std::string& row) {
    try {
      parse_iteration_runs(kHeader + cols + row + "\n", "r.csv");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("8,64,4,1024,16,4,1024,1,8,1,100,llama,flash,8,2,512,1,none,1,1")
                .find("column 'moe_a2a_overlap': 1 needs experts and ep > 1"),
            std::string::npos);
  EXPECT_NE(error("8,64,4,1024,16,4,1024,1,4,2,100,llama,flash,8,2,512,4,none,1,1")
                .find("column 'moe_a2a_overlap': 1 needs virtual_stages > 1 when pp > 1"),
            std::string::npos);
  EXPECT_NE(error("8,64,4,1024,16,4,1024,1,4,2,100,llama,flash,8,2,512,4,full,2,1")
                .find("column 'moe_a2a_overlap': 1 cannot run with full recomputation"),
            std::string::npos);
}

// A row captured in one CUDA graph is simulated without host costs: the same as its eager
// twin under without_host_issue, and faster than the eager twin where the host is the bound
// (1 ms per op).
TEST(IterationRunsModern, FullIterationGraphRowsRunWithoutHostCost) {
  const Cluster c = load_cluster_yaml(kSrc + "/datasets/clusters/dgx_a100.cluster.yaml");
  const std::vector<IterationRun> runs =
      parse_iteration_runs(kHeader +
                               ",cuda_graph\n8,64,4,1024,16,2,1024,2,4,1,100,full_iteration\n"
                               "8,64,4,1024,16,2,1024,2,4,1,100,none\n",
                           "runs.csv");
  CostProfile slow_host = default_profile();
  for (OpCostProfile& op : slow_host.ops) op.dispatch = 1e-3;
  RunPredictor pred(c);
  const double graphed = pred.predict(runs[0], slow_host);
  EXPECT_DOUBLE_EQ(graphed, pred.predict(runs[1], without_host_issue(slow_host)));
  EXPECT_LT(graphed, pred.predict(runs[1], slow_host));
  EXPECT_THROW(
      parse_iteration_runs(kHeader + ",cuda_graph\n8,64,4,1024,16,2,1024,2,4,1,100,all\n", "r.csv"),
      FormatError);
}

// The shape columns reach the llama graph. GPT-OSS-like: 4 heads of 16 on hidden 96 (q
// width 64), 2 kv heads, a window of 8 on layers 0 and 2, full attention on 1 and 3 (every
// 2nd); dense_layers 1 and mtp_layers 1 make layer 0 dense and add a multi-token-prediction
// block whose decoder layer is the fifth (MoE, windowed) layer.
TEST(IterationRunsModern, ShapeColumnsReachTheGraph) {
  const Cluster c = load_cluster_yaml(kSrc + "/datasets/clusters/dgx_a100.cluster.yaml");
  const std::string cols =
      ",model,attention,kv_heads,num_experts,moe_topk,moe_ffn,head_dim,sliding_window,"
      "full_attention_every,dense_layers,mtp_layers";
  const IterationRun r = parse_iteration_runs(
      kHeader + cols + "\n8,16,1,96,4,4,32,1,8,1,100,llama,flash,2,8,2,32,16,8,2,1,1\n",
      "runs.csv")[0];
  EXPECT_EQ(r.head_dim, 16);
  RunPredictor pred(c);
  const Graph& g = pred.graph(r);
  const std::string L = "language_model.encoder.layers.";
  const OpId qkv = g.find_op(L + "0.self_attention.query_key_value");
  ASSERT_NE(qkv, kNoOp);
  // (4 + 2 x 2) heads x 16 = 128 outputs of 96 inputs: 2 x b s x 96 x 128 FLOPs (b 16, s 32).
  EXPECT_DOUBLE_EQ(g.op(qkv).flops, 2.0 * 16 * 32 * 96 * 128);
  // The output projection reads 4 x 16 = 64 wide contexts.
  EXPECT_DOUBLE_EQ(g.op(g.find_op(L + "0.self_attention.dense")).flops, 2.0 * 16 * 32 * 64 * 96);
  const std::string mtp = "language_model.mtp.layers.0";
  ASSERT_NE(g.find_op(mtp + ".eh_proj"), kNoOp);
  for (int i = 0; i < 5; ++i) {
    const std::string layer = i < 4 ? L + std::to_string(i) : mtp + ".transformer_layer";
    const OpId fa = g.find_op(layer + ".self_attention.core_attention.flash_attention");
    ASSERT_NE(fa, kNoOp) << i;
    const std::string* w = find_op_attr(g.op(fa), "window");
    EXPECT_EQ(w != nullptr, i % 2 == 0) << i;
    // 4 b a d x causal pairs: through the window of 8, 8 x 9 / 2 + 24 x 8 = 228 pairs of the
    // 32-token sequence; fully, 32 x 33 / 2 = 528.
    EXPECT_DOUBLE_EQ(g.op(fa).flops, 4.0 * 16 * 4 * 16 * (i % 2 == 0 ? 228 : 528)) << i;
    EXPECT_EQ(g.find_op(layer + ".mlp.router") != kNoOp, i >= 1) << i;
  }
  EXPECT_EQ(g.find_op(L + "4.self_attention.dense"), kNoOp);
}

// MLA columns build Megatron-core's latent projections: q through a rank-24 bottleneck to 4
// heads of 16 + 8 rotary, keys / values through a rank-12 latent (+ 8 rotary) to 16-wide values.
TEST(IterationRunsModern, MlaColumnsBuildLatentAttention) {
  const Cluster c = load_cluster_yaml(kSrc + "/datasets/clusters/dgx_a100.cluster.yaml");
  const IterationRun r = parse_iteration_runs(
      kHeader +
          ",model,attention,head_dim,q_lora_rank,kv_lora_rank,qk_rope_head_dim,v_head_dim\n"
          "8,16,1,102,4,2,32,1,8,1,100,llama,flash,16,24,12,8,16\n",
      "runs.csv")[0];
  RunPredictor pred(c);
  const Graph& g = pred.graph(r);
  const std::string P = "language_model.encoder.layers.0.self_attention.";
  const OpId up = g.find_op(P + "linear_q_up_proj");
  ASSERT_NE(up, kNoOp);
  EXPECT_DOUBLE_EQ(g.op(up).flops, 2.0 * 16 * 32 * 24 * (4 * (16 + 8)));
  const OpId kv_down = g.find_op(P + "linear_kv_down_proj");
  ASSERT_NE(kv_down, kNoOp);
  EXPECT_DOUBLE_EQ(g.op(kv_down).flops, 2.0 * 16 * 32 * 102 * (12 + 8));
  EXPECT_DOUBLE_EQ(g.op(g.find_op(P + "dense")).flops, 2.0 * 16 * 32 * (4 * 16) * 102);
  // hidden 102 is not a multiple of 4 heads: accepted above because MLA sets the head
  // widths, refused without.
  EXPECT_THROW(
      parse_iteration_runs(kHeader + ",model\n8,16,1,102,4,2,32,1,8,1,100,llama\n", "r.csv"),
      FormatError);
}

// The error of one row (96 hidden, 4 heads, 4 layers, seq 32) with the extra columns `cols`
// holding `vals`; "accepted" when it reads.
std::string row_error(const std::string& cols, const std::string& vals) {
  try {
    parse_iteration_runs(kHeader + cols + "\n8,16,1,96,4,4,32,1,8,1,100" + vals + "\n", "r.csv");
  } catch (const FormatError& e) {
    return std::string(e.what());
  }
  return std::string("accepted");
}

// gpt-oss's expert MLP columns: biased expert linears and the GLU clamp reach the graph;
// both are refused on a dense model, a negative clamp is refused.
TEST(IterationRunsModern, ExpertMlpColumnsReachTheGraph) {
  const Cluster c = load_cluster_yaml(kSrc + "/datasets/clusters/dgx_a100.cluster.yaml");
  const std::string cols = ",model,attention,num_experts,moe_topk,moe_ffn,linear_bias,glu_clamp";
  const std::vector<IterationRun> runs =
      parse_iteration_runs(kHeader + cols +
                               "\n8,16,1,96,4,2,32,1,8,1,100,llama,flash,4,2,64,1,7\n"
                               "8,16,1,96,4,2,32,1,8,1,100,llama,flash,4,2,64,0,0\n",
                           "runs.csv");
  EXPECT_TRUE(runs[0].linear_bias);
  EXPECT_EQ(runs[0].glu_clamp, 7.0);
  RunPredictor pred(c);
  const std::string p = "language_model.encoder.layers.1.mlp.experts.";
  const Graph& g = pred.graph(runs[0]);
  EXPECT_NE(g.find_op(p + "glu_clamp"), kNoOp);
  EXPECT_NE(g.find_op(p + "linear_fc2_bias"), kNoOp);
  const Graph& plain = pred.graph(runs[1]);
  EXPECT_EQ(plain.find_op(p + "glu_clamp"), kNoOp);
  EXPECT_EQ(plain.find_op(p + "linear_fc2_bias"), kNoOp);
  EXPECT_EQ(row_error(",linear_bias", ",1"),
            "r.csv:2: column 'linear_bias': is for the experts of an MoE model");
  EXPECT_EQ(row_error(",num_experts,moe_topk,glu_clamp", ",4,2,-7"),
            "r.csv:2: column 'glu_clamp': -7 is negative");
}

TEST(IterationRunsModern, ShapeColumnErrorsNameTheColumn) {
  EXPECT_EQ(row_error(",sliding_window", ",8"),
            "r.csv:2: column 'sliding_window': needs attention flash");
  EXPECT_EQ(row_error(",attention,kv_lora_rank", ",flash,12"),
            "r.csv:2: column 'v_head_dim': MLA needs head_dim + qk_rope_head_dim > 0 and "
            "v_head_dim > 0");
  EXPECT_EQ(row_error(",dense_layers", ",4"),
            "r.csv:2: column 'dense_layers': 4 is not below layers 4");
  expect_refused(
      "head_dim", "32",
      "column 'head_dim': 32 is not modelled yet (the gpt generator has no such option)");
}

// The same row in bf16 and fp8. On an H100 (f8 peak 1979 TFLOPS, twice the bf16 989) the
// layers' GEMMs run at the f8 curve, so the step is faster, but by less than 2x: the
// attention products, the output layer, the elementwise ops, the scaling passes and the
// optimizer stay 16-bit. On an A100 (no f8 peak) the GEMMs keep the bf16 peak and only the
// scaling passes are added: slower.
std::pair<double, double> bf16_and_fp8_step(const std::string& cluster,
                                            const std::string& profile) {
  const Cluster c = load_cluster_yaml(kSrc + "/datasets/clusters/" + cluster);
  const CostProfile prof = load_cost_profile(kSrc + "/datasets/clusters/" + profile);
  const std::vector<IterationRun> runs =
      parse_iteration_runs(kHeader +
                               ",model,precision\n8,16,1,4096,32,4,2048,2,4,1,100,llama,bf16\n"
                               "8,16,1,4096,32,4,2048,2,4,1,100,llama,fp8\n",
                           "runs.csv");
  RunPredictor pred(c);
  EXPECT_FALSE(pred.plan(runs[0]).precision.fp8);
  EXPECT_TRUE(pred.plan(runs[1]).precision.fp8);
  EXPECT_EQ(&pred.graph(runs[0]), &pred.graph(runs[1]));  // one bf16 graph for both
  return {pred.predict(runs[0], prof), pred.predict(runs[1], prof)};
}

TEST(IterationRunsModern, Fp8RowsRunTheGemmsAtTheF8Peak) {
  const auto [bf16, fp8] = bf16_and_fp8_step("h100_ib_4node.cluster.yaml", "h100.profile.yaml");
  EXPECT_LT(fp8, bf16);
  EXPECT_GT(fp8, bf16 / 2);
  const auto [a100_bf16, a100_fp8] =
      bf16_and_fp8_step("dgx_a100.cluster.yaml", "dgx_a100.profile.yaml");
  EXPECT_GT(a100_fp8, a100_bf16);
}

}  // namespace
}  // namespace placer
