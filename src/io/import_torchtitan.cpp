// torchtitan job config (TOML) -> FrameworkConfig (the reverse of src/io/export_torchtitan.cpp).
// Keys are torchtitan's (torchtitan/config/job_config.py); the file is parsed with toml++.
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <vector>

#include "src/io/plan_import.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer {

namespace {

[[noreturn]] void fail(const std::string& key, const std::string& message) {
  throw ValidationError(format_context("", key, message));
}
[[noreturn]] void bad(const std::string& key, const std::string& message) {
  throw FormatError(format_context("", key, message));
}

/// The keys of a section placer reads, and those it knows but does not model (listed as
/// ignored). Any other key of these sections is an error naming it.
struct SectionKeys {
  const char* name;
  std::vector<const char*> read, unmodelled;
};

const SectionKeys kSections[] = {
    {"parallelism",
     {"data_parallel_replicate_degree", "data_parallel_shard_degree", "fsdp_reshard_after_forward",
      "tensor_parallel_degree", "pipeline_parallel_degree", "pipeline_parallel_schedule",
      "pipeline_parallel_microbatch_size", "module_fqns_per_model_part", "context_parallel_degree",
      "expert_parallel_degree", "expert_tensor_parallel_degree", "pipeline_parallel_split_points",
      "pipeline_parallel_layers_per_stage", "pipeline_parallel_schedule_csv"},
     {"enable_async_tensor_parallel", "disable_loss_parallel", "enable_compiled_autograd",
      "context_parallel_rotate_method", "pipeline_parallel_first_stage_less_layers",
      "pipeline_parallel_last_stage_less_layers", "context_parallel_load_balancer"}},
    {"training",
     {"local_batch_size", "batch_size", "global_batch_size", "seq_len", "max_norm",
      "mixed_precision_param"},
     {"mixed_precision_reduce", "steps", "dataset", "dataset_path", "warmup_steps", "gc_freq",
      "seed", "deterministic", "gc_debug", "enable_cpu_offload", "debug_moe_force_load_balance"}},
    {"activation_checkpoint",
     {"mode", "selective_ac_option"},
     {"per_op_sac_force_recompute_mm_shapes_by_fqns", "early_stop", "memory_budget",
      "visualize_memory_budget_pareto", "preserve_rng_state", "determinism_check", "debug"}},
    {"compile", {"enable"}, {"components", "backend"}},
    {"float8",  // older torchtitan; newer ones name [quantize.linear.float8] (recorded)
     {"enable_float8_linear"},
     {"enable_fsdp_float8_all_gather", "precompute_float8_dynamic_scale_for_fsdp",
      "force_recompute_fp8_weight_in_bwd", "recipe_name", "filter_fqns", "emulate"}},
    {"model",
     {"converters"},
     {"name", "flavor", "hf_assets_path", "tokenizer_path", "print_after_conversion",
      "print_slices"}},
};

/// True for the characters a TOML key may start with: a bare-key character or a quote.
bool starts_a_key(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '"' ||
         c == '\'';
}

/// Refuses a line that opens a table header (`[` or `[[`) with no key after it, such as
/// `[\x14raining]`, `[[[a]]]` or `[[=`. toml++ 3.x (Debian 12's) enters its key parser on
/// such a header without checking the first character: an assertion failure in a debug
/// build, undefined behaviour (a violated assumption) in a release one (the array-of-tables
/// case is fixed upstream in tomlplusplus pull request 301). Until the packaged version
/// checks, the reader does. A line of a multi-line array value that starts with a nested
/// array whose first element is not a key-like token (`[ [1] ]`, `[],`) is refused too.
void refuse_headers_without_key(const std::string& text) {
  size_t line = 1;
  for (size_t start = 0; start < text.size(); ++line) {
    const size_t end = std::min(text.find('\n', start), text.size());
    size_t i = text.find_first_not_of(" \t", start);
    if (i < end && text[i] == '[') {
      i += text.compare(i, 2, "[[") == 0 ? 2 : 1;
      i = text.find_first_not_of(" \t", i);
      if (i >= end || !starts_a_key(text[i])) {
        bad("line " + std::to_string(line) + ", column " + std::to_string(i - start + 1),
            "malformed TOML: a table header needs a key after '['");
      }
    }
    start = end + 1;
  }
}

/// A torchtitan job file: typed look-ups by "section.key" with named errors.
class Job {
 public:
  explicit Job(const std::string& text) {
    refuse_headers_without_key(text);
    try {
      root_ = toml::parse(text);
    } catch (const toml::parse_error& e) {
      bad("line " + std::to_string(e.source().begin.line), std::string(e.description()));
    }
    check_keys();
  }

