#include "src/plan/tensor_parallel.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "src/graph/moe_attrs.h"
#include "src/util/error.h"

namespace placer {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

[[noreturn]] void fail(const std::string& message) {
  throw ValidationError("tensor_parallel: " + message);
}

// Name suffixes per role: Megatron's module names (datasets/gpt.h) first, then the
// Transformer generator's (datasets/synthetic.h) and BERT-style exports.
const char* const kColumn[] = {".query_key_value",
                               ".dense_h_to_4h",
                               ".query",
                               ".key",
                               ".value",
                               ".intermediate.dense",
                               ".linear_q_proj",
                               ".linear_q_up_proj",
                               ".linear_kv_up_proj"};
const char* const kRow[] = {".self_attention.dense", ".dense_4h_to_h", ".attention.output.dense",
                            ".output.dense"};
const char* const kSharded[] = {".rotary", ".bias_gelu", ".swiglu", ".scores", ".softmax",
                                ".context", ".intermediate.gelu"};
// A multi-token-prediction block's eh_proj (2h -> h) is column-split with its output gathered
// in Megatron-core; here every rank runs it whole (2h / vocab of the block's logits' work).
const char* const kReplicated[] = {
    "layernorm",      ".bias_dropout_add",  ".residual", ".position_embeddings",
    ".embedding.add", ".embedding_dropout", "_down_proj", ".eh_proj"};

/// Two partitions of one op that the simulator runs alike (a replicated op's dim is unused).
bool same_partition(const OpPartition& a, const OpPartition& b) {
  auto key = [](const OpPartition& p) {
    return std::tie(p.op, p.devices, p.levels, p.sharded_output, p.sharded_input, p.replicated,
                    p.forward_collective, p.backward_collective);
  };
  return key(a) == key(b) && (a.replicated || a.dim == b.dim);
}

template <size_t N>
bool any_suffix(const std::string& name, const char* const (&list)[N]) {
  for (const char* s : list) {
    if (ends_with(name, s)) return true;
  }
  return false;
}

}  // namespace

const char* to_string(TensorParallelRole r) {
  switch (r) {
    case TensorParallelRole::kColumn: return "column-parallel";
    case TensorParallelRole::kSharded: return "sharded";
    case TensorParallelRole::kRow: return "row-parallel";
    case TensorParallelRole::kReplicated: return "replicated";
    case TensorParallelRole::kVocabEmbedding: return "vocab-parallel embedding";
    case TensorParallelRole::kVocabLoss: return "vocab-parallel cross-entropy";
    case TensorParallelRole::kUnknown: return "unknown";
  }
  return "unknown";
}

TensorParallelRole megatron_role(const Op& op) {
  const std::string& n = op.name;
  if (op.category == OpCategory::kInput) return TensorParallelRole::kReplicated;
  // MoE layers are split by expert parallelism, not by tensor parallelism: each TP rank runs
  // them whole (expert tensor parallelism is the plan's expert_parallel.tensor_parallel).
  for (const auto& attr : op.attrs) {
    if (attr.first == kMoeRoleAttr) return TensorParallelRole::kReplicated;
  }
  // Everything inside the attention core works on the local heads.
  if (contains(n, ".core_attention.")) return TensorParallelRole::kSharded;
  if (any_suffix(n, kRow)) return TensorParallelRole::kRow;
  if (any_suffix(n, kColumn)) return TensorParallelRole::kColumn;
  if (any_suffix(n, kSharded)) return TensorParallelRole::kSharded;
  if (ends_with(n, "word_embeddings") || n == "embedding") return TensorParallelRole::kVocabEmbedding;
  // A multi-token-prediction block's logits come from the output layer too.
  if (n == "output_layer" || n == "lm_head" || ends_with(n, ".output_layer")) {
    return TensorParallelRole::kColumn;
  }
  if (n == "loss") return TensorParallelRole::kVocabLoss;
  if (any_suffix(n, kReplicated) || contains(n, "layernorm") || contains(n, "norm")) {
    return TensorParallelRole::kReplicated;
  }
  return TensorParallelRole::kUnknown;
}

