#pragma once
// Measured training runs: iteration times of whole training steps with the model and the
// parallel configuration that produced them (docs/formats/iteration_runs.md), and the
// simulator's prediction for each (the graph from the GPT / LLaMA generator, the plan from
// megatron_plan). This is what `placer calibrate fit|check --iterations` and
// bench/megatron_fidelity read.
//
//   std::vector<IterationRun> runs = load_iteration_runs("runs.csv");
//   RunPredictor pred(cluster);
//   double t = pred.predict(runs[0], profile);  // seconds
//
// The CSV has a header row; `#` lines are comments. Required columns: gpus, global_batch,
// micro_batch, hidden, heads, layers, seq_len, tp, dp, pp, iteration_ms. Optional columns
// (defaults = the setup of the shipped Megatron-DeepSpeed file): model (gpt | llama),
// vocab (50257), ffn (0 = the model's), kv_heads (0 = heads), recompute (full), precision
// (fp16 | bf16 | fp8, fp16), zero_stage (0), overlap_grad_reduce (0), sequence_parallel (0),
// virtual_stages (1), attention (unfused | flash, unfused), master_weights (1), cp (1), ep (1),
// etp (empty), num_experts (0), moe_topk (0), moe_ffn (0), shared_experts (0),
// precision_variant (free text), scatter_gather (1), fsdp (0), head_dim (0), sliding_window
// (0), full_attention_every (0), q_lora_rank (0), kv_lora_rank (0), qk_rope_head_dim (0),
// v_head_dim (0), dense_layers (0), mtp_layers (0), moe_dispatcher (alltoall | deepep |
// hybridep, alltoall; config.dispatcher), cuda_graph (none | full_iteration, none:
// full_iteration = the whole step captured in one CUDA graph, simulated without host issue
// costs, without_host_issue; none = eager, module-level graphs included), linear_bias (0 | 1,
// 0: the experts' biased linears), glu_clamp (0: the experts' GLU input clamp), moe_a2a_overlap
// (0 | 1, 0: config.moe_a2a_overlap, the plan's expert_parallel.overlap). Every column is kept
// in IterationRun; the prediction refuses, naming the column, what the graph and plan cannot
// express yet (check_modelled).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "simulator/cost_profile.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/plan/megatron_plan.h"

namespace placer {

struct IterationRun {
  std::string source;  ///< file name
  int line = 0;        ///< 1-based line in the file
  std::string model = "gpt";
  int gpus = 1;
  int64_t hidden = 0, heads = 0, kv_heads = 0, ffn = 0, seq_len = 0, vocab = 50257;
  int layers = 0;
  DType dtype = DType::kF16;      ///< 16-bit type the run computes and keeps weights in
  std::string precision_variant;  ///< the source's precision label, verbatim (FP8-CS, MXFP8, ...)
  std::string attention = "unfused";  ///< unfused (scores materialised) | flash
  bool master_weights = true;  ///< fp32 master weights and optimizer state for 16-bit weights
  int ep = 1;                  ///< expert-parallel size (the cp column is config.cp)
  int etp = 0;                 ///< expert tensor-parallel size; 0 = not given
  int num_experts = 0, moe_topk = 0, shared_experts = 0;  ///< 0 experts = dense
  int64_t moe_ffn = 0;
  /// Attention shape beyond hidden / heads: the head width (0 = hidden / heads; under MLA the
  /// query / key head's non-rotary part), a sliding window (keys per query, 0 = none) and
  /// every full_attention_every-th layer (N-1, 2N-1, ...) attending fully (0 = every layer
  /// windowed); multi-head latent attention when kv_lora_rank > 0.
  int64_t head_dim = 0, sliding_window = 0;
  int full_attention_every = 0;
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  /// Leading layers with a dense MLP (ffn wide) before the MoE layers; multi-token-prediction
  /// layers after the last one (each simulated as one more decoder layer of the MoE kind).
  int dense_layers = 0, mtp_layers = 0;
  /// config.virtual_stages: the virtual_stages column; config.fp8: precision fp8 (FP8 GEMMs,
  /// weights and the other ops in bf16).
  MegatronConfig config;
  std::string cuda_graph = "none";  ///< none | full_iteration (the cuda_graph column)
  /// gpt-oss's expert MLP: biased linears (MoeOptions::expert_bias) and the GLU input clamped
  /// to glu_clamp (MoeOptions::glu_clamp, 0 = none).
  bool linear_bias = false;
  double glu_clamp = 0;
  bool recompute_given = false;  ///< recompute column filled (else full is the default)
  double measured = 0;  ///< seconds per iteration