  const toml::node* node(const char* section, const char* key) const {
    const toml::table* s = root_[section].as_table();
    return s ? s->get(key) : nullptr;
  }
  int64_t integer(const char* section, const char* key, int64_t fallback) const {
    const toml::node* n = node(section, key);
    if (!n) return fallback;
    if (!n->is_integer()) bad(name(section, key), "not an integer");
    return n->as_integer()->get();
  }
  std::string text(const char* section, const char* key, const std::string& fallback) const {
    const toml::node* n = node(section, key);
    if (!n) return fallback;
    if (n->is_integer()) return std::to_string(n->as_integer()->get());  // selective_ac_option = 2
    if (!n->is_string()) bad(name(section, key), "not a string");
    return n->as_string()->get();
  }
  bool flag(const char* section, const char* key, bool fallback) const {
    const toml::node* n = node(section, key);
    if (!n) return fallback;
    if (!n->is_boolean()) bad(name(section, key), "not true or false");
    return n->as_boolean()->get();
  }
  double number(const char* section, const char* key, double fallback) const {
    const toml::node* n = node(section, key);
    if (!n) return fallback;
    if (n->is_integer()) return double(n->as_integer()->get());
    if (!n->is_floating_point()) bad(name(section, key), "not a number");
    return n->as_floating_point()->get();
  }
  /// The array `key` (absent: empty); nullptr entries are non-string elements.
  const toml::array* array(const char* section, const char* key) const {
    const toml::node* n = node(section, key);
    if (n && !n->is_array()) bad(name(section, key), "not an array");
    return n ? n->as_array() : nullptr;
  }
  const std::vector<std::string>& ignored() const { return ignored_; }

  static std::string name(const char* section, const char* key) {
    return std::string(section) + "." + key;
  }

 private:
  void check_keys() {
    for (const auto& [section, value] : root_) {
      const SectionKeys* known = nullptr;
      for (const SectionKeys& s : kSections) {
        if (section.str() == s.name) known = &s;
      }
      if (!known) {
        ignored_.push_back("[" + std::string(section.str()) + "]");
        continue;
      }
      if (!value.is_table()) bad(std::string(section.str()), "not a table");
      for (const auto& [key, v] : *value.as_table()) {
        const std::string k(key.str());
        auto is = [&](const std::vector<const char*>& list) {
          return std::any_of(list.begin(), list.end(), [&](const char* n) { return k == n; });
        };
        if (is(known->unmodelled)) {
          ignored_.push_back(name(known->name, k.c_str()));
        } else if (!is(known->read)) {
          bad(name(known->name, k.c_str()),
              "unknown key (torchtitan's job_config.py has no such key)");
        }
      }
    }
  }