bool needs_tensor_parallel_expansion(const Plan& plan) { return plan.tensor_parallel.enabled(); }

namespace {

// Turns a plan's tensor_parallel section into explicit partitions: every forward op in a
// TP > 1 group gets the partition of its Megatron role (ops the plan partitions are kept).
class TensorParallelExpansion {
 public:
  TensorParallelExpansion(const Plan& plan, const Graph& g, int num_devices)
      : plan_(plan),
        g_(g),
        n_(g.num_ops()),
        degree_(plan.tensor_parallel.degree),
        sp_(plan.tensor_parallel.sequence_parallel),
        out_(plan),
        first_(n_, -1),
        tp_(n_, 1),
        role_(n_, TensorParallelRole::kUnknown),
        sharded_out_(n_, 0),
        reduce_scatter_out_(n_, 0) {
    if (out_.pipeline.enabled()) {
      assign_stage_groups();
    } else {
      assign_device_groups(num_devices);
    }
  }

  Plan run() {
    assign_roles();
    mark_split_outputs();
    for (OpId o = 0; o < n_; ++o) {
      if (role_[o] != TensorParallelRole::kUnknown) out_.partitions.push_back(partition_of(o));
    }
    out_.tensor_parallel = TensorParallelConfig{};
    return out_;
  }

 private:
  // The TP group of every op in a pipeline stage: the first tensor_parallel devices of its
  // stage (a stage without its own degree takes the plan's).
  void assign_stage_groups() {
    for (size_t s = 0; s < out_.pipeline.stages.size(); ++s) {
      PipelineStage& st = out_.pipeline.stages[s];
      if (st.tensor_parallel == 1) st.tensor_parallel = degree_;
      if (st.devices.empty() || st.devices.size() % size_t(st.tensor_parallel) != 0) {
        fail("pipeline.stages[" + std::to_string(s) + "] has " + std::to_string(st.devices.size()) +
             " devices, not a multiple of its tensor-parallel degree " +
             std::to_string(st.tensor_parallel));
      }
      for (OpId o : st.ops) {
        if (o < n_) first_[o] = static_cast<int>(s), tp_[o] = st.tensor_parallel;
      }
    }
  }

  // Without a pipeline an op's group is `degree` devices from its placement on.
  void assign_device_groups(int num_devices) {
    if (out_.placement.size() != n_) fail("the plan's placement does not cover the graph");
    for (OpId o = 0; o < n_; ++o) {
      tp_[o] = degree_;
      if (out_.placement[o] + degree_ > num_devices) {
        fail("op '" + g_.op(o).name + "' is on device " + std::to_string(out_.placement[o]) +
             "; its group of " + std::to_string(degree_) +
             " devices would end past the cluster's " + std::to_string(num_devices));
      }
    }
  }

  std::vector<int> group_of(OpId o) const {
    std::vector<int> devs;
    if (out_.pipeline.enabled()) {
      const PipelineStage& st = out_.pipeline.stages[size_t(first_[o])];
      devs.assign(st.devices.begin(), st.devices.begin() + tp_[o]);
    } else {
      for (int k = 0; k < tp_[o]; ++k) devs.push_back(out_.placement[o] + k);
    }
    return devs;
  }

  // The role of every forward op in a TP > 1 group that the plan does not partition.
  void assign_roles() {
    std::vector<char> explicit_part(n_, 0);
    for (const OpPartition& part : plan_.partitions) {
      if (part.op < n_) explicit_part[part.op] = 1;
    }
    for (OpId o = 0; o < n_; ++o) {
      const Op& op = g_.op(o);
      if (op.phase != Phase::kForward || tp_[o] < 2 || explicit_part[o]) continue;
      role_[o] = megatron_role(op);
      if (role_[o] == TensorParallelRole::kUnknown) {
        fail("op '" + op.name + "' (" + op.type + ", scope '" + op.scope +
             "') matches no Megatron role (column / row / sharded / replicated, "
             "docs/parallelism.md); partition it explicitly in 'partitions'");
      }
    }
  }

