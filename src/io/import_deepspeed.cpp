// DeepSpeed config (JSON) -> FrameworkConfig (the reverse of src/io/export_deepspeed.cpp).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/io/json_read.h"
#include "src/io/plan_import.h"
#include "src/util/checked_math.h"
#include "src/util/error.h"

namespace placer {

namespace {

using Json = nlohmann::json;

constexpr int64_t kMaxCount = 1000000000;

[[noreturn]] void fail(const std::string& key, const std::string& message) {
  throw ValidationError(format_context("", key, message));
}

/// Errors name the key path; the caller prefixes the file.
const JsonReader kRead("");

/// The object at `key` of `j` (an empty object when absent).
const Json& section(const Json& j, const char* key) {
  static const Json kEmpty = Json::object();
  const Json* s = kRead.find(j, key, "");
  return s ? kRead.object(*s, key) : kEmpty;
}

/// A non-negative integer at `key` of the object `obj` (`fallback` when absent).
int count_at(const Json& obj, const char* key, const std::string& field, int fallback) {
  const Json* v = kRead.find(obj, key, field);
  return v ? static_cast<int>(kRead.integer(*v, field, 0, kMaxCount)) : fallback;
}

/// A section such as "fp16": {"enabled": true}; present without "enabled" means enabled.
bool enabled(const Json& j, const char* name) {
  if (!j.contains(name)) return false;
  const Json* e = kRead.find(kRead.object(j.at(name), name), "enabled", name);
  return !e || kRead.boolean(*e, std::string(name) + ".enabled");
}

/// train_batch_size = micro x accumulation x dp; DeepSpeed accepts any two of the three.
void batch_sizes(const Json& j, MegatronConfig& m) {
  const int tb = count_at(j, "train_batch_size", "train_batch_size", 0);
  int mb = count_at(j, "train_micro_batch_size_per_gpu", "train_micro_batch_size_per_gpu", 0);
  int gas = count_at(j, "gradient_accumulation_steps", "gradient_accumulation_steps", 0);
  if (mb == 0 && gas == 0) gas = 1;
  if (mb == 0) {
    const int per_micro_batch = checked_mul(gas, m.dp, "gradient_accumulation_steps x dp");
    if (tb == 0 || tb % per_micro_batch != 0) {
      fail("train_micro_batch_size_per_gpu", "missing, and train_batch_size / (gradient_accumulation_steps x dp " +
                                                 std::to_string(m.dp) + ") is not a whole number");
    }
    mb = tb / per_micro_batch;
  }
  const int per_step = checked_mul(mb, m.dp, "train_micro_batch_size_per_gpu x dp");
  if (gas == 0) gas = tb > 0 && tb % per_step == 0 ? tb / per_step : 1;
  const int global = checked_mul(
      per_step, gas, "train_micro_batch_size_per_gpu x dp x gradient_accumulation_steps");
  if (tb > 0 && tb != global) {
    fail("train_batch_size", std::to_string(tb) + " != micro-batch " + std::to_string(mb) + " x accumulation " +
                                 std::to_string(gas) + " x dp " + std::to_string(m.dp));
  }
  m.micro_batch = mb;
  m.global_batch = global;
}

/// pipeline.stages (a string such as "auto" is one stage) and the data parallelism it leaves.
void read_stages(const Json& pipe, int world_size, MegatronConfig& m) {
  const Json* stages = kRead.find(pipe, "stages", "pipeline");
  m.pp = stages && stages->is_string() ? 1 : count_at(pipe, "stages", "pipeline.stages", 1);
  if (m.pp < 1) fail("pipeline.stages", "must be >= 1");
  if (world_size < 1 || world_size % m.pp != 0) {
    fail("pipeline.stages", std::to_string(m.pp) + " does not divide the world size " + std::to_string(world_size));
  }
  m.dp = world_size / m.pp;
  const int interval = count_at(pipe, "activation_checkpoint_interval", "pipeline.activation_checkpoint_interval", 0);
  if (interval > 1) {
    fail("pipeline.activation_checkpoint_interval", std::to_string(interval) +
                                                        ": placer models checkpointing every layer (1) or none (0)");
  }
  m.recompute = interval == 1 ? Recompute::kFull : Recompute::kNone;
}

/// fp16 / bf16 sections and gradient clipping.
void read_precision(const Json& j, FrameworkConfig& f) {
  const bool fp16 = enabled(j, "fp16"), bf16 = enabled(j, "bf16") || enabled(j, "bfloat16");
  if (fp16 && bf16) fail("fp16", "and bf16 both enabled");
  f.dtype = fp16 ? DType::kF16 : bf16 ? DType::kBF16 : DType::kF32;
  f.config.loss_scaling = fp16;
  const Json* clip = kRead.find(j, "gradient_clipping", "");
  f.config.grad_clipping =
      clip && kRead.number(*clip, "gradient_clipping") > 0;  // DeepSpeed's default 0 = off
}

/// pipeline.parts: the layer boundaries 0 = b0 < b1 < ... < b_pp = layers.
void read_layers(const Json& pipe, FrameworkConfig& f) {
  const Json* parts = kRead.find(pipe, "parts", "pipeline");
  if (!parts) return;
  f.stages_field = "pipeline.parts";
  MegatronConfig& m = f.config;
  kRead.array(*parts, "pipeline.parts");
  if (parts->size() != size_t(m.pp) + 1) {
    fail("pipeline.parts", "expected " + std::to_string(m.pp + 1) +
                               " layer boundaries (0, ..., layers), got " +
                               std::to_string(parts->size()));
  }
  std::vector<int> bound, count;
  for (size_t i = 0; i < parts->size(); ++i) {
    const std::string path = "pipeline.parts[" + std::to_string(i) + "]";
    bound.push_back(static_cast<int>(kRead.integer((*parts)[i], path, 0, kMaxCount)));
    if ((i == 0 && bound[0] != 0) || (i > 0 && bound[i] <= bound[i - 1])) {
      fail(path, "expected increasing layer boundaries from 0, got " + std::to_string(bound[i]));
    }
    if (i > 0) count.push_back(bound[i] - bound[i - 1]);
  }
  f.layers = bound.back();
  if (!megatron_fit_stage_layers(&m, count, f.layers)) {
    fail("pipeline.parts",
         "uneven layers per stage: placer builds even splits, or even ones with a different "
         "first / last stage");
  }
}

}  // namespace

FrameworkConfig parse_deepspeed_config(const std::string& text, int world_size) {
  const Json j = parse_json_text(text, "");
  kRead.object(j, "");
  FrameworkConfig f;
  f.batch_field = "train_batch_size";
  f.layers_field = "pipeline.parts";
  f.format = ExportFormat::kDeepSpeed;
  f.stages_field = "pipeline.stages";
  MegatronConfig& m = f.config;
  const Json& pipe = section(j, "pipeline");
  read_stages(pipe, world_size, m);
  if (count_at(section(j, "tensor_parallel"), "autotp_size", "tensor_parallel.autotp_size", 1) >
      1) {
    fail("tensor_parallel.autotp_size",
         "placer reads DeepSpeed configs without tensor parallelism");
  }
  batch_sizes(j, m);
  const Json& zero = section(j, "zero_optimization");
  m.zero_stage = count_at(zero, "stage", "zero_optimization.stage", 0);
  if (const Json* overlap = kRead.find(zero, "overlap_comm", "zero_optimization")) {
    m.overlap_grad_reduce = kRead.boolean(*overlap, "zero_optimization.overlap_comm");
  }
  read_precision(j, f);
  read_layers(pipe, f);
  for (const auto& item : j.items()) {
    static const char* const kKnown[] = {"train_batch_size",
                                         "train_micro_batch_size_per_gpu",
                                         "gradient_accumulation_steps",
                                         "gradient_clipping",
                                         "zero_optimization",
                                         "fp16",
                                         "bf16",
                                         "bfloat16",
                                         "pipeline",
                                         "tensor_parallel"};
    bool read = false;
    for (const char* k : kKnown) read = read || item.key() == k;
    if (!read) f.ignored.push_back(item.key());
  }
  return f;
}

}  // namespace placer
