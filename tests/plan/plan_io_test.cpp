#include "src/io/plan_io.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/io/graph_json.h"
#include "src/util/error.h"
#include "tests/plan/plan_test_util.h"

namespace placer {
namespace {

namespace fs = std::filesystem;
using testing_plan::expect_error;
using testing_plan::expect_same_plan;

const std::string kData = PLACER_TEST_DATA_DIR;
const std::string kHeader = "format_version: \"1.0\"\ngraph: testnet\n";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class PlanIo : public ::testing::Test {
 protected:
  Graph g = testing_plan::make_test_graph();
  Cluster c = testing_plan::make_test_cluster();

  Plan parse(const std::string& body, std::vector<std::string>* warnings = nullptr) {
    return parse_plan_yaml(kHeader + body, "p.yaml", g, c, warnings);
  }
  template <typename E>
  void expect_parse_error(const std::string& body, const std::string& part) {
    expect_error<E>([&] { parse(body); }, part);
  }

  /// A plan using every feature, with seeded random placement / numbers.
  Plan random_plan(uint64_t seed) {
    std::mt19937_64 rng(seed);
    Plan p = Plan::single_device(g, 0);
    p.graph_name = "testnet";
    p.method = seed % 2 ? "random" : "";
    if (seed % 7 == 0) p.graph_name.clear();
    for (int& d : p.placement) d = int(rng() % 4);  // devices 0..3: replicas fit
    if (seed % 3 == 0) p.placement.assign(g.num_ops(), int(rng() % 4));
    if (seed % 2 == 0) {
      p.partitions.push_back({2, 1, {0, 1}});
      p.partitions.push_back({4, OpPartition::kReduceDim, {3, 2}});
    }
    if (seed % 4 == 0) p.partitions.push_back({1, 0, {0, 1, 2, 3}, {0, OpPartition::kReduceDim}});
    if (seed % 4 != 3) {
      p.pipeline.micro_batches = 1 + int(rng() % 8);  // at most the batch of 8
      p.pipeline.schedule = seed % 5 ? PipelineSchedule::k1F1B : PipelineSchedule::kGPipe;
      p.pipeline.stages = {{{0, 1, 2}, {0}}, {{3, 4, 5}, {1, 2}}};
      if (seed % 3 == 1) p.pipeline.stages[1].ops = {4, 3, 5};  // not in topological order
      if (seed % 3 == 2) p.pipeline.stages = {{{0, 1, 2, 3, 4, 5}, {3}}};
    }
    p.data_parallel.replicas = 1 + int(seed % 2);
    p.data_parallel.sync = static_cast<SyncScheme>(rng() % 5);
    p.data_parallel.bucket_bytes = (10ull << 20) + rng() % 1000;
    // Format 1.1 fields on some seeds (others stay 1.0 files).
    if (seed % 6 == 1) {
      p.partitions.push_back({5, 0, {0, 1}});
      p.partitions.back().replicated = true;
      p.partitions.back().dim = 0;
      p.data_parallel.zero_stage = int(rng() % 4);
      p.data_parallel.overlap = false;
      p.recompute = seed % 4 == 1 ? Recompute::kFull : Recompute::kSelective;
      p.precision.compute_set = true;
      p.precision.compute = DType::kBF16;
      p.precision.loss_scaling = true;
      p.precision.grad_clipping = seed % 2 == 1;
      p.precision.fp8 = seed % 4 == 3;
      p.recompute_every = 1 + int(seed % 3);
      if (seed % 12 == 7) p.recompute = Recompute::kSelectiveOp;
    }
    if (p.data_parallel.zero_stage == 3) {
      FsdpConfig& fs = p.data_parallel.fsdp;
      fs.enabled = true;
      fs.forward_prefetch = int(seed % 3);
      fs.backward_prefetch = int(seed % 2) + 1;
      fs.reshard_after_forward = seed % 4 != 1;
      fs.shard_group = int(seed % 2);
      fs.param_dtype_set = seed % 3 != 0;
      fs.param_dtype = DType::kBF16;
      fs.reduce_dtype_set = seed % 5 != 0;
      fs.reduce_dtype = seed % 2 ? DType::kF32 : DType::kF16;
    }
    if (seed % 6 == 1 && p.pipeline.enabled()) {
      p.pipeline.stages.back().recompute = Recompute::kNone;
    }
    if (seed % 5 == 0 && p.data_parallel.replicas == 2) {
      p.data_parallel.replica_devices = {{0, 1, 2, 3}, {7, 6, 5, 4}};
    }
    if (seed % 2 == 1) {
      p.predicted.valid = true;
      p.predicted.step_time = std::uniform_real_distribution<double>(1e-6, 10)(rng);
      p.predicted.oom = rng() % 2;
      p.predicted.peak_memory.assign(8, 0);
      for (int d = 0; d < 4; ++d) p.predicted.peak_memory[d] = (rng() >> 4) >> (rng() % 40);  // <= 1 EiB
    }
    p.validate(g, c);
    return p;
  }
};

TEST_F(PlanIo, PlacementRulesAndInheritance) {
  const Plan p = parse(
      "method: manual\n"
      "placement:\n"
      "  default: 1\n"
      "  groups: {emb: h1/gpu0}\n"
      "  ops:\n"
      "    l1_fc: h0/gpu3\n"
      "    l1_fc/update: 2\n"
      "    head/grad: h0/gpu0\n");
  EXPECT_EQ(p.graph_name, "testnet");
  EXPECT_EQ(p.method, "manual");
  // x_in embed l1_fc l1_act l10_fc head | head/g l10/g act/g l1/g emb/g | emb/u l1/u loose
  const std::vector<int> expected = {1, 4, 3, 1, 1, 1, 0, 1, 1, 3, 4, 4, 2, 4};
  EXPECT_EQ(p.placement, expected);
  EXPECT_FALSE(p.pipeline.enabled());
  EXPECT_EQ(p.data_parallel.replicas, 1);
  EXPECT_FALSE(p.predicted.valid);
}

TEST_F(PlanIo, PipelineStagesFromRangeScopesAndOps) {
  const Plan p = parse(
      "placement: {default: 5}\n"
      "pipeline:\n"
      "  micro_batches: 8\n"
      "  schedule: gpipe\n"
      "  stages:\n"
      "    - devices: [h0/gpu0, h0/gpu1]\n"
      "      range: {from: x_in, to: embed}\n"
      "    - devices: 6\n"
      "      scopes: [layer.1]\n"  // layer.1.fc and layer.1.act, not layer.10.fc
      "    - devices: [h1/gpu3]\n"
      "      ops: [head, l10_fc]\n");
  ASSERT_EQ(p.pipeline.stages.size(), 3u);
  EXPECT_EQ(p.pipeline.micro_batches, 8);
  EXPECT_EQ(p.pipeline.schedule, PipelineSchedule::kGPipe);
  EXPECT_EQ(p.pipeline.stages[0].ops, (std::vector<OpId>{0, 1}));
  EXPECT_EQ(p.pipeline.stages[0].devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(p.pipeline.stages[1].ops, (std::vector<OpId>{2, 3}));
  EXPECT_EQ(p.pipeline.stages[1].devices, (std::vector<int>{6}));
  EXPECT_EQ(p.pipeline.stages[2].ops, (std::vector<OpId>{5, 4}));  // file order kept
  // Forward ops sit on their stage's first device, backward / update ops follow their
  // forward op, loose_opt (no forward op, no group entry, no stage) takes the default.
  const std::vector<int> expected = {0, 0, 6, 6, 7, 7, 7, 7, 6, 6, 0, 0, 6, 5};
  EXPECT_EQ(p.placement, expected);
}

TEST_F(PlanIo, DataParallelPartitionsAndPrediction) {
  const Plan p = parse(
      "placement: {default: h0/gpu0}\n"
      "partitions:\n"
      "  - {op: l1_fc, dim: 1, devices: [0, 1]}\n"
      "  - {op: l10_fc, dim: reduce, devices: [h0/gpu2, h0/gpu3]}\n"
      "data_parallel:\n"
      "  replicas: 2\n"
      "  sync: hierarchical\n"
      "  bucket_size: 32 MiB\n"
      "  replica_devices: [[0, 1, 2, 3], [h1/gpu3, 6, 5, 4]]\n"
      "predicted:\n"
      "  step_time: 12.5 ms\n"
      "  oom: false\n"
      "  peak_memory: {h0/gpu0: 10.5 GiB, 3: 1 GB}\n");
  ASSERT_EQ(p.partitions.size(), 2u);
  EXPECT_EQ(p.partitions[0].op, 2u);
  EXPECT_EQ(p.partitions[0].dim, 1);
  EXPECT_EQ(p.partitions[1].dim, OpPartition::kReduceDim);
  EXPECT_EQ(p.partitions[1].devices, (std::vector<int>{2, 3}));
  EXPECT_EQ(p.data_parallel.replicas, 2);
  EXPECT_EQ(p.data_parallel.sync, SyncScheme::kHierarchical);
  EXPECT_EQ(p.data_parallel.bucket_bytes, 32ull << 20);
  EXPECT_EQ(p.data_parallel.replica_devices[1], (std::vector<int>{7, 6, 5, 4}));
  EXPECT_TRUE(p.predicted.valid);
  EXPECT_EQ(p.predicted.step_time, 12.5e-3);
  EXPECT_FALSE(p.predicted.oom);
  EXPECT_EQ(p.predicted.peak_memory,
            (std::vector<uint64_t>{10752ull << 20, 0, 0, 1000000000, 0, 0, 0, 0}));
}

TEST_F(PlanIo, RoundTripYamlAndJsonExactly) {
  for (uint64_t seed = 0; seed < 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Plan p = random_plan(seed);
    const std::string yaml = plan_to_yaml(p, g, c);
    expect_same_plan(p, parse_plan_yaml(yaml, "rt.plan.yaml", g, c));
    const std::string json = plan_to_json(p, g, c);
    expect_same_plan(p, parse_plan_json(json, "rt.plan.json", g, c));
    // Writing what was read gives the same text.
    EXPECT_EQ(plan_to_yaml(parse_plan_yaml(yaml, "rt.plan.yaml", g, c), g, c), yaml);
  }
}

TEST_F(PlanIo, RoundTripThroughFilesPicksFormatByExtension) {
  const Plan p = random_plan(7);
  const fs::path dir = fs::temp_directory_path() / "placer_plan_io_test";
  fs::create_directories(dir);
  const std::string y = (dir / "p.plan.yaml").string();
  const std::string j = (dir / "p.plan.json").string();
  save_plan(p, g, c, y);
  save_plan(p, g, c, j);
  expect_same_plan(p, load_plan(y, g, c));
  expect_same_plan(p, load_plan(j, g, c));
  // The JSON file is JSON (numbers in base units), the YAML file has units.
  const std::string jtext = read_text(j);
  EXPECT_EQ(jtext.front(), '{');
  EXPECT_NE(jtext.find("\"bucket_size\": " + std::to_string(p.data_parallel.bucket_bytes)),
            std::string::npos);
  EXPECT_NE(read_text(y).find("bucket_size: "), std::string::npos);
  fs::remove_all(dir);
}

TEST_F(PlanIo, WriterIsCompact) {
  Plan p = Plan::single_device(g, 2);
  p.placement[3] = 3;  // l1_act; its backward op follows it
  p.placement[8] = 3;
  const std::string text = plan_to_yaml(p, g, c);
  const YAML::Node n = YAML::Load(text);
  EXPECT_EQ(n["placement"]["default"].Scalar(), "h0/gpu2");
  ASSERT_TRUE(n["placement"]["ops"].IsMap());
  EXPECT_EQ(n["placement"]["ops"].size(), 1u) << text;
  EXPECT_EQ(n["placement"]["ops"]["l1_act"].Scalar(), "h0/gpu3");
  EXPECT_FALSE(n["placement"]["groups"]) << text;
  EXPECT_FALSE(n["pipeline"]);
  EXPECT_FALSE(n["data_parallel"]);
  EXPECT_FALSE(n["predicted"]);

  // A whole group on one device is one group entry; its backward ops inherit.
  p = Plan::single_device(g, 0);
  for (OpId o : {1, 10, 11, 13}) p.placement[o] = 5;
  const YAML::Node m = YAML::Load(plan_to_yaml(p, g, c));
  EXPECT_EQ(m["placement"]["groups"]["emb"].Scalar(), "h1/gpu1");
  EXPECT_FALSE(m["placement"]["ops"]);

  // A stage that is a run of the forward order is written as a range.
  p.pipeline.stages = {{{0, 1, 2}, {0}}, {{3, 5, 4}, {1}}};
  const YAML::Node s = YAML::Load(plan_to_yaml(p, g, c));
  EXPECT_EQ(s["pipeline"]["stages"][0]["range"]["from"].Scalar(), "x_in");
  EXPECT_EQ(s["pipeline"]["stages"][0]["range"]["to"].Scalar(), "l1_fc");
  EXPECT_EQ(s["pipeline"]["stages"][1]["ops"].size(), 3u);
}

TEST_F(PlanIo, UnevenStagesAreNotedInThePredictionAndTheNoteIsNotRead) {
  Plan p = Plan::single_device(g, 0);
  p.pipeline.stages = {{{0, 1, 2}, {0}}, {{3, 4, 5}, {1, 2}}};  // widths 1 and 2
  p.predicted.valid = true;
  p.predicted.step_time = 0.25;
  const std::string text = plan_to_yaml(p, g, c);
  const YAML::Node n = YAML::Load(text);
  ASSERT_TRUE(n["predicted"]["notes"]);
  EXPECT_EQ(n["predicted"]["notes"][0].Scalar().rfind("uneven stages: data-parallel widths 1, 2 ", 0), 0u)
      << n["predicted"]["notes"][0].Scalar();
  const Plan back = parse_plan_yaml(text, "p.yaml", g, c);
  expect_same_plan(p, back);
  EXPECT_EQ(plan_to_yaml(back, g, c), text);

  p.pipeline.stages[1].devices = {1};  // even: no note
  EXPECT_FALSE(YAML::Load(plan_to_yaml(p, g, c))["predicted"]["notes"]);
}

TEST_F(PlanIo, WriterRejectsInvalidPlans) {
  Plan p = Plan::single_device(g, 9);
  expect_error<ValidationError>([&] { plan_to_yaml(p, g, c); },
                                "cannot write plan: placement: op 'x_in' is on device 9");
}

TEST_F(PlanIo, GraphNameMismatchIsAWarning) {
  std::vector<std::string> warnings;
  parse_plan_yaml("format_version: \"1.0\"\ngraph: other\nplacement: {default: 0}\n", "w.yaml", g,
                  c, &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "w.yaml: graph: the plan was made for graph 'other', not 'testnet'");
}

TEST_F(PlanIo, FsdpPrecisionAndCheckpointingFields) {
  const Plan p = parse(
      "placement: {default: 0}\n"
      "data_parallel: {replicas: 4, zero_stage: 3, fsdp: {forward_prefetch: 2, "
      "reshard_after_forward: false, shard_group: 2, param_dtype: bf16, reduce_dtype: fp32}}\n"
      "recompute: selective_op\n"
      "recompute_every: 3\n"
      "precision: {compute: bf16, fp8: true}\n");
  const FsdpConfig& fs = p.data_parallel.fsdp;
  EXPECT_TRUE(fs.enabled);
  EXPECT_EQ(fs.forward_prefetch, 2);
  EXPECT_EQ(fs.backward_prefetch, 1);  // the default
  EXPECT_FALSE(fs.reshard_after_forward);
  EXPECT_EQ(fs.shard_group, 2);
  EXPECT_TRUE(fs.param_dtype_set && fs.reduce_dtype_set);
  EXPECT_EQ(fs.param_dtype, DType::kBF16);
  EXPECT_EQ(fs.reduce_dtype, DType::kF32);
  EXPECT_EQ(p.recompute, Recompute::kSelectiveOp);
  EXPECT_EQ(p.recompute_every, 3);
  EXPECT_TRUE(p.precision.fp8);
  // Written back as format 1.1 with every FSDP field spelled out.
  const std::string yaml = plan_to_yaml(p, g, c);
  EXPECT_NE(yaml.find("format_version: \"1.1\""), std::string::npos);
  EXPECT_NE(yaml.find("backward_prefetch: 1"), std::string::npos);
  expect_same_plan(p, parse_plan_yaml(yaml, "rt.plan.yaml", g, c));
  // Off unless given: an empty fsdp map turns it on with the defaults.
  EXPECT_TRUE(
      parse("placement: {default: 0}\ndata_parallel: {replicas: 2, zero_stage: 3, fsdp: {}}\n")
          .data_parallel.fsdp.enabled);
  EXPECT_FALSE(parse("placement: {default: 0}\ndata_parallel: {replicas: 2, zero_stage: 3}\n")
                   .data_parallel.fsdp.enabled);
}

TEST_F(PlanIo, FsdpPrecisionAndCheckpointingErrors) {
  const std::string dp = "placement: {default: 0}\ndata_parallel: ";
  expect_parse_error<ValidationError>(dp + "{replicas: 2, fsdp: {}}\n",
                                      "p.yaml: data_parallel.fsdp: needs zero_stage 3 (got 0)");
  expect_parse_error<ValidationError>(
      dp + "{replicas: 4, zero_stage: 3, fsdp: {shard_group: 3}}\n",
      "p.yaml: data_parallel.fsdp.shard_group: 3 does not divide the data-parallel group of 4 "
      "devices");
  expect_parse_error<FormatError>(dp + "{replicas: 2, zero_stage: 3, fsdp: {prefetch: 1}}\n",
                                  "p.yaml: data_parallel.fsdp: unknown key 'prefetch'");
  expect_parse_error<FormatError>(
      dp + "{replicas: 2, zero_stage: 3, fsdp: {reduce_dtype: i8}}\n",
      "p.yaml: data_parallel.fsdp.reduce_dtype: unknown dtype 'i8' (use f32, f16 or bf16)");
  expect_parse_error<FormatError>("placement: {default: 0}\nrecompute_every: 0\n",
                                  "p.yaml: recompute_every: must be between 1 and");
  expect_parse_error<FormatError>("placement: {default: 0}\nprecision: {compute: fp8}\n",
                                  "p.yaml: precision.compute: fp8 runs the GEMMs only: write "
                                  "'fp8: true' with a 16-bit compute dtype");
  expect_parse_error<FormatError>("placement: {default: 0}\nrecompute: some\n",
                                  "p.yaml: recompute: unknown recomputation 'some' (use none, "
                                  "selective, selective_op or full)");
}

// ---- Bad input -------------------------------------------------------------------------

TEST_F(PlanIo, UnknownNames) {
  expect_parse_error<ValidationError>(
      "placement: {default: 0, ops: {l1_fcc: 1}}\n",
      "p.yaml: placement.ops['l1_fcc']: unknown op 'l1_fcc' (graph 'testnet' has no op of that "
      "name; did you mean 'l1_fc'?)");
  expect_parse_error<ValidationError>(
      "placement: {default: h2/gpu0}\n",
      "p.yaml: placement.default: unknown device 'h2/gpu0' (cluster 'testcluster' has h0/gpu0, "
      "h0/gpu1, h0/gpu2, h0/gpu3, h1/gpu0, h1/gpu1, h1/gpu2, h1/gpu3)");
  expect_parse_error<ValidationError>(
      "placement: {default: 8}\n",
      "p.yaml: placement.default: device index 8 is out of range (cluster 'testcluster' has 8 "
      "devices: 0..7)");
  expect_parse_error<ValidationError>(
      "placement: {default: 0, groups: {embed: 1}}\n",
      "p.yaml: placement.groups['embed']: unknown colocation group 'embed'");
  expect_parse_error<ValidationError>(
      "placement: {default: 0}\npartitions: [{op: nope, dim: 0, devices: [0, 1]}]\n",
      "p.yaml: partitions[0].op: unknown op 'nope'");
}

TEST_F(PlanIo, PlacementErrors) {
  expect_parse_error<ValidationError>(
      "placement: {ops: {x_in: 0}}\n",
      "p.yaml: placement: op 'embed' has no device: name it under placement.ops, its group "
      "under placement.groups, or set placement.default");
  expect_parse_error<FormatError>("placement: {default: 0, ops: {l1_fc: 1, l1_fc: 2}}\n",
                                  "p.yaml: placement.ops['l1_fc']: op given twice");
  expect_parse_error<FormatError>("placment: {default: 0}\n",
                                  "p.yaml: unknown key 'placment' (did you mean 'placement'?)");
  expect_parse_error<FormatError>("placement: [0, 1]\n", "p.yaml: placement: expected a mapping");
}

TEST_F(PlanIo, PipelineErrors) {
  const std::string pre = "placement: {default: 0}\npipeline:\n  stages:\n";
  expect_parse_error<ValidationError>(
      pre +
          "    - {devices: [0], range: {from: x_in, to: l1_fc}}\n"
          "    - {devices: [1], range: {from: l1_fc, to: head}}\n",
      "p.yaml: pipeline.stages[1]: op 'l1_fc' is also in stage 0 (stages must not overlap)");
  expect_parse_error<ValidationError>(pre +
                                          "    - {devices: [0], range: {from: x_in, to: l1_fc}}\n"
                                          "    - {devices: [1], ops: [l1_act, l10_fc]}\n",
                                      "p.yaml: pipeline.stages: forward op 'head' is in no stage");
  expect_parse_error<ValidationError>(
      pre + "    - {devices: [0], range: {from: head, to: x_in}}\n",
      "p.yaml: pipeline.stages[0].range: 'to' op 'x_in' comes before 'from' op 'head' in "
      "topological order");
  expect_parse_error<ValidationError>(
      pre + "    - {devices: [0], range: {from: x_in, to: head/grad}}\n",
      "p.yaml: pipeline.stages[0].range.to: op 'head/grad' is a backward op; ranges run over "
      "forward ops");
  expect_parse_error<ValidationError>(pre + "    - {devices: [0], scopes: [layer.2]}\n",
                                      "p.yaml: pipeline.stages[0].scopes[0]: scope 'layer.2' "
                                      "matches no forward op");
  expect_parse_error<FormatError>(
      pre + "    - {devices: [0], ops: [x_in], range: {from: x_in, to: head}}\n",
      "p.yaml: pipeline.stages[0]: give exactly one of 'ops', 'range' or 'scopes' (found 2)");
  expect_parse_error<FormatError>(pre + "    - {ops: [x_in]}\n",
                                  "p.yaml: pipeline.stages[0]: missing required key 'devices'");
  expect_parse_error<FormatError>(
      "placement: {default: 0}\npipeline: {schedule: zigzag, stages: []}\n",
      "p.yaml: pipeline.schedule: unknown schedule 'zigzag' (use gpipe or 1f1b)");
  expect_parse_error<FormatError>(
      "placement: {default: 0}\npipeline: {micro_batches: 0, stages: []}\n",
      "p.yaml: pipeline.micro_batches: must be between 1 and");
}

TEST_F(PlanIo, PartitionAndDataParallelErrors) {
  const std::string pre = "placement: {default: 0}\n";
  expect_parse_error<FormatError>(pre + "partitions: [{op: l1_fc, dim: x, devices: [0, 1]}]\n",
                                  "p.yaml: partitions[0].dim: expected a dimension index (0, "
                                  "1, ...) or 'reduce', got 'x'");
  expect_parse_error<ValidationError>(
      pre + "partitions: [{op: l1_fc, dim: 5, devices: [0, 1]}]\n",
      "p.yaml: partitions[0]: dim 5 is out of range: output 'h1' of op 'l1_fc' has rank 2");
  expect_parse_error<FormatError>(pre + "data_parallel: {replicas: 2, sync: gossip}\n",
                                  "p.yaml: data_parallel.sync: unknown sync scheme 'gossip'");
  expect_parse_error<FormatError>(pre + "data_parallel: {replicas: 2, bucket_size: 25 MB/s}\n",
                                  "p.yaml: data_parallel.bucket_size: cannot read '25 MB/s' as "
                                  "a byte size");
  expect_parse_error<ValidationError>(
      "placement: {default: 5}\ndata_parallel: {replicas: 2}\n",
      "p.yaml: data_parallel: replica 1 of device 'h1/gpu1' would be device #9");
  expect_parse_error<FormatError>(pre + "predicted: {oom: maybe, step_time: 1 s}\n",
                                  "p.yaml: predicted.oom: expected true/false, yes/no, on/off or 1/0, got 'maybe'");
}

TEST_F(PlanIo, RecursiveHalvingLevels) {
  const std::string pre = "placement: {default: 0}\n";
  const Plan p = parse(pre + "partitions: [{op: l1_fc, levels: [1, 0], devices: [0, 1, 2, 3]}]\n");
  ASSERT_EQ(p.partitions.size(), 1u);
  EXPECT_EQ(p.partitions[0].levels, (std::vector<int>{1, 0}));
  EXPECT_EQ(p.partitions[0].dim, 1);
  const std::string yaml = plan_to_yaml(p, g, c);
  EXPECT_NE(yaml.find("levels"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("dim"), std::string::npos) << yaml;
  expect_same_plan(p, parse_plan_yaml(yaml, "rt.plan.yaml", g, c));
  expect_parse_error<FormatError>(
      pre + "partitions: [{op: l1_fc, dim: 1, levels: [1], devices: [0, 1]}]\n",
      "p.yaml: partitions[0]: give either 'dim' or 'levels', not both");
  expect_parse_error<FormatError>(
      pre + "partitions: [{op: l1_fc, levels: [1, y], devices: [0, 1, 2, 3]}]\n",
      "p.yaml: partitions[0].levels[1]: expected a dimension index");
  expect_parse_error<ValidationError>(
      pre + "partitions: [{op: l1_fc, levels: [1, 0], devices: [0, 1, 2]}]\n",
      "p.yaml: partitions[0]: op 'l1_fc' has 2 level(s) but 3 devices; recursive halving needs "
      "exactly 2^2 devices");
  expect_parse_error<ValidationError>(
      pre + "partitions: [{op: l1_act, levels: [1, reduce], devices: [0, 1, 2, 3]}]\n",
      "p.yaml: partitions[0].levels[1]: op 'l1_act' (Relu");
}

TEST_F(PlanIo, FileLevelErrors) {
  expect_error<FileError>([&] { load_plan(kData + "/nope.plan.yaml", g, c); },
                          kData + "/nope.plan.yaml: cannot open plan file");
  expect_error<FormatError>(
      [&] { parse_plan_yaml("format_version: \"1.0\"\nplacement: {default: 0\n", "m.yaml", g, c); },
      "m.yaml: line 3, column 1: malformed YAML: ");
  expect_error<FormatError>(
      [&] { parse_plan_json("{\"format_version\": }", "m.json", g, c); },
      "m.json: line 1, column 20: malformed JSON: syntax error while parsing value");
  expect_error<FormatError>([&] { parse_plan_yaml("format_version: \"3.0\"\n", "v.yaml", g, c); },
                            "v.yaml: unsupported format_version '3.0' (this build reads 1.x)");
}

// ---- Shipped fixtures (mlp2.graph.json on two_gpus.cluster.yaml) --------------------------

class PlanFixtures : public ::testing::Test {
 protected:
  Graph g = load_graph_json(kData + "/mlp2.graph.json");
  Cluster c = load_cluster_yaml(kData + "/two_gpus.cluster.yaml");
  std::string bad(const std::string& f) { return kData + "/bad/" + f; }
};

TEST_F(PlanFixtures, ExamplesLoad) {
  const Plan p = load_plan(kData + "/mlp2_two_gpus.plan.yaml", g, c);
  EXPECT_EQ(p.placement, (std::vector<int>{0, 0, 0, 1, 1}));
  const Plan q = load_plan(kData + "/mlp2_pipeline.plan.yaml", g, c);
  ASSERT_EQ(q.pipeline.stages.size(), 2u);
  EXPECT_EQ(q.pipeline.stages[0].ops, (std::vector<OpId>{0, 1, 2}));
  EXPECT_EQ(q.pipeline.stages[1].ops, (std::vector<OpId>{3, 4}));
  EXPECT_EQ(q.pipeline.micro_batches, 4);
  EXPECT_EQ(q.placement, (std::vector<int>{0, 0, 0, 1, 1}));
}

TEST(PlanDoc, ExampleLoads) {
  const std::string doc = std::string(PLACER_SOURCE_DIR) + "/docs/formats/plan.md";
  std::ifstream in(doc);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t b = text.find("```yaml\n");
  const size_t e = text.find("```", b + 8);
  ASSERT_NE(b, std::string::npos);
  const Graph g = expand_training_step(load_graph_json(kData + "/mlp2.graph.json"), {});
  const Cluster c = load_cluster_yaml(std::string(PLACER_SOURCE_DIR) +
                                      "/datasets/clusters/automap_config_a.cluster.yaml");
  const Plan p = parse_plan_yaml(text.substr(b + 8, e - b - 8), doc, g, c);
  // fwd: fc1/MatMul fc1/Add relu fc2/MatMul fc2/Add | grads (reverse) | updates
  EXPECT_EQ(p.placement, (std::vector<int>{0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0}));
  ASSERT_EQ(p.partitions.size(), 1u);
  EXPECT_EQ(p.partitions[0].devices, (std::vector<int>{2, 3}));
  EXPECT_EQ(p.pipeline.stages[1].ops, (std::vector<OpId>{3, 4}));
  EXPECT_EQ(p.data_parallel.replicas, 2);
  EXPECT_EQ(p.predicted.peak_memory[0], 3670016u);
  EXPECT_EQ(p.predicted.step_time, 1.2e-3);
}

TEST_F(PlanFixtures, BadFiles) {
  expect_error<ValidationError>(
      [&] { load_plan(bad("unknown_op.plan.yaml"), g, c); },
      "unknown_op.plan.yaml: placement.ops['fc3/MatMul']: unknown op 'fc3/MatMul'");
  expect_error<ValidationError>(
      [&] { load_plan(bad("device_out_of_range.plan.yaml"), g, c); },
      "device_out_of_range.plan.yaml: placement.ops['fc2/MatMul']: device index 2 is out of "
      "range (cluster 'two-gpus' has 2 devices: 0..1)");
  expect_error<ValidationError>([&] { load_plan(bad("unknown_device.plan.yaml"), g, c); },
                                "unknown_device.plan.yaml: placement.default: unknown device "
                                "'host0/gpu7' (cluster 'two-gpus' has host0/gpu0, host0/gpu1)");
  expect_error<ValidationError>([&] { load_plan(bad("stage_overlap.plan.yaml"), g, c); },
                                "stage_overlap.plan.yaml: pipeline.stages[1]: op 'relu/Relu' "
                                "is also in stage 0");
  expect_error<ValidationError>([&] { load_plan(bad("op_in_no_stage.plan.yaml"), g, c); },
                                "op_in_no_stage.plan.yaml: pipeline.stages: forward op "
                                "'fc2/Add' is in no stage");
  expect_error<FormatError>([&] { load_plan(bad("wrong_version.plan.yaml"), g, c); },
                            "wrong_version.plan.yaml: unsupported format_version '2.1' (this "
                            "build reads 1.x)");
  expect_error<FormatError>([&] { load_plan(bad("malformed.plan.json"), g, c); },
                            "malformed.plan.json: line 4, column 30: malformed JSON: ");
}

}  // namespace
}  // namespace placer

namespace placer {
namespace {

class PlanIo11 : public ::testing::Test {
 protected:
  Graph g = testing_plan::make_test_graph();
  Cluster c = testing_plan::make_test_cluster();
  Plan parse(const std::string& body) {
    return parse_plan_yaml("format_version: \"1.1\"\ngraph: testnet\n" + (body.find("placement") == std::string::npos ? std::string("placement: {default: 0}\n") : std::string()) + body, "p.yaml", g, c);
  }
};

TEST_F(PlanIo11, StageGridReplicatedPartitionsAndCollectivesRoundTrip) {
  const Plan p = parse(
      "placement: {default: 0}\n"
      "partitions:\n"
      "  - {op: l1_fc, dim: 1, devices: [0, 1], backward_collective: reduce_scatter}\n"
      "  - {op: l1_act, replicated: true, devices: [0, 1]}\n"
      "  - {op: l10_fc, dim: reduce, devices: [2, 3], forward_collective: none}\n"
      "pipeline:\n"
      "  micro_batches: 4\n"
      "  scatter_gather: false\n"
      "  stages:\n"
      "    - {devices: [0, 1], tensor_parallel: 2, ops: [x_in, embed, l1_fc, l1_act],"
      " recompute: full}\n"
      "    - {devices: [2, 3, 6, 7], tensor_parallel: 2, ops: [l10_fc, head]}\n"
      "data_parallel: {zero_stage: 1, overlap: false}\n"
      "recompute: selective\n"
      "precision: {compute: bf16, loss_scaling: true, grad_clipping: true}\n");
  EXPECT_EQ(p.pipeline.stages[0].tensor_parallel, 2);
  EXPECT_FALSE(p.pipeline.scatter_gather);
  EXPECT_EQ(p.pipeline.stages[1].data_parallel(), 2);
  EXPECT_EQ(p.pipeline.stages[0].recompute, Recompute::kFull);
  EXPECT_EQ(p.pipeline.stages[1].recompute, Recompute::kInherit);
  EXPECT_EQ(p.stage_recompute(1), Recompute::kSelective);
  EXPECT_TRUE(p.partitions[1].replicated);
  EXPECT_EQ(p.partitions[0].backward_collective, PartitionCollective::kReduceScatter);
  EXPECT_EQ(p.partitions[2].forward_collective, PartitionCollective::kNone);
  EXPECT_EQ(p.data_parallel.zero_stage, 1);
  EXPECT_FALSE(p.data_parallel.overlap);
  EXPECT_EQ(p.precision.compute, DType::kBF16);
  EXPECT_TRUE(p.precision.loss_scaling && p.precision.grad_clipping);
  for (const bool json : {false, true}) {
    const std::string text = json ? plan_to_json(p, g, c) : plan_to_yaml(p, g, c);
    EXPECT_NE(text.find("1.1"), std::string::npos);
    const Plan q = json ? parse_plan_json(text, "p.json", g, c) : parse_plan_yaml(text, "p.yaml", g, c);
    testing_plan::expect_same_plan(p, q);
  }
}

TEST_F(PlanIo11, ShorthandRoundTripsAndExpandsOnlyWhenSimulated) {
  Plan p = Plan::single_device(g, 0);
  p.tensor_parallel.degree = 2;
  p.tensor_parallel.sequence_parallel = true;
  // testnet's ops have no Megatron names: the shorthand cannot expand, and says which op.
  testing_plan::expect_error<ValidationError>([&] { p.validate(g, c); },
                                              "tensor_parallel: op 'embed' (MatMul, scope 'embed') "
                                              "matches no Megatron role");
}

TEST_F(PlanIo11, BadFieldsAreNamed) {
  using testing_plan::expect_error;
  expect_error<FormatError>(
      [&] { parse("pipeline: {scatter_gather: maybe, stages: [{devices: [0], ops: [x_in]}]}\n"); },
      "p.yaml: pipeline.scatter_gather: expected ");
  expect_error<FormatError>([&] { parse("pipeline: {stages: [{devices: [0], ops: [x_in, embed, "
                                        "l1_fc, l1_act, l10_fc, head], recompute: half}]}\n"); },
                            "p.yaml: pipeline.stages[0].recompute: unknown recomputation 'half'");
  expect_error<ValidationError>(
      [&] { parse("pipeline: {stages: [{devices: [0, 1, 2], tensor_parallel: 2, ops: [x_in, embed,"
                  " l1_fc, l1_act, l10_fc, head]}]}\n"); },
      "pipeline.stages[0].tensor_parallel: stage 0 has 3 devices, not a multiple of "
      "tensor_parallel 2");
  expect_error<FormatError>([&] { parse("data_parallel: {zero_stage: 4}\n"); },
                            "p.yaml: data_parallel.zero_stage");
  expect_error<FormatError>([&] { parse("precision: {compute: int8}\n"); },
                            "p.yaml: precision.compute: unknown compute dtype 'int8'");
  expect_error<FormatError>([&] { parse("partitions: [{op: l1_fc, dim: 1, devices: [0, 1],"
                                        " forward_collective: broadcast}]\n"); },
                            "partitions[0].forward_collective: unknown collective 'broadcast'");
  expect_error<FormatError>([&] { parse("partitions: [{op: l1_act, dim: 1, replicated: true,"
                                        " devices: [0, 1]}]\n"); },
                            "partitions[0]: a replicated op is not split");
  expect_error<ValidationError>([&] { parse("partitions: [{op: l1_fc, dim: 1, devices: [0, 1],"
                                            " forward_collective: reduce_scatter}]\n"); },
                                "a reduce_scatter forward collective leaves the output split");
  expect_error<FormatError>([&] { parse("tensor_parallel: {degree: 2, style: deepspeed}\n"); },
                            "tensor_parallel.style: unknown style 'deepspeed'");
  // A stage of data-parallel copies that also holds a partition over them is ambiguous: a
  // warning names the choice made.
  std::vector<std::string> warnings;
  parse_plan_yaml("format_version: \"1.1\"\ngraph: testnet\nplacement: {default: 0}\n"
                  "partitions: [{op: l1_fc, dim: 1, devices: [0, 1]}]\n"
                  "pipeline: {stages: [{devices: [0, 1], ops: [x_in, embed, l1_fc, l1_act,"
                  " l10_fc, head]}]}\n",
                  "p.yaml", g, c, &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("p.yaml: partitions[0]: op 'l1_fc' is partitioned over devices of "
                             "pipeline stage 0, whose 2 devices are data-parallel copies "
                             "(tensor_parallel: 1): simulated as data parallelism"),
            std::string::npos)
      << warnings[0];
  // In a TP stage, partitions use the stage's first TP group.
  expect_error<ValidationError>(
      [&] { parse("partitions: [{op: l1_fc, dim: 1, devices: [2, 3]}]\n"
                  "pipeline: {stages: [{devices: [0, 1, 2, 3], tensor_parallel: 2, ops: [x_in,"
                  " embed, l1_fc, l1_act, l10_fc, head]}]}\n"); },
      "must be partitioned over the stage's first TP group");
}

TEST_F(PlanIo11, ADimMustExistInTheOutputShape) {
  using testing_plan::expect_error;
  // head's output y is [8, 4]: dim 2 does not exist.
  expect_error<ValidationError>([&] { parse("partitions: [{op: head, dim: 2, devices: [0, 1]}]\n"); },
                                "dim 2 is out of range: output 'y' of op 'head' has rank 2");
}

}  // namespace
}  // namespace placer

namespace placer {
namespace {

// Format 1.2: context and expert parallelism.
class PlanIo12 : public ::testing::Test {
 protected:
  Graph g = testing_plan::make_test_graph();
  Cluster c = testing_plan::make_test_cluster();
  const std::string stages =
      "pipeline:\n"
      "  stages:\n"
      "    - {devices: [0, 1, 2, 3], tensor_parallel: 1, ops: [x_in, embed, l1_fc, l1_act]}\n"
      "    - {devices: [4, 5, 6, 7], tensor_parallel: 1, ops: [l10_fc, head]}\n";
  Plan parse(const std::string& body, const std::string& version = "1.2") {
    return parse_plan_yaml("format_version: \"" + version +
                               "\"\ngraph: testnet\nplacement: {default: 0}\n" + stages + body,
                           "p.yaml", g, c);
  }
};

TEST_F(PlanIo12, ContextAndExpertParallelRoundTrip) {
  const Plan p = parse(
      "context_parallel: {degree: 2, comm: allgather}\n"
      "expert_parallel:\n"
      "  degree: 2\n"
      "  tensor_parallel: 2\n"
      "  dispatcher: hybridep\n"
      "  layers:\n"
      "    - [0, 1, [0, 1]]\n"
      "    - [1, 0, 0]\n");
  EXPECT_EQ(p.context_parallel.degree, 2);
  EXPECT_EQ(p.context_parallel.comm, ContextParallelComm::kAllGather);
  EXPECT_EQ(p.expert_parallel.degree, 2);
  EXPECT_EQ(p.expert_parallel.tensor_parallel, 2);
  EXPECT_EQ(p.expert_parallel.dispatcher, ExpertDispatcher::kHybridEP);
  ASSERT_EQ(p.expert_parallel.layers.size(), 2u);
  const std::vector<std::vector<int>> layer0 = {{0}, {1}, {0, 1}};
  EXPECT_EQ(p.expert_parallel.layers[0].replicas, layer0);
  for (const bool json : {false, true}) {
    const std::string text = json ? plan_to_json(p, g, c) : plan_to_yaml(p, g, c);
    EXPECT_NE(text.find("1.2"), std::string::npos) << text;
    const Plan q =
        json ? parse_plan_json(text, "p.json", g, c) : parse_plan_yaml(text, "p.yaml", g, c);
    testing_plan::expect_same_plan(p, q);
    EXPECT_NE(text.find("hybridep"), std::string::npos) << text;
  }
  // The comm defaults to p2p; without either section the plan stays 1.1 / 1.0.
  EXPECT_EQ(parse("context_parallel: {degree: 4}\n").context_parallel.comm,
            ContextParallelComm::kP2P);
  const std::string old = plan_to_yaml(parse("", "1.0"), g, c);
  EXPECT_EQ(old.find("context_parallel"), std::string::npos);
  EXPECT_NE(old.find("format_version: \"1.0\""), std::string::npos);
}

// The expert all-to-all overlap on a one-rank pipeline, read back on and off.
TEST_F(PlanIo12, ExpertAllToAllOverlapRoundTrip) {
  const std::string one_rank =
      "format_version: \"1.2\"\ngraph: testnet\nplacement: {default: 0}\n"
      "pipeline:\n"
      "  micro_batches: 2\n"
      "  stages:\n"
      "    - {devices: [0, 1, 2, 3], tensor_parallel: 1,"
      " ops: [x_in, embed, l1_fc, l1_act, l10_fc, head]}\n"
      "expert_parallel: {degree: 2, overlap: true}\n";
  const Plan p = parse_plan_yaml(one_rank, "p.yaml", g, c);
  EXPECT_TRUE(p.expert_parallel.overlap);
  for (const bool json : {false, true}) {
    const std::string text = json ? plan_to_json(p, g, c) : plan_to_yaml(p, g, c);
    const Plan q =
        json ? parse_plan_json(text, "p.json", g, c) : parse_plan_yaml(text, "p.yaml", g, c);
    EXPECT_TRUE(q.expert_parallel.overlap) << text;
    testing_plan::expect_same_plan(p, q);
  }
  Plan off = p;
  off.expert_parallel.overlap = false;
  EXPECT_FALSE(parse_plan_yaml(plan_to_yaml(off, g, c), "p.yaml", g, c).expert_parallel.overlap);
}

TEST_F(PlanIo12, BadFieldsAreNamed) {
  using testing_plan::expect_error;
  auto err = [&](const std::string& body, const std::string& msg) {
    expect_error<Error>([&] { parse(body); }, msg);
  };
  err("context_parallel: {degree: 3}\n",
      "p.yaml: context_parallel.degree: 3 does not divide the 4 data-parallel copies of "
      "pipeline.stages[0]");
  err("context_parallel: {degree: 2, comm: ring}\n",
      "p.yaml: context_parallel.comm: unknown exchange 'ring' (use p2p, a2a or allgather)");
  err("context_parallel: {comm: p2p}\n", "p.yaml: context_parallel: missing required key 'degree'");
  err("expert_parallel: {degree: 8}\n",
      "p.yaml: expert_parallel: degree x tensor_parallel = 8 does not divide the 4 devices of "
      "pipeline.stages[0]");
  err("expert_parallel: {degree: 2, layers: [[0, 2]]}\n",
      "p.yaml: expert_parallel.layers[0][1]: rank 2 is out of range (expert_parallel.degree 2: "
      "ranks 0..1)");
  err("expert_parallel: {degree: 2, layers: [[0, [1, 1]]]}\n",
      "p.yaml: expert_parallel.layers[0][1]: rank 1 is listed twice");
  err("expert_parallel: {degree: 2, layers: [[0, 0]]}\n",
      "p.yaml: expert_parallel.layers[0]: rank 1 holds no expert");
  err("expert_parallel: {degree: 2, layers: [[0, []]]}\n",
      "p.yaml: expert_parallel.layers[0][1]: expert 1 is on no rank");
  err("expert_parallel: {degree: 2, dispatcher: nvshmem}\n",
      "p.yaml: expert_parallel.dispatcher: unknown dispatcher 'nvshmem' (use alltoall, deepep or "
      "hybridep)");
  err("expert_parallel: {degree: 2, experts: 4}\n",
      "p.yaml: expert_parallel: unknown key 'experts'");
  // Megatron-core's conditions for the all-to-all overlap.
  err("expert_parallel: {degree: 1, overlap: true}\n",
      "p.yaml: expert_parallel.overlap: needs expert_parallel.degree > 1");
  err("expert_parallel: {degree: 2, overlap: true}\n",
      "p.yaml: expert_parallel.overlap: needs pipeline.virtual_stages > 1 with 2 pipeline ranks "
      "(Megatron-core's interleaved schedule)");
  // Context parallelism needs stages.
  expect_error<ValidationError>(
      [&] {
        parse_plan_yaml(
            "format_version: \"1.2\"\nplacement: {default: 0}\n"
            "context_parallel: {degree: 2}\n",
            "p.yaml", g, c);
      },
      "p.yaml: context_parallel: needs pipeline stages");
}

}  // namespace
}  // namespace placer