  // Under sequence parallelism the replicated ops (except graph inputs) are split on the
  // sequence dim.
  bool seq_split(OpId o) const {
    return sp_ && role_[o] == TensorParallelRole::kReplicated &&
           g_.op(o).category != OpCategory::kInput;
  }

  // A sequence-split op whose first output has no sequence dim (rank < 2): it reduces over
  // the sequence.
  bool reduces_sequence(OpId o) const {
    const Op& op = g_.op(o);
    return !op.outputs.empty() && g_.tensor(op.outputs[0]).shape.size() < 2;
  }

  // Which ops leave their output split across the group, and which reduce-scatter it.
  void mark_split_outputs() {
    for (OpId o = 0; o < n_; ++o) {
      switch (role_[o]) {
        case TensorParallelRole::kColumn:
        case TensorParallelRole::kSharded:
          sharded_out_[o] = 1;
          break;
        case TensorParallelRole::kRow:
        case TensorParallelRole::kVocabEmbedding:
          sharded_out_[o] = sp_;
          reduce_scatter_out_[o] = sp_;
          break;
        default:
          break;
      }
      if (seq_split(o)) sharded_out_[o] = !reduces_sequence(o) && stays_sequence_split(o);
    }
  }

  // A sequence-split op's output stays split unless a consumer needs the whole sequence (a
  // column-parallel input) or sits in another TP group (the next pipeline stage receives the
  // whole tensor).
  bool stays_sequence_split(OpId o) const {
    for (TensorId t : g_.op(o).outputs) {
      for (OpId c : g_.consumers(t)) {
        if (g_.op(c).phase != Phase::kForward) continue;
        if (!seq_split(c) || group_of(c) != group_of(o)) return false;
      }
    }
    return true;
  }

  // The dim a column-parallel or sharded op splits: heads (rank 4) or features (last).
  int split_dim(OpId o) const {
    const Op& op = g_.op(o);
    const std::vector<int64_t>& shape =
        op.outputs.empty() ? std::vector<int64_t>{} : g_.tensor(op.outputs[0]).shape;
    if (shape.size() < 2) {
      fail("op '" + op.name + "' (" + to_string(role_[o]) + ") needs an output shape of rank >= 2");
    }
    return shape.size() == 4 ? 1 : static_cast<int>(shape.size()) - 1;
  }

  OpPartition partition_of(OpId o) const {
    OpPartition q;
    q.op = o;
    q.devices = group_of(o);
    bool reads_shards = false, reads_scattered = false;
    for (TensorId t : g_.op(o).inputs) {
      const OpId pr = g_.tensor(t).producer;
      if (pr == kNoOp || pr >= n_) continue;
      if (sharded_out_[pr] && group_of(pr) == q.devices) reads_shards = true;
      if (reduce_scatter_out_[pr]) reads_scattered = true;
    }
    switch (role_[o]) {
      case TensorParallelRole::kColumn:
        q.dim = split_dim(o);
        q.sharded_output = true;
        q.sharded_input = reads_shards;
        if (sp_) q.backward_collective = PartitionCollective::kReduceScatter;
        break;
      case TensorParallelRole::kSharded:
        q.dim = split_dim(o);
        q.sharded_input = reads_shards;
        q.sharded_output = true;
        break;
      case TensorParallelRole::kRow:
      case TensorParallelRole::kVocabEmbedding:
        q.dim = OpPartition::kReduceDim;
        q.sharded_input = reads_shards;
        if (sp_) {
          q.sharded_output = true;
          q.forward_collective = PartitionCollective::kReduceScatter;
        }
        break;
      case TensorParallelRole::kVocabLoss:
        q.dim = OpPartition::kReduceDim;
        q.sharded_input = reads_shards;
        break;
      case TensorParallelRole::kReplicated:
        set_replicated_partition(o, reads_shards, reads_scattered, &q);
        break;
      case TensorParallelRole::kUnknown:
        break;
    }
    return q;
  }

