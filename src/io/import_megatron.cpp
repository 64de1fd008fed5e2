// Megatron-LM arguments -> FrameworkConfig (the reverse of src/io/export_megatron.cpp).
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "src/io/json_read.h"
#include "src/io/plan_import.h"
#include "src/util/checked_math.h"
#include "src/util/error.h"

namespace placer {

namespace {

[[noreturn]] void fail(const std::string& arg, const std::string& message) {
  throw ValidationError(format_context("", arg, message));
}

/// Arguments that take a value and that placer reads.
const char* const kValued[] = {
    "--tensor-model-parallel-size",
    "--pipeline-model-parallel-size",
    "--num-layers",
    "--micro-batch-size",
    "--global-batch-size",
    "--num-layers-per-virtual-pipeline-stage",
    "--num-virtual-stages-per-pipeline-rank",
    "--virtual-pipeline-model-parallel-size",
    "--decoder-first-pipeline-num-layers",
    "--decoder-last-pipeline-num-layers",
    "--recompute-granularity",
    "--recompute-method",
    "--recompute-num-layers",
    "--clip-grad",
    "--context-parallel-size",
    "--expert-model-parallel-size",
    "--pipeline-model-parallel-layout",
    "--attention-backend",
    "--fp8-format",
    "--cp-comm-type",
    "--num-experts",
    "--moe-router-topk",
    "--expert-tensor-parallel-size",
    "--moe-token-dispatcher-type",
    "--moe-flex-dispatcher-backend",
};
/// Flags placer reads.
const char* const kFlags[] = {"--sequence-parallel",
                              "--use-distributed-optimizer",
                              "--overlap-grad-reduce",
                              "--fp16",
                              "--bf16",
                              "--recompute-activations",
                              "--use-torch-fsdp2",
                              "--use-custom-fsdp",
                              "--no-scatter-gather-tensors-in-pipeline",
                              "--use-flash-attn",
                              "--overlap-moe-expert-parallel-comm"};

template <size_t N>
bool listed(const char* const (&names)[N], const std::string& s) {
  for (const char* n : names) {
    if (s == n) return true;
  }
  return false;
}

/// Tokens of the argument string: comments dropped, a shell's line-continuing "\" dropped.
std::vector<std::string> tokens(const std::string& args) {
  std::vector<std::string> out;
  std::istringstream lines(args);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string w;
    while (words >> w) {
      if (w != "\\") out.push_back(w);
    }
  }
  return out;
}

class Args {
 public:
  explicit Args(const std::string& text) {
    const std::vector<std::string> t = tokens(text);
    for (size_t i = 0; i < t.size(); ++i) {
      std::string name = t[i], value;
      if (name.rfind("--", 0) != 0) fail(name, "expected an argument starting with --");
      const size_t eq = name.find('=');
      const bool inline_value = eq != std::string::npos;
      if (inline_value) value = name.substr(eq + 1), name.resize(eq);
      if (listed(kFlags, name)) {
        if (inline_value) fail(name, "is a flag and takes no value");
        values_[name] = "";
      } else if (listed(kValued, name)) {
        if (!inline_value) {
          if (i + 1 >= t.size() || t[i + 1].rfind("--", 0) == 0) fail(name, "needs a value");
          value = t[++i];
        }
        values_[name] = value;
      } else {
        // Not modelled (learning rate, data paths, model width...): skipped with its value.
        ignored_.push_back(name);
        if (!inline_value && i + 1 < t.size() && t[i + 1].rfind("--", 0) != 0) ++i;
      }
    }
  }

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string text(const std::string& name, const std::string& fallback) const {
    return has(name) ? values_.at(name) : fallback;
  }
  int integer(const std::string& name, int fallback) const {
    if (!has(name)) return fallback;
    const std::string& v = values_.at(name);
    char* end = nullptr;
    const long x = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || x < 0 || x > 1000000000) fail(name, quote_short(v) + " is not a count");
    return static_cast<int>(x);
  }
  double number(const std::string& name, double fallback) const {
    if (!has(name)) return fallback;
    const std::string& v = values_.at(name);
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0') fail(name, quote_short(v) + " is not a number");
    return x;
  }
  const std::vector<std::string>& ignored() const { return ignored_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> ignored_;
};

void reject_unmodelled(const Args& a) {
  for (const char* name : {"--use-torch-fsdp2", "--use-custom-fsdp"}) {
    if (a.has(name)) fail(name, "FSDP is not Megatron's distributed optimizer; placer reads ZeRO-1 only");
  }
  if (a.has("--pipeline-model-parallel-layout")) {
    fail("--pipeline-model-parallel-layout", "not read by placer; use --decoder-first-pipeline-num-layers / "
                                             "--decoder-last-pipeline-num-layers");
  }
}

// --use-flash-attn (older Megatron-LM) or --attention-backend flash|fused|unfused|local|auto.
std::string attention_of(const Args& a) {
  if (a.has("--use-flash-attn")) return "flash";
  if (!a.has("--attention-backend")) return "";
  const std::string b = a.text("--attention-backend", "");
  if (b == "flash" || b == "fused" || b == "auto") return "flash";
  if (b == "unfused" || b == "local") return "unfused";
  fail("--attention-backend", "'" + b + "' (use flash, fused, unfused, local or auto)");
}

// --moe-token-dispatcher-type (alltoall by default; allgather is not modelled) and, for flex,
// --moe-flex-dispatcher-backend (deepep or hybridep; Megatron-core's default is deepep).
ExpertDispatcher read_token_dispatcher(const Args& a) {
  const std::string type = a.text("--moe-token-dispatcher-type", "alltoall");
  if (type != "alltoall" && type != "flex") {
    fail("--moe-token-dispatcher-type", quote_short(type) + " (use alltoall or flex)");
  }
  if (type == "alltoall") {
    if (a.has("--moe-flex-dispatcher-backend")) {
      fail("--moe-flex-dispatcher-backend", "needs --moe-token-dispatcher-type flex");
    }
    return ExpertDispatcher::kAllToAll;
  }
  const std::string backend = a.text("--moe-flex-dispatcher-backend", "deepep");
  ExpertDispatcher d = ExpertDispatcher::kAllToAll;
  if (!parse_expert_dispatcher(backend, &d) || d == ExpertDispatcher::kAllToAll) {
    fail("--moe-flex-dispatcher-backend", quote_short(backend) + " (use deepep or hybridep)");
  }
  return d;
}

// --context-parallel-size, --cp-comm-type and the mixture-of-experts arguments; Megatron-LM's
// expert tensor-parallel size defaults to the tensor-parallel size.
void read_context_and_expert_parallel(const Args& a, FrameworkConfig* f) {
  MegatronConfig& m = f->config;
  m.cp = a.integer("--context-parallel-size", 1);
  if (m.cp < 1) fail("--context-parallel-size", "must be >= 1");
  const std::string comm = a.text("--cp-comm-type", "p2p");
  if (!parse_context_parallel_comm(comm, &m.cp_comm)) {
    fail("--cp-comm-type",
         quote_short(comm) + " (use p2p, a2a or allgather; a2a+p2p is not modelled)");
  }
  f->experts = a.integer("--num-experts", 0);
  f->top_k = a.integer("--moe-router-topk", f->experts > 0 ? 2 : 0);  // Megatron-LM's default
  m.ep = a.integer("--expert-model-parallel-size", 1);
  m.etp = a.integer("--expert-tensor-parallel-size", f->experts > 0 ? m.tp : 1);
  if (m.ep < 1 || m.etp < 1)
    fail("--expert-model-parallel-size", "and its tensor-parallel size must be >= 1");
  if (f->experts == 0 && (m.ep > 1 || a.has("--expert-tensor-parallel-size"))) {
    fail("--expert-model-parallel-size", "needs --num-experts (a mixture-of-experts model)");
  }
  m.dispatcher = read_token_dispatcher(a);
  m.moe_a2a_overlap = a.has("--overlap-moe-expert-parallel-comm");
  if (m.moe_a2a_overlap && m.ep < 2) {
    fail("--overlap-moe-expert-parallel-comm", "needs --expert-model-parallel-size > 1");
  }
}

}  // namespace

