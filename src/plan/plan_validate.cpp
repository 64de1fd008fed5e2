// Plan::validate: the checks a plan must pass before it is simulated or written.
// Messages name the plan field, the op and the devices ("pipeline.stages[2]: op 'fc1' is
// also in stage 0"); file readers prefix the file name.

#include <algorithm>
#include <string>
#include <vector>

#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/plan/parallel_layouts.h"
#include "src/plan/plan.h"
#include "src/plan/tensor_parallel.h"
#include "src/util/error.h"

namespace placer {

namespace {

/// The most micro-batches a plan may have (also at most the graph's batch): the simulator's
/// events grow with their number (1,000,000 ran for minutes), and no schedule needs more.
constexpr int kMaxMicroBatches = 16384;

[[noreturn]] void fail(const std::string& field, const std::string& message) {
  throw ValidationError(format_context("", field, message));
}

std::string idx(const std::string& field, size_t i) {
  return field + "[" + std::to_string(i) + "]";
}

/// Ops that can be split along a contraction (reduction) dimension.
bool has_reduce_dim(OpCategory c) {
  return c == OpCategory::kMatMul || c == OpCategory::kConv || c == OpCategory::kReduction ||
         c == OpCategory::kEmbedding;  // a vocabulary-split table leaves partial sums
}

class Validator {
 public:
  Validator(const Plan& p, const Graph& g, const Cluster& c)
      : p_(p), g_(g), c_(c), nd_(c.num_devices()), used_(nd_, 0) {}

  void run() {
    placement();
    partitions();
    pipeline();
    data_parallel();
    fsdp();
    tensor_parallel_stages();
    if (p_.recompute_every < 1) {
      fail("recompute_every", "must be >= 1 (got " + std::to_string(p_.recompute_every) + ")");
    }
  }

 private:
  std::string dev(int d) const {
    return (d >= 0 && d < nd_) ? "'" + c_.device(d).name + "'" : "#" + std::to_string(d);
  }
  std::string op(OpId o) const { return "'" + g_.op(o).name + "'"; }

  /// Throws unless 0 <= d < num_devices; marks d used.
  void check_device(int d, const std::string& field, const std::string& what) {
    if (d < 0 || d >= nd_) {
      fail(field, what + "device " + std::to_string(d) + " is out of range (cluster '" + c_.name +
                      "' has " + std::to_string(nd_) + " devices: 0.." + std::to_string(nd_ - 1) +
                      ")");
    }
    used_[d] = 1;
  }

  void check_device_list(const std::vector<int>& devices, const std::string& field,
                         const std::string& what) {
    for (size_t i = 0; i < devices.size(); ++i) {
      check_device(devices[i], field, what);
      for (size_t j = 0; j < i; ++j) {
        if (devices[j] == devices[i])
          fail(field, what + "device " + dev(devices[i]) + " is listed twice");
      }
    }
  }

  void placement() {
    if (p_.placement.size() != g_.num_ops()) {
      fail("placement", "has " + std::to_string(p_.placement.size()) + " entries, but graph '" +
                            g_.name() + "' has " + std::to_string(g_.num_ops()) + " ops");
    }
    for (OpId i = 0; i < p_.placement.size(); ++i) {
      const int d = p_.placement[i];
      if (d < 0 || d >= nd_) {
        fail("placement", "op " + op(i) + " is on device " + std::to_string(d) +
                              ", out of range (cluster '" + c_.name + "' has " +
                              std::to_string(nd_) + " devices: 0.." + std::to_string(nd_ - 1) +
                              ")");
      }
      used_[d] = 1;
    }
  }