  toml::table root_;
  std::vector<std::string> ignored_;
};

/// Refuses what the plan cannot express (yet): MX (block-scaled) linears, split points or a
/// schedule CSV instead of module lists.
void reject_unmodelled(const Job& j) {
  for (const char* key : {"pipeline_parallel_split_points", "pipeline_parallel_layers_per_stage",
                          "pipeline_parallel_schedule_csv"}) {
    if (j.node("parallelism", key))
      fail(Job::name("parallelism", key), "not read by placer; give module_fqns_per_model_part");
  }
}

/// FP8 linears: the float8 converter (torchao's per-tensor scaled float8 training), named
/// "quantize.linear.float8" by newer torchtitan, "float8" (or [float8]
/// enable_float8_linear) by older. MX formats scale per block: not modelled.
bool reads_fp8(const Job& j) {
  bool fp8 = j.flag("float8", "enable_float8_linear", false);
  if (const toml::array* conv = j.array("model", "converters")) {
    for (const toml::node& c : *conv) {
      const std::string s = c.is_string() ? c.as_string()->get() : "";
      if (s == "float8" || s == "quantize.linear.float8") {
        fp8 = true;
      } else if (s.find("float8") != std::string::npos || s.find("mx") != std::string::npos) {
        fail("model.converters",
             quote_short(s) +
                 " is not modelled (placer's FP8 is quantize.linear.float8, per tensor)");
      }
    }
  }
  return fp8;
}

/// Layers per pipeline part from module_fqns_per_model_part: the modules named
/// "<parent>.layers.<i>" or "layers.<i>" of each part.
std::vector<int> layers_per_part(const toml::array& parts) {
  std::vector<int> count;
  for (const toml::node& part : parts) {
    if (!part.is_array())
      bad("parallelism.module_fqns_per_model_part", "not an array of arrays of module names");
    int n = 0;
    for (const toml::node& m : *part.as_array()) {
      if (!m.is_string())
        bad("parallelism.module_fqns_per_model_part", "a module name is not a string");
      const std::string& s = m.as_string()->get();
      const size_t at = s.rfind("layers.");
      if (at != std::string::npos && (at == 0 || s[at - 1] == '.') && at + 7 < s.size() &&
          s.find_first_not_of("0123456789", at + 7) == std::string::npos) {
        ++n;
      }
    }
    count.push_back(n);
  }
  return count;
}

/// FSDP2 (zero_stage 3) runs the per-block schedule, one block prefetched each way; HSDP
/// shards inside groups of `shard` consecutive data-parallel ranks, replicated across (with
/// context parallelism each group also spans the cp ranks: shard x cp data-parallel copies).
void read_fsdp(int64_t replicate, int64_t shard, MegatronConfig* m) {
  if (replicate > 1 && shard > 1 && m->zero_stage != 3) {
    fail("parallelism.fsdp_reshard_after_forward",
         "HSDP (replicate " + std::to_string(replicate) + " x shard " + std::to_string(shard) +
             ") keeping the parameters after forward is not modelled (placer's HSDP reshards: "
             "set \"always\")");
  }
  if (m->zero_stage != 3) return;
  m->fsdp.enabled = true;
  if (replicate > 1) m->fsdp.shard_group = int(shard) * m->cp;
}

/// Context parallelism (ring attention: rotate method alltoall = placer's p2p ring,
/// allgather) and expert parallelism (expert tensor parallelism counts only with ep > 1).
void read_context_and_expert_parallel(const Job& j, MegatronConfig* m) {
  m->cp = int(j.integer("parallelism", "context_parallel_degree", 1));
  m->ep = int(j.integer("parallelism", "expert_parallel_degree", 1));
  m->etp = int(j.integer("parallelism", "expert_tensor_parallel_degree", 1));
  if (m->cp < 1 || m->ep < 1 || m->etp < 1) {
    fail("parallelism", "context and expert degrees must be >= 1");
  }
  if (m->ep == 1) m->etp = 1;
  const std::string rotate = j.text("parallelism", "context_parallel_rotate_method", "allgather");
  if (rotate == "allgather") {
    m->cp_comm = ContextParallelComm::kAllGather;
  } else if (rotate == "alltoall") {
    m->cp_comm = ContextParallelComm::kP2P;
  } else {
    fail("parallelism.context_parallel_rotate_method",
         "'" + rotate + "' (use allgather or alltoall)");
  }
  if (m->cp == 1) m->cp_comm = ContextParallelComm::kP2P;
}

/// [parallelism]: the mesh (dp = replicate x shard, shard -1 = the rest), FSDP's ZeRO stage,
/// the pipeline schedule, its model parts and virtual stages.
void read_parallelism(const Job& j, int world, FrameworkConfig* f) {
  MegatronConfig& m = f->config;
  m.tp = int(j.integer("parallelism", "tensor_parallel_degree", 1));
  m.pp = int(j.integer("parallelism", "pipeline_parallel_degree", 1));
  const int64_t replicate = j.integer("parallelism", "data_parallel_replicate_degree", 1);
  int64_t shard = j.integer("parallelism", "data_parallel_shard_degree", -1);
  if (m.tp < 1 || m.pp < 1 || replicate < 1 || (shard < 1 && shard != -1)) {
    fail("parallelism", "degrees must be >= 1 (data_parallel_shard_degree may be -1)");
  }
  read_context_and_expert_parallel(j, &m);
  const int64_t model = int64_t(m.tp) * m.pp * m.cp * replicate;
  if (shard == -1) shard = world % model == 0 ? world / model : 0;
  if (shard < 1 || model * shard != world) {
    fail("parallelism.data_parallel_shard_degree",
         "replicate x shard x cp x tp x pp does not equal the world size " + std::to_string(world));
  }
  m.dp = int(replicate * shard);
  m.sequence_parallel = m.tp > 1;  // torchtitan's TP always splits the norms along the sequence
  m.overlap_grad_reduce = true;    // DDP and FSDP overlap the reduction with backward
  const std::string reshard = j.text("parallelism", "fsdp_reshard_after_forward", "default");
  if (reshard != "default" && reshard != "always" && reshard != "never") {
    fail("parallelism.fsdp_reshard_after_forward",
         "'" + reshard + "' (use default, always or never)");
  }
  // FSDP shards gradients and optimizer state (ZeRO-2), and the parameters after forward
  // (ZeRO-3) unless told not to; "default" keeps them with a pipeline.
  if (shard > 1) m.zero_stage = reshard == "never" || (reshard == "default" && m.pp > 1) ? 2 : 3;
  read_fsdp(replicate, shard, &m);
  const std::string schedule = j.text("parallelism", "pipeline_parallel_schedule", "1F1B");
  if (schedule == "GPipe") {
    m.schedule = PipelineSchedule::kGPipe;
  } else if (schedule != "1F1B" && schedule != "Interleaved1F1B") {
    fail("parallelism.pipeline_parallel_schedule",
         "'" + schedule + "' is not modelled (use 1F1B, Interleaved1F1B or GPipe)");
  }
  m.micro_batch = int(j.integer("parallelism", "pipeline_parallel_microbatch_size", 1));
  const toml::array* parts = j.array("parallelism", "module_fqns_per_model_part");
  const std::vector<int> count = parts ? layers_per_part(*parts) : std::vector<int>{};
  if (schedule == "Interleaved1F1B") {
    if (count.empty() || int(count.size()) % m.pp != 0) {
      fail("parallelism.module_fqns_per_model_part",
           "Interleaved1F1B needs a multiple of pp model parts");
    }
    m.virtual_stages = int(count.size()) / m.pp;
  } else if (!count.empty() && int(count.size()) != m.pp) {
    fail("parallelism.module_fqns_per_model_part",
         std::to_string(count.size()) + " parts for pp " + std::to_string(m.pp));
  }
  if (!count.empty()) {
    for (int c : count) f->layers += c;
    if (!megatron_fit_stage_layers(&m, count, f->layers)) {
      fail("parallelism.module_fqns_per_model_part",
           "the layers per part are neither even nor even with a different first / last part");
    }
  }
}

/// [activation_checkpoint]: none, full, or selective: "op" saves the matmul outputs
/// (selective_op), an integer k checkpoints every k-th layer whole (torchtitan's default,
/// k = 2).
void read_checkpointing(const Job& j, MegatronConfig* m) {
  const std::string mode = j.text("activation_checkpoint", "mode", "selective");
  const std::string option = j.text("activation_checkpoint", "selective_ac_option", "2");
  if (mode == "none") {
    m->recompute = Recompute::kNone;
  } else if (mode == "full") {
    m->recompute = Recompute::kFull;
  } else if (mode == "selective" && option == "op") {
    m->recompute = Recompute::kSelectiveOp;
  } else if (mode == "selective") {
    const bool digits = !option.empty() && option.size() < 7 &&
                        option.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoi(option) < 1) {
      fail("activation_checkpoint.selective_ac_option",
           "'" + option + "' (use op or a layer interval k >= 1)");
    }
    m->recompute = Recompute::kFull;
    m->recompute_every = std::stoi(option);
  } else {
    fail("activation_checkpoint.mode",
         "'" + mode + "' is not modelled (use none, selective or full)");
  }
}

