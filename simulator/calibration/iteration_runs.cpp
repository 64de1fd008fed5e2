#include "simulator/calibration/iteration_runs.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "datasets/gpt.h"
#include "simulator/cost_model.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/json_read.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"

namespace placer {

namespace {

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : line) {
    if (ch == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (ch != '\r') {
      cur += ch;
    }
  }
  out.push_back(cur);
  for (std::string& f : out) {
    const size_t a = f.find_first_not_of(" \t");
    const size_t b = f.find_last_not_of(" \t");
    f = a == std::string::npos ? std::string() : f.substr(a, b - a + 1);
  }
  return out;
}

class RowReader {
 public:
  RowReader(const std::string& file, int line, const std::map<std::string, size_t>& cols,
            const std::vector<std::string>& fields)
      : file_(file), line_(line), cols_(cols), fields_(fields) {}

  [[noreturn]] void fail(const std::string& column, const std::string& message) const {
    throw FormatError(file_ + ":" + std::to_string(line_) + ": column '" + column + "': " + message);
  }
  bool has(const std::string& c) const {
    auto it = cols_.find(c);
    return it != cols_.end() && !fields_[it->second].empty();
  }
  const std::string& text(const std::string& c) const {
    auto it = cols_.find(c);
    if (it == cols_.end() || fields_[it->second].empty()) fail(c, "is empty");
    return fields_[it->second];
  }
  double number(const std::string& c) const {
    const std::string& s = text(c);
    double v = 0;
    if (!parse_measurement(s, &v))
      fail(c, quote_short(s) + " is not a finite number of normal magnitude");
    return v;
  }
  int64_t integer(const std::string& c, int64_t lo, int64_t hi) const {
    const double v = number(c);
    if (v != std::floor(v)) fail(c, "'" + text(c) + "' is not an integer");
    if (v < double(lo) || v > double(hi)) {
      fail(c, text(c) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return static_cast<int64_t>(v);
  }
  int64_t integer_or(const std::string& c, int64_t dflt, int64_t lo, int64_t hi) const {
    return has(c) ? integer(c, lo, hi) : dflt;
  }

 private:
  const std::string& file_;
  int line_;
  const std::map<std::string, size_t>& cols_;
  const std::vector<std::string>& fields_;
};

const char* const kRequired[] = {"gpus", "global_batch", "micro_batch", "hidden", "heads", "layers",
                                 "seq_len", "tp", "dp", "pp", "iteration_ms"};
const char* const kOptional[] = {"model",
                                 "vocab",
                                 "ffn",
                                 "kv_heads",
                                 "recompute",
                                 "precision",
                                 "zero_stage",
                                 "overlap_grad_reduce",
                                 "sequence_parallel",
                                 "virtual_stages",
                                 "attention",
                                 "master_weights",
                                 "cp",
                                 "ep",
                                 "etp",
                                 "num_experts",
                                 "moe_topk",
                                 "moe_ffn",
                                 "shared_experts",
                                 "precision_variant",
                                 "scatter_gather",
                                 "fsdp",
                                 "head_dim",
                                 "sliding_window",
                                 "full_attention_every",
                                 "q_lora_rank",
                                 "kv_lora_rank",
                                 "qk_rope_head_dim",
                                 "v_head_dim",
                                 "dense_layers",
                                 "mtp_layers",
                                 "moe_dispatcher",
                                 "cuda_graph",
                                 "linear_bias",
                                 "glu_clamp",
                                 "moe_a2a_overlap"};

// The header row: column name -> index; every name known, every required one present.
std::map<std::string, size_t> read_header(const std::vector<std::string>& fields,
                                          const std::string& file, int n) {
  std::map<std::string, size_t> cols;
  for (size_t i = 0; i < fields.size(); ++i) {
    bool known = false;
    for (const char* c : kRequired) known = known || fields[i] == c;
    for (const char* c : kOptional) known = known || fields[i] == c;
    if (!known) {
      throw FormatError(file + ":" + std::to_string(n) + ": unknown column '" + fields[i] +
                        "' (docs/formats/iteration_runs.md)");
    }
    cols[fields[i]] = i;
  }
  for (const char* c : kRequired) {
    if (!cols.count(c)) {
      throw FormatError(file + ":" + std::to_string(n) + ": the header has no column '" + c + "'");
    }
  }
  return cols;
}

// The precision column: fp16 / bf16 / fp8 (absent: the run's default). FP8 runs keep their
// weights and activations in bf16 (Transformer Engine, torchao float8).
void read_precision(const RowReader& r, IterationRun* run) {
  if (r.has("precision_variant")) run->precision_variant = r.text("precision_variant");
  if (!r.has("precision")) return;
  const std::string& p = r.text("precision");
  if (p == "fp16" || p == "f16") {
    run->dtype = DType::kF16;
  } else if (p == "bf16") {
    run->dtype = DType::kBF16;
  } else if (p == "fp8") {
    run->dtype = DType::kBF16;
    run->config.fp8 = true;
  } else {
    r.fail("precision", "'" + p + "' is not fp16, bf16 or fp8");
  }
}

// The columns of today's stacks: attention kernel, master weights, virtual pipeline stages,
// context / expert parallelism and the mixture of experts (absent: what older files meant).
void read_stack_columns(const RowReader& r, IterationRun* run) {
  if (r.has("attention")) {
    run->attention = r.text("attention");
    if (run->attention != "unfused" && run->attention != "flash") {
      r.fail("attention", "'" + run->attention + "' is not unfused or flash");
    }
  }
  run->master_weights = r.integer_or("master_weights", 1, 0, 1) == 1;
  run->config.virtual_stages = int(r.integer_or("virtual_stages", 1, 1, 1 << 12));
  run->config.scatter_gather = r.integer_or("scatter_gather", 1, 0, 1) == 1;
  // Megatron-core's default exchange, the p2p ring (MegatronConfig::cp_comm's default).
  run->config.cp = int(r.integer_or("cp", 1, 1, 1 << 14));
  run->ep = int(r.integer_or("ep", 1, 1, 1 << 14));
  run->etp = int(r.integer_or("etp", 0, 1, 1 << 14));
  run->num_experts = int(r.integer_or("num_experts", 0, 0, 1 << 16));
  run->moe_topk = int(r.integer_or("moe_topk", 0, 0, 1 << 16));
  run->moe_ffn = r.integer_or("moe_ffn", 0, 0, 1 << 22);
  run->shared_experts = int(r.integer_or("shared_experts", 0, 0, 1 << 16));
  if (run->num_experts > 0 && (run->moe_topk < 1 || run->moe_topk > run->num_experts)) {
    r.fail("moe_topk", std::to_string(run->moe_topk) + " is not in [1, num_experts " +
                           std::to_string(run->num_experts) + "]");
  }
  run->cuda_graph = r.has("cuda_graph") ? r.text("cuda_graph") : "none";
  if (run->cuda_graph != "none" && run->cuda_graph != "full_iteration") {
    r.fail("cuda_graph", quote_short(run->cuda_graph) + " is not none or full_iteration");
  }
  if (r.has("moe_dispatcher") &&
      !parse_expert_dispatcher(r.text("moe_dispatcher"), &run->config.dispatcher)) {
    r.fail("moe_dispatcher",
           quote_short(r.text("moe_dispatcher")) + " is not alltoall, deepep or hybridep");
  }
  run->config.moe_a2a_overlap = r.integer_or("moe_a2a_overlap", 0, 0, 1) == 1;
}

// The expert all-to-all overlap as Megatron-core accepts it (ExpertParallelConfig::overlap).
void check_a2a_overlap(const RowReader& r, const IterationRun& run) {
  const MegatronConfig& m = run.config;
  if (!m.moe_a2a_overlap) return;
  if (run.num_experts == 0 || run.ep < 2) r.fail("moe_a2a_overlap", "1 needs experts and ep > 1");
  if (m.pp > 1 && m.virtual_stages < 2) {
    r.fail("moe_a2a_overlap", "1 needs virtual_stages > 1 when pp > 1");
  }
  if (m.recompute == Recompute::kFull) {
    r.fail("moe_a2a_overlap", "1 cannot run with full recomputation (the recompute column)");
  }
}

// The attention and layer-stack shape beyond hidden / heads: head width, sliding windows,
// multi-head latent attention, dense leading layers and multi-token prediction.
void read_shape_columns(const RowReader& r, IterationRun* run) {
  run->head_dim = r.integer_or("head_dim", 0, 0, 1 << 16);
  run->sliding_window = r.integer_or("sliding_window", 0, 0, 1 << 24);
  run->full_attention_every = int(r.integer_or("full_attention_every", 0, 0, 1 << 12));
  if (run->sliding_window > 0 && run->attention != "flash") {
    r.fail("sliding_window", "needs attention flash");
  }
  run->q_lora_rank = r.integer_or("q_lora_rank", 0, 0, 1 << 20);
  run->kv_lora_rank = r.integer_or("kv_lora_rank", 0, 0, 1 << 20);
  run->qk_rope_head_dim = r.integer_or("qk_rope_head_dim", 0, 0, 1 << 16);
  run->v_head_dim = r.integer_or("v_head_dim", 0, 0, 1 << 16);
  if (run->kv_lora_rank > 0) {
    if (run->attention != "flash") r.fail("kv_lora_rank", "MLA needs attention flash");
    if (run->head_dim + run->qk_rope_head_dim < 1 || run->v_head_dim < 1) {
      r.fail("v_head_dim", "MLA needs head_dim + qk_rope_head_dim > 0 and v_head_dim > 0");
    }
  }
  run->dense_layers = int(r.integer_or("dense_layers", 0, 0, 1 << 12));
  if (run->dense_layers >= run->layers) {
    r.fail("dense_layers", std::to_string(run->dense_layers) + " is not below layers " +
                               std::to_string(run->layers));
  }
  run->mtp_layers = int(r.integer_or("mtp_layers", 0, 0, 64));
  run->linear_bias = r.integer_or("linear_bias", 0, 0, 1) == 1;
  run->glu_clamp = r.has("glu_clamp") ? r.number("glu_clamp") : 0;
  if (run->glu_clamp < 0) r.fail("glu_clamp", r.text("glu_clamp") + " is negative");
  if ((run->linear_bias || run->glu_clamp > 0) && run->num_experts == 0) {
    r.fail(run->linear_bias ? "linear_bias" : "glu_clamp", "is for the experts of an MoE model");
  }
}

// The configuration must be one Megatron can run.
void check_megatron_config(const RowReader& r, const IterationRun& run) {
  const MegatronConfig& m = run.config;
  if (run.heads % m.tp != 0) {
    r.fail("tp",
           "tp " + std::to_string(m.tp) + " does not divide heads " + std::to_string(run.heads));
  }
  if (run.kv_heads > 0 && (run.heads % run.kv_heads != 0 || run.kv_heads % m.tp != 0)) {
    r.fail("kv_heads", std::to_string(run.kv_heads) + " kv heads must divide heads " +
                           std::to_string(run.heads) + " and be a multiple of tp " +
                           std::to_string(m.tp));
  }
  if (run.head_dim == 0 && run.kv_lora_rank == 0 && run.hidden % run.heads != 0) {
    r.fail("heads",
           std::to_string(run.heads) + " heads do not divide hidden " + std::to_string(run.hidden));
  }
  // Megatron-core folds expert parallelism into tp x cp x dp (its dp is gpus / (tp pp cp)).
  const int64_t ranks = int64_t(m.tp) * m.dp * m.pp * m.cp;
  if (ranks != run.gpus) {
    r.fail("gpus", std::string(m.cp > 1 ? "dp x tp x pp x cp" : "dp x tp x pp") + " = " +
                       std::to_string(ranks) + ", not gpus " + std::to_string(run.gpus));
  }
  if ((int64_t(m.tp) * m.dp * m.cp) % run.ep != 0) {
    r.fail("ep", "ep " + std::to_string(run.ep) + " does not divide tp x cp x dp");
  }
  if (m.global_batch % (int64_t(m.micro_batch) * m.dp) != 0) {
    r.fail("global_batch", "global_batch " + std::to_string(m.global_batch) +
                               " is not a whole number of micro-batches of micro_batch x dp = " +
                               std::to_string(int64_t(m.micro_batch) * m.dp));
  }
  if (m.pp > run.layers) {
    r.fail("pp", "pp " + std::to_string(m.pp) + " exceeds layers " + std::to_string(run.layers));
  }
}

// One data row (the columns read in a fixed order: the first bad one is reported).
IterationRun read_run(const RowReader& r, const std::string& file, int n) {
  IterationRun run;
  run.source = file;
  run.line = n;
  if (r.has("model")) {
    run.model = r.text("model");
    if (run.model != "gpt" && run.model != "llama")
      r.fail("model", "'" + run.model + "' is not gpt or llama");
  }
  run.gpus = int(r.integer("gpus", 1, 1 << 20));
  run.hidden = r.integer("hidden", 1, 1 << 20);
  run.heads = r.integer("heads", 1, 1 << 14);
  run.layers = int(r.integer("layers", 1, 1 << 12));
  run.seq_len = r.integer("seq_len", 1, 1 << 24);
  run.vocab = r.integer_or("vocab", 50257, 1, int64_t(1) << 24);
  run.ffn = r.integer_or("ffn", 0, 0, 1 << 22);
  run.kv_heads = r.integer_or("kv_heads", 0, 0, run.heads);
  MegatronConfig& m = run.config;
  m.tp = int(r.integer("tp", 1, 1 << 14));
  m.dp = int(r.integer("dp", 1, 1 << 20));
  m.pp = int(r.integer("pp", 1, 1 << 12));
  m.micro_batch = int(r.integer("micro_batch", 1, 1 << 20));
  m.global_batch = int(r.integer("global_batch", 1, 1 << 26));
  m.zero_stage = int(r.integer_or("zero_stage", 0, 0, 3));
  // Megatron-FSDP / FSDP2: zero_stage 3 with the per-block prefetched schedule.
  m.fsdp.enabled = r.integer_or("fsdp", 0, 0, 1) == 1;
  if (m.fsdp.enabled && m.zero_stage != 3) r.fail("fsdp", "1 needs zero_stage 3");
  m.overlap_grad_reduce = r.integer_or("overlap_grad_reduce", 0, 0, 1) == 1;
  m.sequence_parallel = r.integer_or("sequence_parallel", 0, 0, 1) == 1;
  m.recompute = Recompute::kFull;
  run.recompute_given = r.has("recompute");
  if (run.recompute_given && !parse_recompute(r.text("recompute"), &m.recompute)) {
    r.fail("recompute", "'" + r.text("recompute") + "' is not none, selective or full");
  }
  read_precision(r, &run);
  read_stack_columns(r, &run);
  read_shape_columns(r, &run);
  // Megatron uses dynamic loss scaling with fp16 only.
  m.loss_scaling = run.dtype == DType::kF16;
  const double ms = r.number("iteration_ms");
  if (!(ms > 0)) r.fail("iteration_ms", "must be > 0");
  run.measured = ms * 1e-3;
  check_megatron_config(r, run);
  check_a2a_overlap(r, run);
  return run;
}

}  // namespace

std::vector<IterationRun> parse_iteration_runs(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  std::map<std::string, size_t> cols;
  std::vector<IterationRun> runs;
  while (std::getline(in, line)) {
    ++n;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::vector<std::string> fields = split_fields(line);
    if (cols.empty()) {
      cols = read_header(fields, file, n);
      continue;
    }
    if (fields.size() != cols.size()) {
      throw FormatError(file + ":" + std::to_string(n) + ": " + std::to_string(fields.size()) +
                        " fields, the header has " + std::to_string(cols.size()));
    }
    runs.push_back(read_run(RowReader(file, n, cols, fields), file, n));
  }
  if (cols.empty()) throw FormatError(file + ": no header row");
  return runs;
}

std::vector<IterationRun> load_iteration_runs(const std::string& path) {
  return parse_iteration_runs(read_text_file(path, "iteration runs file"), path);
}

void check_modelled(const IterationRun& run) {
  auto refuse = [&](const std::string& column, const std::string& value, const std::string& why) {
    throw ValidationError(run.where() + ": column '" + column + "': " + value +
                          " is not modelled yet (" + why + ")");
  };
  if (run.num_experts > 0 && run.model != "llama") {
    refuse("num_experts", std::to_string(run.num_experts), "MoE layers need model llama");
  }
  if (run.model == "llama") return;
  for (const auto& [column, value] : {std::pair<const char*, int64_t>{"head_dim", run.head_dim},
                                      {"kv_lora_rank", run.kv_lora_rank},
                                      {"dense_layers", run.dense_layers},
                                      {"mtp_layers", run.mtp_layers}}) {
    if (value > 0) refuse(column, std::to_string(value), "the gpt generator has no such option");
  }
}

namespace {

// The run's Megatron configuration as a plan, with its expert parallelism: ep ranks, etp
// (Megatron-core's default: the tensor-parallel size) for MoE models.
Plan run_plan(const Graph& g, const IterationRun& run) {
  Plan plan = megatron_plan(g, run.config);
  if (run.num_experts > 0) {
    plan.expert_parallel.degree = run.ep;
    plan.expert_parallel.tensor_parallel = run.etp > 0 ? run.etp : run.config.tp;
    plan.expert_parallel.dispatcher = run.config.dispatcher;
    plan.expert_parallel.overlap = run.config.moe_a2a_overlap;
  }
  return plan;
}

// Every column the training-step graph depends on (not the plan's), as one cache key.
std::string graph_key(const IterationRun& run) {
  std::ostringstream k;
  k << run.model << ',' << run.hidden << ',' << run.heads << ',' << run.kv_heads << ',' << run.ffn
    << ',' << run.seq_len << ',' << run.vocab << ',' << run.layers << ',' << run.config.global_batch
    << ',' << run.config.tp << ',' << static_cast<int>(run.dtype) << ',' << run.master_weights
    << ',' << run.attention << ',' << run.num_experts << ',' << run.moe_topk << ',' << run.moe_ffn
    << ',' << run.shared_experts << ',' << run.head_dim << ',' << run.sliding_window << ','
    << run.full_attention_every << ',' << run.q_lora_rank << ',' << run.kv_lora_rank << ','
    << run.qk_rope_head_dim << ',' << run.v_head_dim << ',' << run.dense_layers << ','
    << run.mtp_layers << ',' << run.linear_bias << ',' << run.glu_clamp;
  return k.str();
}

// The sizes both generators share.
template <class Options>
void fill_shared(const IterationRun& run, Options* o) {
  o->layers = run.layers;
  o->hidden = run.hidden;
  o->heads = run.heads;
  o->ffn = run.ffn;
  o->seq_len = run.seq_len;
  o->batch = run.config.global_batch;
  o->vocab = run.vocab;
  o->tp = run.config.tp;
  o->dtype = run.dtype;
  // The column's value was checked when the row was read.
  parse_attention_impl(run.attention, &o->attention);
}

// The llama generator's options for `run`: attention shape (head width, windows, MLA), MoE
// layers after the dense leading ones (shared experts as wide as a routed one), and the
// multi-token-prediction blocks (each an MoE layer with its projection, norms and logits)
// at the end.
LlamaOptions llama_options(const IterationRun& run) {
  LlamaOptions o;
  fill_shared(run, &o);
  o.layers = run.layers + run.mtp_layers;
  o.mtp_layers = run.mtp_layers;
  o.kv_heads = run.kv_heads;
  o.sliding_window = run.sliding_window;
  if (run.sliding_window > 0 && run.full_attention_every > 0) {
    for (int i = 0; i < o.layers; ++i)
      o.window_layer.push_back(i % run.full_attention_every != run.full_attention_every - 1);
  }
  if (run.kv_lora_rank > 0) {
    o.mla.q_lora_rank = run.q_lora_rank;
    o.mla.kv_lora_rank = run.kv_lora_rank;
    o.mla.nope_head_dim = run.head_dim;
    o.mla.rope_head_dim = run.qk_rope_head_dim;
    o.mla.v_head_dim = run.v_head_dim;
  } else {
    o.head_dim = run.head_dim;
  }
  if (run.num_experts > 0) {
    o.moe.experts = run.num_experts;
    o.moe.top_k = run.moe_topk;
    o.moe.expert_ffn = run.moe_ffn > 0 ? run.moe_ffn : o.ffn;
    o.moe.shared_ffn = int64_t(run.shared_experts) * o.moe.expert_ffn;
    o.moe.expert_bias = run.linear_bias;
    o.moe.glu_clamp = run.glu_clamp;
    if (run.dense_layers > 0) {
      for (int i = 0; i < o.layers; ++i) o.moe.moe_layer.push_back(i >= run.dense_layers);
    }
  }
  return o;
}

}  // namespace

RunPredictor::RunPredictor(const Cluster& cluster) : cluster_(cluster) {}
RunPredictor::~RunPredictor() = default;

const Graph& RunPredictor::graph(const IterationRun& run) {
  check_modelled(run);
  std::unique_ptr<Graph>& g = graphs_[graph_key(run)];
  if (!g) {
    Graph forward;
    if (run.model == "llama") {
      forward = make_llama(llama_options(run));
    } else {
      GptOptions o;
      fill_shared(run, &o);
      forward = make_gpt(o);
    }
    TrainingOptions t;
    t.optimizer = Optimizer::kAdam;
    t.master_weights = run.master_weights;
    g = std::make_unique<Graph>(expand_training_step(forward, t));
  }
  return *g;
}

CostProfile without_host_issue(const CostProfile& profile) {
  CostProfile p = profile;
  for (OpCostProfile& op : p.ops) op.dispatch = 0;
  p.micro_batch_overhead = 0;
  p.moe_host_sync = false;
  p.p2p_host_sync = false;
  return p;
}

Plan RunPredictor::plan(const IterationRun& run) { return run_plan(graph(run), run); }

double RunPredictor::predict(const IterationRun& run, const CostProfile& profile) {
  if (run.gpus > cluster_.num_devices()) {
    throw ValidationError(run.where() + ": the run uses " + std::to_string(run.gpus) +
                          " GPUs, cluster '" + cluster_.name + "' has " +
                          std::to_string(cluster_.num_devices()));
  }
  const Graph* g_built = nullptr;
  try {
    g_built = &graph(run);
  } catch (const Error& e) {  // sizes the generator refuses (bytes beyond the graph's bound)
    throw ValidationError(run.where() + ": " + e.what());
  }
  const Graph& g = *g_built;
  // A step captured in one CUDA graph replays without the host issuing its kernels.
  const CostModel cost(cluster_,
                       run.cuda_graph == "full_iteration" ? without_host_issue(profile) : profile);
  Simulator sim(g, cluster_, cost);
  SimOptions opt;
  opt.critical_path = false;
  const Plan plan = run_plan(g, run);
  try {
    plan.validate(g, cluster_);
    return sim.run(plan, opt).step_time;
  } catch (const ValidationError& e) {
    throw ValidationError(run.where() + ": " + e.what());
  }
}

double estimated_simulated_ops(const IterationRun& run) {
  const MegatronConfig& m = run.config;
  const double micro_batches = double(m.global_batch) / (double(m.micro_batch) * double(m.dp));
  return double(run.layers) * kOpsPerLayerStep * micro_batches * double(m.tp);
}

double check_runs_before_simulating(const std::vector<IterationRun>& runs, const Cluster& cluster) {
  double largest = 0;
  for (const IterationRun& run : runs) {
    if (run.gpus > cluster.num_devices()) {
      throw ValidationError(run.where() + ": the run uses " + std::to_string(run.gpus) +
                            " GPUs, cluster '" + cluster.name + "' has " +
                            std::to_string(cluster.num_devices()));
    }
    const double ops = estimated_simulated_ops(run);
    if (ops > kMaxSimulatedOpsPerRun) {
      std::ostringstream os;
      os << run.where() << ": about " << ops << " simulated ops per prediction (layers x "
         << kOpsPerLayerStep << " x micro-batches x tp), above the bound " << kMaxSimulatedOpsPerRun
         << " of calibrate fit / check (docs/formats/iteration_runs.md)";
      throw ValidationError(os.str());
    }
    largest = std::max(largest, ops);
  }
  return largest;
}

}  // namespace placer