  // A replicated op, or under sequence parallelism one split on the sequence dim.
  void set_replicated_partition(OpId o, bool reads_shards, bool reads_scattered,
                                OpPartition* q) const {
    if (!seq_split(o)) {
      q->replicated = true;
      return;
    }
    q->sharded_input = reads_shards;
    if (reduces_sequence(o)) {
      // A reduction over the sequence (MoE's load-balancing loss): each rank reduces its
      // sequence shard, the partial results are all-reduced.
      q->dim = OpPartition::kReduceDim;
      return;
    }
    q->dim = 1;
    q->sharded_output = sharded_out_[o];
    q->forward_collective =
        sharded_out_[o] ? PartitionCollective::kNone : PartitionCollective::kAllGather;
    q->backward_collective =
        reads_scattered ? PartitionCollective::kAllGather : PartitionCollective::kNone;
  }

  const Plan& plan_;
  const Graph& g_;
  const size_t n_;
  const int degree_;
  const bool sp_;
  Plan out_;
  std::vector<int> first_, tp_;  // the TP group of every op: stage (or device), degree
  std::vector<TensorParallelRole> role_;
  std::vector<uint8_t> sharded_out_, reduce_scatter_out_;
};

}  // namespace

Plan expand_tensor_parallel(const Plan& plan, const Graph& g, int num_devices) {
  if (!plan.tensor_parallel.enabled()) return plan;
  return TensorParallelExpansion(plan, g, num_devices).run();
}

std::optional<Plan> as_tensor_parallel_shorthand(const Plan& plan, const Graph& g,
                                                 int num_devices) {
  if (plan.tensor_parallel.enabled() || !plan.pipeline.enabled()) return std::nullopt;
  const int degree = plan.pipeline.stages.front().tensor_parallel;
  if (degree < 2) return std::nullopt;
  for (const PipelineStage& st : plan.pipeline.stages) {
    if (st.tensor_parallel != degree) return std::nullopt;
  }
  std::map<OpId, const OpPartition*> mine;
  for (const OpPartition& p : plan.partitions) mine[p.op] = &p;
  if (mine.size() != plan.partitions.size()) return std::nullopt;  // an op partitioned twice
  Plan shorthand = plan;
  shorthand.partitions.clear();
  shorthand.tensor_parallel.degree = degree;
  shorthand.tensor_parallel.sequence_parallel = false;
  auto expand = [&](std::vector<OpPartition>* parts) {
    try {
      *parts = expand_tensor_parallel(shorthand, g, num_devices).partitions;
      return true;
    } catch (const ValidationError&) {
      return false;  // an op the shorthand cannot name: not Megatron's sharding
    }
  };
  std::vector<OpPartition> megatron;
  if (!expand(&megatron)) return std::nullopt;
  // Every linear of the layers must be Megatron's; the other ops that differ (the embedding
  // and head included) or that the shorthand leaves alone stay explicit.
  std::set<OpId> megatrons;
  for (const OpPartition& q : megatron) {
    const auto it = mine.find(q.op);
    if (it == mine.end()) return std::nullopt;  // the shorthand would partition it
    if (same_partition(*it->second, q)) {
      megatrons.insert(q.op);
      continue;
    }
    const TensorParallelRole r = megatron_role(g.op(q.op));
    if (g.op(q.op).layer >= 0 &&
        (r == TensorParallelRole::kColumn || r == TensorParallelRole::kRow)) {
      return std::nullopt;
    }
  }
  for (const OpPartition& p : plan.partitions) {
    if (megatrons.count(p.op) == 0) shorthand.partitions.push_back(p);
  }
  // The ops kept explicit must not change what the shorthand gives their neighbours.
  std::vector<OpPartition> mixed;
  if (!expand(&mixed) || mixed.size() != plan.partitions.size()) return std::nullopt;
  for (const OpPartition& q : mixed) {
    const auto it = mine.find(q.op);
    if (it == mine.end() || !same_partition(*it->second, q)) return std::nullopt;
  }
  return shorthand;
}

}  // namespace placer
