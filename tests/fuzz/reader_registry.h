#pragma once
// Every reader of user input, with the seed inputs the fuzz harness mutates
// (tests/fuzz/reader_fuzz_test.cpp). A reader is a function that takes the text (or bytes)
// of a file or argument and returns what it read or throws placer::Error; its entry points
// are the names declared in the headers and listed as readers next to them (src/readers.txt,
// simulator/, datasets/, env/, agents/); reader_registry_test.cpp fails when a header declares
// one that is not listed there, or a listed reader that is not registered here.

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "agents/training/expert_rl_train_config.h"
#include "agents/training/placeto_train_config.h"
#include "agents/training/train_config.h"
#include "datasets/corpus.h"
#include "datasets/hf_config.h"
#include "datasets/onnx_import.h"
#include "simulator/calibration/iteration_runs.h"
#include "simulator/calibration/measurements.h"
#include "simulator/calibration/profiler_trace.h"
#include "simulator/calibration/trace_fit.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "simulator/trace.h"
#include "src/io/cluster_yaml.h"
#include "src/io/expert_map_io.h"
#include "src/io/graph_json.h"
#include "src/io/plan_import.h"
#include "src/io/plan_io.h"
#include "src/io/routing_io.h"

namespace placer::fuzz {

struct Seed {
  std::string name;  ///< file name or a label for inline text
  std::string text;
};

struct RegisteredReader {
  std::string name;                       ///< "DeepSpeed config"
  std::vector<std::string> entry_points;  ///< functions it covers ("parse_deepspeed_config")
  std::vector<Seed> seeds;
  int cases;  ///< mutated inputs per run, split over the seeds (fixed: CI runs these cases)
  std::function<void(const std::string& text, const std::string& file)> read;
};

inline std::string source_path(const std::string& rel) {
  return std::string(PLACER_SOURCE_DIR) + "/" + rel;
}

/// A file's text; `max_lines` > 0 keeps the first lines only (small seeds mutate faster).
inline Seed file_seed(const std::string& rel, int max_lines = 0) {
  std::ifstream in(source_path(rel), std::ios::binary);
  std::ostringstream ss;
  if (max_lines <= 0) {
    ss << in.rdbuf();
  } else {
    std::string line;
    for (int i = 0; i < max_lines && std::getline(in, line); ++i) ss << line << "\n";
  }
  return {rel, ss.str()};
}

/// The graph, cluster and plan the plan and trace readers read against.
struct ReaderContext {
  Graph graph = load_graph_json(source_path("tests/data/mlp2.graph.json"));
  Cluster cluster = load_cluster_yaml(source_path("tests/data/two_gpus.cluster.yaml"));
  Plan plan = load_plan(source_path("tests/data/mlp2_two_gpus.plan.yaml"), graph, cluster);
};

inline const ReaderContext& reader_context() {
  static const ReaderContext c;
  return c;
}

/// A Chrome trace of the context's plan, as the simulator writes it (the op-trace seed).
inline Seed simulated_trace_seed() {
  const ReaderContext& c = reader_context();
  const CostModel cost(c.cluster, uniform_profile(1.0));
  Simulator sim(c.graph, c.cluster, cost);
  SimOptions o;
  o.record_events = true;
  return {"simulated trace", chrome_trace_json(sim.run(c.plan, o), c.graph, c.cluster)};
}

inline std::vector<RegisteredReader> file_format_readers() {
  const ReaderContext& c = reader_context();
  return {
      {"graph",
       {"parse_graph_json"},
       {file_seed("tests/data/mlp2.graph.json")},
       3000,
       [](const std::string& t, const std::string& f) { parse_graph_json(t, f); }},
      {"cluster",
       {"parse_cluster_yaml"},
       {file_seed("datasets/clusters/dgx1_p100.cluster.yaml"),
        file_seed("datasets/clusters/h100_ib_4node.cluster.yaml"),
        file_seed("datasets/clusters/automap_config_c.cluster.yaml")},
       3000,
       [](const std::string& t, const std::string& f) { parse_cluster_yaml(t, f); }},
      {"cost profile",
       {"parse_cost_profile"},
       {file_seed("datasets/clusters/dgx_a100.profile.yaml"),
        file_seed("datasets/clusters/h200.profile.yaml", 12)},
       2000,
       [](const std::string& t, const std::string& f) { parse_cost_profile(t, f); }},
      {"plan (YAML)",
       {"parse_plan_yaml"},
       {file_seed("tests/data/mlp2_pipeline.plan.yaml"),
        file_seed("tests/data/mlp2_two_gpus.plan.yaml")},
       3000,
       [&c](const std::string& t, const std::string& f) {
         std::vector<std::string> w;
         parse_plan_yaml(t, f, c.graph, c.cluster, &w);
       }},
      {"plan (JSON)",
       {"parse_plan_json"},
       {{"plan.json", plan_to_json(c.plan, c.graph, c.cluster)}},
       2000,
       [&c](const std::string& t, const std::string& f) {
         std::vector<std::string> w;
         parse_plan_json(t, f, c.graph, c.cluster, &w);
       }},
      {"corpus manifest",
       {"parse_corpus_yaml"},
       {file_seed("datasets/corpora/default.corpus.yaml", 20)},
       2000,
       [](const std::string& t, const std::string& f) { parse_corpus_yaml(t, f); }},
      {"routing statistics",
       {"parse_routing_json"},
       {file_seed("tests/data/routing/two_layer.routing.json")},
       2000,
       [](const std::string& t, const std::string& f) { parse_routing_json(t, f); }},
      {"expert map",
       {"parse_expert_map_json"},
       {file_seed("tests/data/routing/two_layer.expert_map.json")},
       2000,
       [](const std::string& t, const std::string& f) { parse_expert_map_json(t, f); }},
  };
}

inline std::vector<RegisteredReader> measurement_readers() {
  const ReaderContext& c = reader_context();
  return {
      {"iteration runs CSV",
       {"parse_iteration_runs"},
       {file_seed("datasets/measurements/megatron_gpt_a100_1node.csv", 12)},
       2000,
       [](const std::string& t, const std::string& f) { parse_iteration_runs(t, f); }},
      {"measurements CSV",
       {"parse_measurements_csv"},
       {file_seed("tests/data/calibration/measurements.csv")},
       2000,
       [](const std::string& t, const std::string& f) { parse_measurements_csv(t, f); }},
      {"nccl-tests log",
       {"parse_nccl_tests_log"},
       {file_seed("tests/data/calibration/all_reduce_perf.h100_2x8.log"),
        file_seed("tests/data/calibration/old_format.all_reduce_perf.log")},
       2000,
       [](const std::string& t, const std::string& f) { parse_nccl_tests_log(t, f); }},
      {"nccl-tests CSV",
       {"parse_nccl_tests_csv"},
       {file_seed("datasets/measurements/a100_nvswitch_allreduce_2gpu.csv", 30)},
       2000,
       [](const std::string& t, const std::string& f) {
         parse_nccl_tests_csv(t, f, "all_reduce");
       }},
      {"profiler trace",
       {"parse_profiler_trace"},
       {file_seed("tests/data/calibration/kineto_trace.json"),
        file_seed("tests/data/calibration/kineto_ops.json")},
       2000,
       [](const std::string& t, const std::string& f) { parse_profiler_trace(t, f); }},
      {"op trace",
       {"parse_op_trace"},
       {simulated_trace_seed()},
       2000,
       [&c](const std::string& t, const std::string& f) {
         parse_op_trace(t, f, c.graph, c.cluster);
       }},
  };
}

inline std::vector<RegisteredReader> framework_and_model_readers() {
  ImportOptions onnx;
  onnx.batch_size = 2;
  return {
      {"Megatron-LM arguments",
       {"parse_megatron_arguments"},
       {{"megatron arguments",
         "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \\\n--num-layers 8 "
         "--micro-batch-size 1 "
         "--global-batch-size 16 --sequence-parallel \\\n--num-layers-per-virtual-pipeline-stage 2 "
         "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1 --bf16 "
         "--clip-grad 1.0 "
         "# comment\n--lr 3e-4\n"}},
       3000,
       [](const std::string& t, const std::string&) { parse_megatron_arguments(t, 8); }},
      {"DeepSpeed config",
       {"parse_deepspeed_config"},
       {{"ds.json",
         "{\n  \"train_batch_size\": 16,\n  \"train_micro_batch_size_per_gpu\": 1,\n  "
         "\"gradient_accumulation_steps\": "
         "4,\n  \"gradient_clipping\": 1.0,\n  \"zero_optimization\": {\"stage\": 1, "
         "\"overlap_comm\": false},\n  "
         "\"bf16\": {\"enabled\": true},\n  \"pipeline\": {\"stages\": 2, "
         "\"activation_checkpoint_interval\": 1, "
         "\"parts\": [0, 4, 8]}\n}\n"}},
       3000,
       [](const std::string& t, const std::string&) { parse_deepspeed_config(t, 8); }},
      {"torchtitan job config",
       {"parse_torchtitan_config"},
       {file_seed("tests/data/torchtitan/llama_fsdp_tp.toml")},
       3000,
       [](const std::string& t, const std::string&) { parse_torchtitan_config(t, 8); }},
      // The description and its parameter counts (checked arithmetic on the read sizes).
      {"Hugging Face config",
       {"parse_hf_config"},
       {file_seed("datasets/models/hf/mixtral_8x7b.config.json"),
        file_seed("datasets/models/hf/qwen1.5_moe_a2.7b.config.json"),
        file_seed("datasets/models/hf/deepseek_v3.config.json")},
       3000,
       [](const std::string& t, const std::string& f) { hf_param_counts(parse_hf_config(t, f)); }},
      // Protobuf parsing, libonnx's shape inference and version converter (the opset-6
      // fixture is upgraded to 7).
      {"ONNX model",
       {"import_onnx_bytes", "parse_model"},
       {file_seed("tests/data/onnx/opset6_conv_net.onnx"),
        file_seed("tests/data/onnx/pass_through.onnx")},
       6000,
       [onnx](const std::string& t, const std::string& f) { import_onnx_bytes(t, f, onnx); }},
  };
}

/// The configuration files of `placer train-policy` (torch-free parsers, library
/// placer_train_configs). GDP's method lists are checked against these names (the loader
/// passes the registry's).
inline std::vector<RegisteredReader> training_config_readers() {
  static const std::vector<std::string> methods = {
      "m-etf",         "m-sct",       "metis",           "scotch",
      "critical-path", "pipeline-dp", "pipeline-ideals", "m-etf+hybrid"};
  return {
      {"train-policy config (gdp)",
       {"parse_train_config"},
       {file_seed("examples/train_policy.yaml"), file_seed("models/pretrained/stages.train.yaml")},
       3000,
       [](const std::string& t, const std::string& f) { parse_train_config(t, f, methods); }},
      {"train-policy config (rainbow-pp)",
       {"parse_rainbow_pp_train_config"},
       {file_seed("examples/train_rainbow_pp.yaml"),
        file_seed("models/pretrained/rainbow_pp.train.yaml")},
       3000,
       [](const std::string& t, const std::string& f) { parse_rainbow_pp_train_config(t, f); }},
      {"train-policy config (placeto)",
       {"parse_placeto_train_config"},
       {file_seed("examples/train_placeto.yaml")},
       2000,
       [](const std::string& t, const std::string& f) { parse_placeto_train_config(t, f); }},
      {"train-policy config (expert-rl)",
       {"parse_expert_rl_train_config"},
       {file_seed("models/pretrained/expert_rl.train.yaml"),
        file_seed("models/pretrained/expert_rl_eplb_counts.train.yaml")},
       2000,
       [](const std::string& t, const std::string& f) { parse_expert_rl_train_config(t, f); }},
  };
}

/// Every registered reader, in a fixed order.
inline const std::vector<RegisteredReader>& registered_readers() {
  static const std::vector<RegisteredReader> all = [] {
    std::vector<RegisteredReader> r = file_format_readers();
    for (auto* part :
         {&measurement_readers, &framework_and_model_readers, &training_config_readers}) {
      for (RegisteredReader& x : part()) r.push_back(std::move(x));
    }
    return r;
  }();
  return all;
}

}  // namespace placer::fuzz