  void partitions() {
    std::vector<int> part_of(g_.num_ops(), -1);
    for (size_t k = 0; k < p_.partitions.size(); ++k) {
      const OpPartition& part = p_.partitions[k];
      const std::string f = idx("partitions", k);
      if (part.op >= g_.num_ops()) {
        fail(f, "op #" + std::to_string(part.op) + " does not exist (graph '" + g_.name() +
                    "' has " + std::to_string(g_.num_ops()) + " ops)");
      }
      const Op& o = g_.op(part.op);
      if (o.phase != Phase::kForward) {
        fail(f, "op " + op(part.op) + " is a " + to_string(o.phase) +
                    " op; partition its forward op (backward ops follow it)");
      }
      if (part_of[part.op] >= 0) {
        fail(f, "op " + op(part.op) + " is already partitioned by " +
                    idx("partitions", size_t(part_of[part.op])));
      }
      part_of[part.op] = int(k);
      if (part.devices.size() < 2) {
        fail(f, "op " + op(part.op) + " is split over " + std::to_string(part.devices.size()) +
                    " device(s); a partition needs at least 2");
      }
      check_device_list(part.devices, f, "op " + op(part.op) + ": ");
      const size_t degree = part.devices.size();
      if (part.replicated) {
        if (!part.levels.empty() || part.sharded_output || part.sharded_input ||
            part.forward_collective != PartitionCollective::kAuto ||
            part.backward_collective != PartitionCollective::kAuto) {
          fail(f, "op " + op(part.op) + " is replicated: it takes no levels, sharded_output, "
                  "sharded_input or collectives");
        }
        continue;
      }
      if (part.forward_collective == PartitionCollective::kReduceScatter && !part.sharded_output) {
        fail(f, "op " + op(part.op) + ": a reduce_scatter forward collective leaves the output "
                "split; set sharded_output: true");
      }
      if (part.levels.empty()) {
        check_dim(part, part.dim, degree, f);
        continue;
      }
      // Recursive halving: 2^L devices, each level splits its dim in two.
      const size_t nl = part.levels.size();
      if (nl >= 31 || degree != (size_t(1) << nl)) {
        fail(f, "op " + op(part.op) + " has " + std::to_string(nl) + " level(s) but " +
                    std::to_string(degree) + " devices; recursive halving needs exactly 2^" +
                    std::to_string(nl) + " devices");
      }
      if (part.dim != part.levels[0]) {
        fail(f, "dim " + std::to_string(part.dim) + " differs from levels[0] = " +
                    std::to_string(part.levels[0]));
      }
      for (size_t l = 0; l < nl; ++l) {
        // Ways the dim is split by all levels up to here (a dim may be halved repeatedly).
        size_t ways = 1;
        for (size_t m = 0; m <= l; ++m) ways *= part.levels[m] == part.levels[l] ? 2 : 1;
        check_dim(part, part.levels[l], ways, idx(f + ".levels", l));
      }
    }
    sharded_chains(part_of);
  }

  // sharded_output / sharded_input: single-level partitions whose sharded outputs are read
  // only by forward ops partitioned over the same devices that read shards.
  void sharded_chains(const std::vector<int>& part_of) {
    for (size_t k = 0; k < p_.partitions.size(); ++k) {
      const OpPartition& part = p_.partitions[k];
      const std::string f = idx("partitions", k);
      if ((part.sharded_output || part.sharded_input) && !part.levels.empty()) {
        fail(f, "op " + op(part.op) + ": sharded_output / sharded_input need a single-level "
                "partition (no 'levels')");
      }
      bool reads_shards = false;
      for (TensorId t : g_.op(part.op).inputs) {
        const OpId pr = g_.tensor(t).producer;
        if (pr != kNoOp && part_of[pr] >= 0 && p_.partitions[size_t(part_of[pr])].sharded_output) {
          reads_shards = true;
        }
      }
      if (part.sharded_input && !reads_shards) {
        fail(f, "op " + op(part.op) + " has sharded_input but no input comes from a "
                "sharded_output partition");
      }
      if (!part.sharded_output) continue;
      for (TensorId t : g_.op(part.op).outputs) {
        for (OpId c : g_.consumers(t)) {
          if (g_.op(c).phase != Phase::kForward) continue;
          const int ck = part_of[c];
          if (ck < 0 || p_.partitions[size_t(ck)].devices != part.devices ||
              !p_.partitions[size_t(ck)].sharded_input) {
            fail(f, "op " + op(part.op) + " has sharded_output but its consumer " + op(c) +
                        " is not partitioned over the same devices with sharded_input");
          }
        }
      }
    }
  }