FrameworkConfig parse_megatron_arguments(const std::string& text, int world_size) {
  const Args a(text);
  reject_unmodelled(a);
  FrameworkConfig f;
  f.ignored = a.ignored();
  f.batch_field = "--global-batch-size";
  f.layers_field = "--num-layers";
  f.format = ExportFormat::kMegatron;
  f.stages_field = "--pipeline-model-parallel-size";
  MegatronConfig& m = f.config;
  m.tp = a.integer("--tensor-model-parallel-size", 1);
  m.pp = a.integer("--pipeline-model-parallel-size", 1);
  if (m.tp < 1) fail("--tensor-model-parallel-size", "must be >= 1");
  if (m.pp < 1) fail("--pipeline-model-parallel-size", "must be >= 1");
  read_context_and_expert_parallel(a, &f);
  const int model_parallel = checked_mul(
      checked_mul(m.tp, m.pp, "--tensor-model-parallel-size x --pipeline-model-parallel-size"),
      m.cp, "tp x pp x --context-parallel-size");
  if (world_size < 1 || world_size % model_parallel != 0) {
    fail("--tensor-model-parallel-size",
         "tp " + std::to_string(m.tp) + " x pp " + std::to_string(m.pp) +
             (m.cp > 1 ? " x cp " + std::to_string(m.cp) : std::string()) +
             " does not divide the world size " + std::to_string(world_size));
  }
  m.dp = world_size / model_parallel;
  f.layers = a.integer("--num-layers", 0);
  if (!a.has("--micro-batch-size")) fail("--micro-batch-size", "missing (Megatron-LM requires it)");
  m.micro_batch = a.integer("--micro-batch-size", 1);
  m.global_batch =
      a.integer("--global-batch-size",
                checked_mul(m.micro_batch, m.dp, "--micro-batch-size x data-parallel size"));
  if (a.has("--num-layers-per-virtual-pipeline-stage")) {
    const int per = a.integer("--num-layers-per-virtual-pipeline-stage", 1);
    if (f.layers == 0) fail("--num-layers-per-virtual-pipeline-stage", "needs --num-layers");
    if (per < 1 ||
        f.layers % checked_mul(per, m.pp, "--num-layers-per-virtual-pipeline-stage x pp") != 0) {
      fail("--num-layers-per-virtual-pipeline-stage", std::to_string(per) + " x pp " + std::to_string(m.pp) +
                                                          " does not divide --num-layers " + std::to_string(f.layers));
    }
    m.virtual_stages = f.layers / (per * m.pp);
    f.stages_field = "--num-layers-per-virtual-pipeline-stage";
  }
  for (const char* name : {"--num-virtual-stages-per-pipeline-rank", "--virtual-pipeline-model-parallel-size"}) {
    if (!a.has(name)) continue;
    m.virtual_stages = a.integer(name, 1);
    f.stages_field = name;
  }
  m.first_stage_layers = a.integer("--decoder-first-pipeline-num-layers", 0);
  m.last_stage_layers = a.integer("--decoder-last-pipeline-num-layers", 0);
  m.sequence_parallel = a.has("--sequence-parallel");
  m.scatter_gather = !a.has("--no-scatter-gather-tensors-in-pipeline");
  f.attention = attention_of(a);
  const std::string granularity = a.text("--recompute-granularity", a.has("--recompute-activations") ? "selective" : "");
  if (granularity == "full") {
    if (a.text("--recompute-method", "") != "uniform" || a.integer("--recompute-num-layers", 1) != 1) {
      fail("--recompute-method", "placer models full recomputation of every layer: --recompute-method "
                                 "uniform --recompute-num-layers 1");
    }
    m.recompute = Recompute::kFull;
  } else if (granularity == "selective") {
    m.recompute = Recompute::kSelective;
  } else if (!granularity.empty()) {
    fail("--recompute-granularity", quote_short(granularity) + " (use full or selective)");
  }
  m.zero_stage = a.has("--use-distributed-optimizer") ? 1 : 0;
  m.overlap_grad_reduce = a.has("--overlap-grad-reduce");
  if (a.has("--fp16") && a.has("--bf16")) fail("--fp16", "and --bf16 both given");
  f.dtype = a.has("--fp16") ? DType::kF16 : a.has("--bf16") ? DType::kBF16 : DType::kF32;
  m.loss_scaling = f.dtype == DType::kF16;  // Megatron-LM scales the loss in fp16 only
  m.grad_clipping = a.number("--clip-grad", 1.0) > 0;  // Megatron-LM's default is 1.0
  // Transformer Engine's formats (E4M3 throughout, or E4M3 forward / E5M2 backward) run the
  // same GEMMs at the f8 peak; placer models both as precision.fp8.
  const std::string fp8 = a.text("--fp8-format", "");
  if (!fp8.empty() && fp8 != "hybrid" && fp8 != "e4m3") {
    fail("--fp8-format", quote_short(fp8) + " (use hybrid or e4m3)");
  }
  m.fp8 = !fp8.empty();
  return f;
}

}  // namespace placer
