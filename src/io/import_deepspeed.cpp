// DeepSpeed config (JSON) -> FrameworkConfig (the reverse of src/io/export_deepspeed.cpp).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/io/plan_import.h"
#include "src/util/error.h"

namespace placer {

namespace {

using Json = nlohmann::json;

[[noreturn]] void fail(const std::string& key, const std::string& message) {
  throw ValidationError(format_context("", key, message));
}

/// A non-negative integer at `key` of `obj` (`fallback` when absent).
int count_at(const Json& obj, const char* key, const std::string& field, int fallback) {
  if (!obj.is_object() || !obj.contains(key)) return fallback;
  const Json& v = obj.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 1000000000) {
    throw FormatError(format_context("", field, "expected a non-negative integer, got " + v.dump()));
  }
  return v.get<int>();
}

bool enabled(const Json& j, const char* section) {
  if (!j.contains(section)) return false;
  const Json& s = j.at(section);
  if (!s.is_object() || !s.contains("enabled")) return s.is_object();
  if (!s.at("enabled").is_boolean()) throw FormatError(std::string(section) + ".enabled: expected true or false");
  return s.at("enabled").get<bool>();
}

/// train_batch_size = micro x accumulation x dp; DeepSpeed accepts any two of the three.
void batch_sizes(const Json& j, MegatronConfig& m) {
  const int tb = count_at(j, "train_batch_size", "train_batch_size", 0);
  int mb = count_at(j, "train_micro_batch_size_per_gpu", "train_micro_batch_size_per_gpu", 0);
  int gas = count_at(j, "gradient_accumulation_steps", "gradient_accumulation_steps", 0);
  if (mb == 0 && gas == 0) gas = 1;
  if (mb == 0) {
    if (tb == 0 || tb % (gas * m.dp) != 0) {
      fail("train_micro_batch_size_per_gpu", "missing, and train_batch_size / (gradient_accumulation_steps x dp " +
                                                 std::to_string(m.dp) + ") is not a whole number");
    }
    mb = tb / (gas * m.dp);
  }
  if (gas == 0) gas = tb > 0 && tb % (mb * m.dp) == 0 ? tb / (mb * m.dp) : 1;
  if (tb > 0 && tb != mb * gas * m.dp) {
    fail("train_batch_size", std::to_string(tb) + " != micro-batch " + std::to_string(mb) + " x accumulation " +
                                 std::to_string(gas) + " x dp " + std::to_string(m.dp));
  }
  m.micro_batch = mb;
  m.global_batch = mb * gas * m.dp;
}

}  // namespace

FrameworkConfig parse_deepspeed_config(const std::string& text, int world_size) {
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw FormatError("not a JSON object");
  FrameworkConfig f;
  f.batch_field = "train_batch_size";
  f.layers_field = "pipeline.parts";
  MegatronConfig& m = f.config;
  const Json pipe = j.contains("pipeline") ? j.at("pipeline") : Json::object();
  m.pp = pipe.contains("stages") && pipe.at("stages").is_string() ? 1 : count_at(pipe, "stages", "pipeline.stages", 1);
  if (m.pp < 1) fail("pipeline.stages", "must be >= 1");
  if (world_size < 1 || world_size % m.pp != 0) {
    fail("pipeline.stages", std::to_string(m.pp) + " does not divide the world size " + std::to_string(world_size));
  }
  m.dp = world_size / m.pp;
  if (j.contains("tensor_parallel") && count_at(j.at("tensor_parallel"), "autotp_size", "tensor_parallel.autotp_size", 1) > 1) {
    fail("tensor_parallel.autotp_size", "placer reads DeepSpeed configs without tensor parallelism");
  }
  batch_sizes(j, m);
  const Json zero = j.contains("zero_optimization") ? j.at("zero_optimization") : Json::object();
  m.zero_stage = count_at(zero, "stage", "zero_optimization.stage", 0);
  if (zero.contains("overlap_comm")) {
    if (!zero.at("overlap_comm").is_boolean()) throw FormatError("zero_optimization.overlap_comm: expected true or false");
    m.overlap_grad_reduce = zero.at("overlap_comm").get<bool>();
  }
  const bool fp16 = enabled(j, "fp16"), bf16 = enabled(j, "bf16") || enabled(j, "bfloat16");
  if (fp16 && bf16) fail("fp16", "and bf16 both enabled");
  f.dtype = fp16 ? DType::kF16 : bf16 ? DType::kBF16 : DType::kF32;
  m.loss_scaling = fp16;
  if (j.contains("gradient_clipping") && !j.at("gradient_clipping").is_number()) {
    throw FormatError("gradient_clipping: expected a number");
  }
  m.grad_clipping = j.value("gradient_clipping", 0.0) > 0;  // DeepSpeed's default 0 = off
  const int interval = count_at(pipe, "activation_checkpoint_interval", "pipeline.activation_checkpoint_interval", 0);
  if (interval > 1) {
    fail("pipeline.activation_checkpoint_interval", std::to_string(interval) +
                                                        ": placer models checkpointing every layer (1) or none (0)");
  }
  m.recompute = interval == 1 ? Recompute::kFull : Recompute::kNone;
  if (pipe.contains("parts")) {
    const Json& parts = pipe.at("parts");
    std::vector<int> count;
    if (!parts.is_array() || parts.size() != size_t(m.pp) + 1) {
      fail("pipeline.parts", "expected " + std::to_string(m.pp + 1) + " layer boundaries (0, ..., layers)");
    }
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      if (!parts[i].is_number_integer() || !parts[i + 1].is_number_integer() ||
          parts[i + 1].get<int>() <= parts[i].get<int>() || (i == 0 && parts[0].get<int>() != 0)) {
        fail("pipeline.parts", "expected increasing layer boundaries from 0, got " + parts.dump());
      }
      count.push_back(parts[i + 1].get<int>() - parts[i].get<int>());
    }
    f.layers = parts.back().get<int>();
    if (!megatron_fit_stage_layers(&m, count, f.layers)) {
      fail("pipeline.parts", parts.dump() + ": placer builds even splits, or even ones with a different "
                                            "first / last stage");
    }
  }
  for (const auto& [key, value] : j.items()) {
    static const char* const kRead[] = {"train_batch_size", "train_micro_batch_size_per_gpu",
                                        "gradient_accumulation_steps", "gradient_clipping", "zero_optimization",
                                        "fp16", "bf16", "bfloat16", "pipeline", "tensor_parallel"};
    bool read = false;
    for (const char* k : kRead) read = read || key == k;
    if (!read) f.ignored.push_back(key);
    (void)value;
  }
  return f;
}

}  // namespace placer