  // One split of `dim` of the partitioned op into `degree` parts.
  void check_dim(const OpPartition& part, int dim, size_t degree, const std::string& f) {
    const Op& o = g_.op(part.op);
    if (dim == OpPartition::kReduceDim) {
      // A loss over a vocabulary-split input (Megatron's vocab-parallel cross-entropy)
      // leaves partial sums too.
      const bool vocab_loss = part.sharded_input && o.category == OpCategory::kSoftmax;
      if (!has_reduce_dim(o.category) && !vocab_loss) {
        fail(f, "op " + op(part.op) + " (" + o.type + ", " + to_string(o.category) +
                    ") has no reduction dimension to split; split an output dim instead");
      }
      return;
    }
    if (dim < 0) {
      fail(f, "bad dim " + std::to_string(dim) + " for op " + op(part.op) +
                  " (use 0, 1, ... or 'reduce')");
    }
    if (o.outputs.empty()) fail(f, "op " + op(part.op) + " has no output to split");
    const Tensor& t = g_.tensor(o.outputs[0]);
    if (t.shape.empty()) {
      // No shape: unknown (graphs built from sizes only), or a scalar, which has no dim.
      // (dim 0 stays allowed: a batch split of a loss reduces each device's share.)
      if (dim >= 1 && t.bytes <= uint64_t(dtype_bytes(t.dtype))) {
        fail(f, "dim " + std::to_string(dim) + ": output '" + t.name + "' of op " + op(part.op) +
                    " is a scalar; it has no dimension " + std::to_string(dim) + " to split");
      }
      return;
    }
    const size_t rank = t.shape.size();
    if (size_t(dim) >= rank) {
      fail(f, "dim " + std::to_string(dim) + " is out of range: output '" + t.name +
                  "' of op " + op(part.op) + " has rank " + std::to_string(rank) + " (dims 0.." +
                  std::to_string(rank - 1) + ", or 'reduce')");
    }
    const int64_t size = t.shape[size_t(dim)];
    if (size > 0 && size_t(size) < degree) {
      fail(f, "dim " + std::to_string(dim) + " of output '" + t.name + "' of op " +
                  op(part.op) + " has size " + std::to_string(size) + "; it cannot be split " +
                  std::to_string(degree) + " ways");
    }
  }

  void pipeline() {
    const PipelineConfig& pipe = p_.pipeline;
    if (pipe.micro_batches < 1) {
      fail("pipeline.micro_batches",
           "must be >= 1 (got " + std::to_string(pipe.micro_batches) + ")");
    }
    // Each micro-batch needs a sample; the simulator's work grows with their number.
    const int64_t batch = g_.batch_size();
    if (batch > 0 && pipe.micro_batches > batch) {
      fail("pipeline.micro_batches",
           std::to_string(pipe.micro_batches) + " micro-batches, more than the batch of graph '" +
               g_.name() + "' (" + std::to_string(batch) +
               " samples; each micro-batch needs at least one)");
    }
    if (pipe.micro_batches > kMaxMicroBatches) {
      fail("pipeline.micro_batches", std::to_string(pipe.micro_batches) +
                                         " micro-batches, more than the " +
                                         std::to_string(kMaxMicroBatches) + " placer simulates");
    }
    if (!pipe.enabled()) return;
    std::vector<int> stage_of(g_.num_ops(), -1);
    for (size_t s = 0; s < pipe.stages.size(); ++s) {
      const PipelineStage& st = pipe.stages[s];
      const std::string f = idx("pipeline.stages", s);
      if (st.devices.empty()) fail(f, "stage " + std::to_string(s) + " has no devices");
      if (st.tensor_parallel < 1 || st.devices.size() % size_t(st.tensor_parallel) != 0) {
        fail(f + ".tensor_parallel",
             "stage " + std::to_string(s) + " has " + std::to_string(st.devices.size()) +
                 " devices, not a multiple of tensor_parallel " +
                 std::to_string(st.tensor_parallel) +
                 " (devices form a tensor_parallel x data-parallel grid)");
      }
      check_device_list(st.devices, f, "");
      if (st.ops.empty()) fail(f, "stage " + std::to_string(s) + " has no ops");
      for (OpId o : st.ops) {
        if (o >= g_.num_ops()) {
          fail(f, "op #" + std::to_string(o) + " does not exist (graph '" + g_.name() + "' has " +
                      std::to_string(g_.num_ops()) + " ops)");
        }
        if (g_.op(o).phase != Phase::kForward) {
          fail(f, "op " + op(o) + " is a " + to_string(g_.op(o).phase) +
                      " op; stages list forward ops only (their backward and optimizer ops "
                      "follow them)");
        }
        if (stage_of[o] == int(s)) fail(f, "op " + op(o) + " is listed twice in this stage");
        if (stage_of[o] >= 0) {
          fail(f, "op " + op(o) + " is also in stage " + std::to_string(stage_of[o]) +
                      " (stages must not overlap)");
        }
        stage_of[o] = int(s);
      }
    }
    for (OpId o = 0; o < g_.num_ops(); ++o) {
      if (g_.op(o).phase == Phase::kForward && stage_of[o] < 0) {
        fail("pipeline.stages", "forward op " + op(o) + " is in no stage");
      }
    }
    virtual_stages();
  }