  std::string where() const { return source + ":" + std::to_string(line); }
};

/// Parses the CSV. Errors (FormatError, "file:line: column 'x': ...") for a missing
/// column, a non-numeric or non-integer field, and impossible configurations: tp not
/// dividing heads, dp x tp x pp != gpus, micro-batches not an integer, pp > layers.
std::vector<IterationRun> parse_iteration_runs(const std::string& text, const std::string& file);
std::vector<IterationRun> load_iteration_runs(const std::string& path);

/// The work one prediction of `run` costs, estimated from its columns before any graph is
/// built: simulated op executions = layers x kOpsPerLayerStep (a GPT layer's forward,
/// backward and optimizer ops) x micro-batches x tp (each op runs as tp partitions).
double estimated_simulated_ops(const IterationRun& run);
constexpr double kOpsPerLayerStep = 60;
/// The most estimated_simulated_ops `calibrate fit` / `check` take per run
/// (docs/formats/iteration_runs.md): a run at the bound (24 layers, pp 2, 13888 micro-batches)
/// simulates in about 13 s and 0.8 GB; the fit prints its progress per iteration.
constexpr double kMaxSimulatedOpsPerRun = 2e7;

/// Checks every run before any is simulated, so a fit fails at once and names the row:
/// the run fits `cluster` and its estimated work is within kMaxSimulatedOpsPerRun.
/// ValidationError "<file>:<line>: ...". Returns the largest estimate.
double check_runs_before_simulating(const std::vector<IterationRun>& runs, const Cluster& cluster);

/// Throws ValidationError ("file:line: column 'num_experts': 8 is not modelled yet ...") when
/// `run` sets a column the graph generators or plans cannot express yet: experts or the
/// llama shape columns in a gpt model. (cp > 1 runs the plan's context parallelism with the
/// p2p ring.) RunPredictor calls it. (`attention flash` builds the generators' fused
/// FlashAttention op; `precision fp8` runs the plan's FP8 GEMMs; experts build the llama
/// generator's MoE layers in every layer, simulated with the run's ep and etp.)
void check_modelled(const IterationRun& run);

/// `profile` with no host cost: every op's dispatch, the micro-batch overhead and the host
/// syncs off (a step replayed from one CUDA graph).
CostProfile without_host_issue(const CostProfile& profile);

/// Builds (and caches) the training-step graph of each distinct model of the runs and
/// simulates a run under a cost profile on `cluster` (devices 0 .. gpus-1).
class RunPredictor {
 public:
  explicit RunPredictor(const Cluster& cluster);
  ~RunPredictor();

  /// The training-step graph of `run` (fp16/bf16, Adam; fp32 master weights unless the run
  /// says master_weights 0). ValidationError from check_modelled first.
  const Graph& graph(const IterationRun& run);
  /// The plan of `run` on its graph.
  Plan plan(const IterationRun& run);
  /// Predicted iteration time (seconds) of `run` under `profile`.
  double predict(const IterationRun& run, const CostProfile& profile);

 private:
  const Cluster& cluster_;
  std::map<std::string, std::unique_ptr<Graph>> graphs_;  ///< by graph_key(run)
};

}  // namespace placer