/// [training] batch sizes, clipping and the parameter dtype; [activation_checkpoint];
/// [compile] (recorded).
void read_training(const Job& j, FrameworkConfig* f) {
  MegatronConfig& m = f->config;
  const int64_t local =
      j.integer("training", "local_batch_size", j.integer("training", "batch_size", 8));
  const int64_t global = j.integer("training", "global_batch_size", -1);
  if (local < 1) fail("training.local_batch_size", "must be >= 1");
  if (m.pp > 1) {
    if (m.micro_batch < 1 || local % m.micro_batch != 0) {
      fail("parallelism.pipeline_parallel_microbatch_size",
           "must divide training.local_batch_size " + std::to_string(local));
    }
  } else {
    m.micro_batch = int(local);  // one forward-backward per local batch; the rest accumulates
  }
  m.global_batch = int(global > 0 ? global : local * m.dp);
  m.grad_clipping = j.number("training", "max_norm", 1.0) > 0;
  m.loss_scaling = false;
  const std::string param = j.text("training", "mixed_precision_param", "bfloat16");
  if (param == "bfloat16") {
    f->dtype = DType::kBF16;
  } else if (param == "float32") {
    f->dtype = DType::kF32;
  } else {
    fail("training.mixed_precision_param", "'" + param + "' (use bfloat16 or float32)");
  }
  read_checkpointing(j, &m);
  f->config.fp8 = reads_fp8(j);
  f->attention = "flash";  // torchtitan's SDPA runs a fused attention kernel
  if (j.flag("compile", "enable", false))
    f->notes.push_back("compile.enable: compiled (fused) kernels");
}

}  // namespace

FrameworkConfig parse_torchtitan_config(const std::string& toml_text, int world_size) {
  if (world_size < 1) fail("world size", "must be >= 1");
  const Job j(toml_text);
  reject_unmodelled(j);
  FrameworkConfig f;
  read_parallelism(j, world_size, &f);
  read_training(j, &f);
  f.ignored = j.ignored();
  f.batch_field = "training.global_batch_size";
  f.layers_field = "parallelism.module_fqns_per_model_part";
  return f;
}

}  // namespace placer