  // Interleaved 1F1B: v chunks per rank; stage s shares the devices of stage s % ranks.
  void virtual_stages() {
    const PipelineConfig& pipe = p_.pipeline;
    const int v = pipe.virtual_stages;
    if (v == 1) return;
    const int n = static_cast<int>(pipe.stages.size());
    if (v < 1 || n % v != 0) {
      fail("pipeline.virtual_stages", "must divide the " + std::to_string(n) +
                                          " stages (got " + std::to_string(v) + ")");
    }
    if (pipe.schedule != PipelineSchedule::k1F1B) {
      fail("pipeline.virtual_stages", "interleaving needs schedule 1f1b");
    }
    const int ranks = n / v;
    if (pipe.micro_batches % ranks != 0) {
      fail("pipeline.micro_batches", "interleaved 1F1B needs a multiple of the " +
                                         std::to_string(ranks) + " pipeline ranks (got " +
                                         std::to_string(pipe.micro_batches) + ")");
    }
    for (int s = ranks; s < n; ++s) {
      const PipelineStage& a = pipe.stages[size_t(s)];
      const PipelineStage& b = pipe.stages[size_t(s % ranks)];
      if (a.devices != b.devices || a.tensor_parallel != b.tensor_parallel) {
        fail(idx("pipeline.stages", size_t(s)) + ".devices",
             "with virtual_stages " + std::to_string(v) + ", stage " + std::to_string(s) +
                 " runs on rank " + std::to_string(s % ranks) +
                 " and must have the devices and tensor_parallel of stage " +
                 std::to_string(s % ranks));
      }
    }
  }

  // Stage grids: the partitions of a stage's ops use the stage's first TP group; a stage of
  // several devices that are data-parallel copies must not also hold a partition over them
  // (that is tensor parallelism spelled ambiguously).
  void tensor_parallel_stages() {
    const PipelineConfig& pipe = p_.pipeline;
    if (p_.tensor_parallel.enabled()) {
      try {
        const Plan expanded = expand_tensor_parallel(p_, g_, nd_);
        Validator(expanded, g_, c_).run();
      } catch (const ValidationError& e) {
        const std::string m = e.what();
        throw ValidationError(m.rfind("tensor_parallel", 0) == 0 ? m : "tensor_parallel: " + m);
      }
      return;
    }
    if (!pipe.enabled()) return;
    std::vector<int> stage_of(g_.num_ops(), -1);
    for (size_t s = 0; s < pipe.stages.size(); ++s) {
      for (OpId o : pipe.stages[s].ops) stage_of[o] = int(s);
    }
    for (size_t k = 0; k < p_.partitions.size(); ++k) {
      const OpPartition& part = p_.partitions[k];
      const int s = stage_of[part.op];
      if (s < 0) continue;
      const PipelineStage& st = pipe.stages[size_t(s)];
      const std::string f = idx("partitions", k);
      if (st.tensor_parallel > 1) {
        const std::vector<int> group(st.devices.begin(), st.devices.begin() + st.tensor_parallel);
        if (part.devices != group) {
          fail(f, "op " + op(part.op) + " is in stage " + std::to_string(s) +
                      " (tensor_parallel " + std::to_string(st.tensor_parallel) +
                      "), so it must be partitioned over the stage's first TP group, its first " +
                      std::to_string(st.tensor_parallel) + " devices");
        }
      }
    }
  }

