#include <gtest/gtest.h>

#include "src/util/error.h"
#include "tests/plan/plan_test_util.h"

namespace placer {
namespace {

using testing_plan::expect_error;

class PlanValidate : public ::testing::Test {
 protected:
  Graph g = testing_plan::make_test_graph();
  Cluster c = testing_plan::make_test_cluster();
  Plan p = Plan::single_device(g, 0);

  void expect_invalid(const std::string& part) {
    expect_error<ValidationError>([&] { p.validate(g, c); }, part);
  }
};

TEST_F(PlanValidate, FixtureIsWhatTheTestsAssume) {
  ASSERT_EQ(g.num_ops(), 14u);
  EXPECT_EQ(g.op(10).name, "embed/grad");
  EXPECT_EQ(g.op(10).forward_op, 1u);
  ASSERT_EQ(c.num_devices(), 8);
  EXPECT_EQ(c.device(5).name, "h1/gpu1");
  EXPECT_NO_THROW(p.validate(g, c));
}

TEST_F(PlanValidate, Placement) {
  p.placement.pop_back();
  expect_invalid("placement: has 13 entries, but graph 'testnet' has 14 ops");
  p = Plan::single_device(g, 0);
  p.placement[3] = 8;
  expect_invalid(
      "placement: op 'l1_act' is on device 8, out of range (cluster 'testcluster' "
      "has 8 devices: 0..7)");
  p.placement[3] = -1;
  expect_invalid("placement: op 'l1_act' is on device -1, out of range");
}

TEST_F(PlanValidate, Partitions) {
  p.partitions.push_back({2, 1, {0, 1}});  // l1_fc, output [8, 32], split dim 1 two ways
  EXPECT_NO_THROW(p.validate(g, c));
  p.partitions.push_back({4, OpPartition::kReduceDim, {2, 3, 4, 5}});  // l10_fc: MatMul
  EXPECT_NO_THROW(p.validate(g, c));

  p.partitions = {{99, 0, {0, 1}}};
  expect_invalid("partitions[0]: op #99 does not exist (graph 'testnet' has 14 ops)");
  p.partitions = {{9, 0, {0, 1}}};
  expect_invalid("partitions[0]: op 'l1_fc/grad' is a backward op; partition its forward op");
  p.partitions = {{2, 0, {0, 1}}, {2, 1, {2, 3}}};
  expect_invalid("partitions[1]: op 'l1_fc' is already partitioned by partitions[0]");
  p.partitions = {{2, 0, {3}}};
  expect_invalid(
      "partitions[0]: op 'l1_fc' is split over 1 device(s); a partition needs at "
      "least 2");
  p.partitions = {{2, 0, {0, 9}}};
  expect_invalid("partitions[0]: op 'l1_fc': device 9 is out of range");
  p.partitions = {{2, 0, {1, 1}}};
  expect_invalid("partitions[0]: op 'l1_fc': device 'h0/gpu1' is listed twice");
  p.partitions = {{3, OpPartition::kReduceDim, {0, 1}}};
  expect_invalid("op 'l1_act' (Relu, elementwise) has no reduction dimension to split");
  p.partitions = {{2, 2, {0, 1}}};
  expect_invalid(
      "partitions[0]: dim 2 is out of range: output 'h1' of op 'l1_fc' has rank 2 "
      "(dims 0..1, or 'reduce')");
  p.partitions = {{4, 1, {0, 1, 2, 3, 4, 5, 6, 7}}};
  expect_invalid("dim 1 of output 'h10' of op 'l10_fc' has size 4; it cannot be split 8 ways");
  p.partitions = {{2, -2, {0, 1}}};
  expect_invalid("partitions[0]: bad dim -2 for op 'l1_fc'");
}

TEST_F(PlanValidate, RecursiveHalvingLevels) {
  // l10_fc: MatMul, output [8, 4]. Levels split dims in two, possibly one dim repeatedly.
  p.partitions = {{4, 1, {0, 1, 2, 3}, {1, 1}}};
  p.validate(g, c);
  p.partitions = {{4, OpPartition::kReduceDim, {0, 1, 2, 3, 4, 5, 6, 7}, {-1, 0, 1}}};
  p.validate(g, c);
  p.partitions = {{4, 1, {0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 1}}};
  expect_invalid(
      "partitions[0].levels[2]: dim 1 of output 'h10' of op 'l10_fc' has size 4; it cannot be "
      "split 8 ways");
  p.partitions = {{4, 1, {0, 1, 2}, {1, 0}}};
  expect_invalid("partitions[0]: op 'l10_fc' has 2 level(s) but 3 devices");
  p.partitions = {{4, 0, {0, 1, 2, 3}, {1, 0}}};
  expect_invalid("partitions[0]: dim 0 differs from levels[0] = 1");
  p.partitions = {{3, 0, {0, 1, 2, 3}, {0, OpPartition::kReduceDim}}};
  expect_invalid("partitions[0].levels[1]: op 'l1_act' (Relu, elementwise) has no reduction");
  p.partitions = {{4, 0, {0, 1, 2, 3}, {0, 2}}};
  expect_invalid("partitions[0].levels[1]: dim 2 is out of range");
}

TEST_F(PlanValidate, Pipeline) {
  p.pipeline.micro_batches = 4;
  p.pipeline.stages = {{{0, 1, 2}, {0}}, {{3, 4, 5}, {1, 2}}};
  EXPECT_NO_THROW(p.validate(g, c));

  p.pipeline.micro_batches = 0;
  expect_invalid("pipeline.micro_batches: must be >= 1 (got 0)");
  p.pipeline.micro_batches = 4;
  p.pipeline.stages[1].devices.clear();
  expect_invalid("pipeline.stages[1]: stage 1 has no devices");
  p.pipeline.stages[1].devices = {1, 1};
  expect_invalid("pipeline.stages[1]: device 'h0/gpu1' is listed twice");
  p.pipeline.stages[1].devices = {1, 12};
  expect_invalid("pipeline.stages[1]: device 12 is out of range");
  p.pipeline.stages[1].devices = {1};
  p.pipeline.stages[1].ops = {2, 3, 4, 5};
  expect_invalid("pipeline.stages[1]: op 'l1_fc' is also in stage 0 (stages must not overlap)");
  p.pipeline.stages[1].ops = {3, 4, 4, 5};
  expect_invalid("pipeline.stages[1]: op 'l10_fc' is listed twice in this stage");
  p.pipeline.stages[1].ops = {3, 4};
  expect_invalid("pipeline.stages: forward op 'head' is in no stage");
  p.pipeline.stages[1].ops = {3, 4, 5, 6};
  expect_invalid(
      "pipeline.stages[1]: op 'head/grad' is a backward op; stages list forward "
      "ops only");
  p.pipeline.stages[1].ops = {};
  expect_invalid("pipeline.stages[1]: stage 1 has no ops");
  p.pipeline.stages[1].ops = {3, 4, 5, 40};
  expect_invalid("pipeline.stages[1]: op #40 does not exist");
}

TEST_F(PlanValidate, MicroBatchesAtMostTheBatch) {
  p.pipeline.stages = {{{0, 1, 2}, {0}}, {{3, 4, 5}, {1}}};
  p.pipeline.micro_batches = 8;  // the graph's batch: one sample each
  EXPECT_NO_THROW(p.validate(g, c));
  p.pipeline.micro_batches = 9;
  expect_invalid(
      "pipeline.micro_batches: 9 micro-batches, more than the batch of graph 'testnet' (8 "
      "samples; each micro-batch needs at least one)");
  p.pipeline.micro_batches = 1000000;
  expect_invalid("pipeline.micro_batches: 1000000 micro-batches, more than the batch");
}

TEST_F(PlanValidate, DataParallel) {
  p.data_parallel.replicas = 2;  // device 0 -> replica 1 on device 4
  EXPECT_NO_THROW(p.validate(g, c));
  EXPECT_EQ(p.replica_device(0, 1, 8), 4);

  p.data_parallel.replicas = 0;
  expect_invalid("data_parallel.replicas: must be >= 1 (got 0)");
  p.data_parallel.replicas = 9;
  expect_invalid(
      "data_parallel.replicas: 9 replicas do not fit cluster 'testcluster' with 8 "
      "devices");
  p.data_parallel.replicas = 2;
  p.data_parallel.bucket_bytes = 0;
  expect_invalid("data_parallel.bucket_size: must be > 0");
  p.data_parallel.bucket_bytes = 1 << 20;
  p.placement[2] = 5;  // replica 1 would need device 9
  expect_invalid(
      "data_parallel: replica 1 of device 'h1/gpu1' would be device #9, beyond "
      "cluster 'testcluster'");
  p.placement[2] = 4;  // replica 1 of device 0 lands on 4, which replica 0 uses
  expect_invalid(
      "data_parallel: replica 1 puts device 'h0/gpu0' on 'h1/gpu0', which replica 0 "
      "already uses for 'h1/gpu0'");

  // An explicit map: devices {0, 4} -> replica 1 on {1, 5}.
  p.data_parallel.replica_devices = {{0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 0, 0, 5}};
  EXPECT_NO_THROW(p.validate(g, c));
  EXPECT_EQ(p.replica_device(4, 1, 8), 5);
  p.data_parallel.replica_devices = {{0, 1, 2, 3, 4}};
  expect_invalid("data_parallel.replica_devices: has 1 rows, expected one per replica (2)");
  p.data_parallel.replica_devices = {{0, 1, 2, 3, 4}, {1, 0, 0}};
  expect_invalid(
      "data_parallel.replica_devices[1]: has 3 entries, but the plan uses device "
      "'h1/gpu0' (#4), which needs one");
  p.data_parallel.replica_devices = {{0, 1, 2, 3, 4}, {1, 0, 0, 0, 8}};
  expect_invalid(
      "data_parallel.replica_devices[1]: maps device 'h1/gpu0' to device 8, out of "
      "range");
  p.data_parallel.replica_devices = {{1, 1, 2, 3, 4}, {1, 0, 0, 0, 5}};
  expect_invalid(
      "data_parallel.replica_devices[0]: replica 0 must map each device to itself, "
      "but maps 'h0/gpu0' to 'h0/gpu1'");
  p.data_parallel.replica_devices = {{0, 1, 2, 3, 4}, {5, 0, 0, 0, 5}};
  expect_invalid(
      "replica 1 puts device 'h1/gpu0' on 'h1/gpu1', which replica 1 already uses "
      "for 'h0/gpu0'");
}

TEST_F(PlanValidate, PartitionAndStageDevicesCountAsUsed) {
  p.data_parallel.replicas = 2;
  p.partitions = {{2, 0, {0, 6}}};  // device 6: replica 1 would be 10
  expect_invalid("replica 1 of device 'h1/gpu2' would be device #10");
}

}  // namespace
}  // namespace placer