  void data_parallel() {
    const DataParallelConfig& dp = p_.data_parallel;
    const std::string f = "data_parallel";
    if (dp.replicas < 1) {
      fail(f + ".replicas", "must be >= 1 (got " + std::to_string(dp.replicas) + ")");
    }
    if (dp.replicas > nd_) {
      fail(f + ".replicas", std::to_string(dp.replicas) + " replicas do not fit cluster '" +
                                c_.name + "' with " + std::to_string(nd_) + " devices");
    }
    if (dp.bucket_bytes == 0) fail(f + ".bucket_size", "must be > 0");
    if (dp.zero_stage < 0 || dp.zero_stage > 3) {
      fail(f + ".zero_stage", "must be 0, 1, 2 or 3 (got " + std::to_string(dp.zero_stage) + ")");
    }
    if (!dp.replica_devices.empty()) {
      const std::string rf = f + ".replica_devices";
      if (dp.replica_devices.size() != size_t(dp.replicas)) {
        fail(rf, "has " + std::to_string(dp.replica_devices.size()) +
                     " rows, expected one per "
                     "replica (" +
                     std::to_string(dp.replicas) + ")");
      }
      for (size_t r = 0; r < dp.replica_devices.size(); ++r) {
        const std::vector<int>& row = dp.replica_devices[r];
        const std::string ef = idx(rf, r);
        for (int d = 0; d < nd_; ++d) {
          if (!used_[d]) continue;
          if (size_t(d) >= row.size()) {
            fail(ef, "has " + std::to_string(row.size()) + " entries, but the plan uses device " +
                         dev(d) + " (#" + std::to_string(d) + "), which needs one");
          }
          const int rd = row[size_t(d)];
          if (rd < 0 || rd >= nd_) {
            fail(ef, "maps device " + dev(d) + " to device " + std::to_string(rd) +
                         ", out of range (cluster '" + c_.name + "' has " + std::to_string(nd_) +
                         " devices: 0.." + std::to_string(nd_ - 1) + ")");
          }
          if (r == 0 && rd != d) {
            fail(ef,
                 "replica 0 must map each device to itself, but maps " + dev(d) + " to " + dev(rd));
          }
        }
      }
    }
    if (dp.replicas == 1) return;
    // Every (replica, used device) pair needs a distinct device of the cluster.
    std::vector<std::pair<int, int>> owner(nd_, {-1, -1});  // device -> (replica, device)
    const int stride = nd_ / dp.replicas;
    for (int r = 0; r < dp.replicas; ++r) {
      for (int d = 0; d < nd_; ++d) {
        if (!used_[d]) continue;
        const int rd = p_.replica_device(d, r, nd_);
        if (rd < 0 || rd >= nd_) {
          fail(f, "replica " + std::to_string(r) + " of device " + dev(d) + " would be device #" +
                      std::to_string(rd) + ", beyond cluster '" + c_.name + "' (" +
                      std::to_string(nd_) + " devices; the default map is d + r * " +
                      std::to_string(stride) + ": use devices 0.." + std::to_string(stride - 1) +
                      " or give replica_devices)");
        }
        if (owner[rd].first >= 0) {
          fail(f, "replica " + std::to_string(r) + " puts device " + dev(d) + " on " + dev(rd) +
                      ", which replica " + std::to_string(owner[rd].first) + " already uses for " +
                      dev(owner[rd].second));
        }
        owner[rd] = {r, d};
      }
    }
  }

  // FSDP needs sharded parameters, and an HSDP shard group must tile every data-parallel
  // group (R replicas x a stage's data-parallel copies).
  void fsdp() {
    const FsdpConfig& fs = p_.data_parallel.fsdp;
    if (!fs.enabled) return;
    const std::string f = "data_parallel.fsdp";
    if (p_.data_parallel.zero_stage != 3) {
      fail(f, "needs zero_stage 3 (got " + std::to_string(p_.data_parallel.zero_stage) + ")");
    }
    if (fs.forward_prefetch < 0) fail(f + ".forward_prefetch", "must be >= 0");
    if (fs.backward_prefetch < 0) fail(f + ".backward_prefetch", "must be >= 0");
    if (fs.shard_group < 0) fail(f + ".shard_group", "must be >= 0 (0 = the whole group)");
    if (fs.shard_group <= 1) return;
    std::vector<int> sizes;
    for (const PipelineStage& st : p_.pipeline.stages)
      sizes.push_back(p_.data_parallel.replicas * st.data_parallel());
    if (sizes.empty()) sizes.push_back(p_.data_parallel.replicas);
    for (int n : sizes) {
      if (n % fs.shard_group != 0) {
        fail(f + ".shard_group", std::to_string(fs.shard_group) +
                                     " does not divide the data-parallel group of " +
                                     std::to_string(n) + " devices");
      }
    }
  }

  const Plan& p_;
  const Graph& g_;
  const Cluster& c_;
  const int nd_;
  std::vector<uint8_t> used_;
};

}  // namespace

void Plan::validate(const Graph& g, const Cluster& c) const {
  Validator(*this, g, c).run();
  validate_parallel_layouts(*this, g);
  if (!synchronization.enabled) return;
  // The per-variable sync model (simulator/sync_strategies.h) covers plain data parallelism.
  if (pipeline.enabled() || !partitions.empty() || tensor_parallel.enabled() ||
      data_parallel.zero_stage > 0) {
    fail("synchronization", "per-variable strategies need plain data parallelism (no pipeline, "
                            "partitions, tensor parallelism or ZeRO)");
  }
  validate_synchronization(synchronization, g, c);
}

std::vector<std::string> plan_warnings(const Plan& p, const Graph& g) {
  std::vector<std::string> out;
  const PipelineConfig& pipe = p.pipeline;
  if (!pipe.enabled() || p.tensor_parallel.enabled()) return out;
  std::vector<int> stage_of(g.num_ops(), -1);
  for (size_t s = 0; s < pipe.stages.size(); ++s) {
    for (OpId o : pipe.stages[s].ops) {
      if (o < g.num_ops()) stage_of[o] = int(s);
    }
  }
  for (size_t k = 0; k < p.partitions.size(); ++k) {
    const OpPartition& part = p.partitions[k];
    if (part.op >= g.num_ops() || stage_of[part.op] < 0) continue;
    const size_t s = size_t(stage_of[part.op]);
    const PipelineStage& st = pipe.stages[s];
    if (st.tensor_parallel != 1 || st.devices.size() < 2) continue;
    for (int d : part.devices) {
      if (d != st.devices[0] && std::find(st.devices.begin(), st.devices.end(), d) != st.devices.end()) {
        out.push_back(idx("partitions", k) + ": op '" + g.op(part.op).name +
                      "' is partitioned over devices of pipeline stage " + std::to_string(s) +
                      ", whose " + std::to_string(st.devices.size()) +
                      " devices are data-parallel copies (tensor_parallel: 1): simulated as "
                      "data parallelism; set the stage's tensor_parallel to mean tensor "
                      "parallelism");
        break;
      }
    }
  }
  return out;
}

}  // namespace placer
