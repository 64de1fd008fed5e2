// The Megatron configuration space (agents/common/megatron_space.h): the transformer's shape,
// the context- and expert-parallel degrees, and the analytic estimates.
#include "agents/common/megatron_space.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "agents/common/outcome.h"
#include "simulator/context_parallel.h"
#include "src/graph/moe_attrs.h"
#include "src/plan/parallel_layouts.h"
#include "src/plan/tensor_parallel.h"
#include "src/util/error.h"

namespace placer {

namespace {

[[noreturn]] void fail(const std::string& m) { throw Error("megatron: " + m); }

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

std::vector<int> divisors_of(int n) {
  std::vector<int> d;
  for (int k = 1; k <= n; ++k) {
    if (n % k == 0) d.push_back(k);
  }
  return d;
}

namespace {

/// Whether TP splits the op's work (the rest, norms and residual adds, runs whole on every
/// TP rank unless sequence parallelism splits it along the sequence).
bool split_by_tp(const Op& op) {
  switch (megatron_role(op)) {
    case TensorParallelRole::kColumn:
    case TensorParallelRole::kSharded:
    case TensorParallelRole::kRow:
    case TensorParallelRole::kVocabEmbedding:
    case TensorParallelRole::kVocabLoss:
      return true;
    default:
      return false;
  }
}

/// Whether a forward op is a routed expert's (its generator marks it with the layer's
/// expert count): its parameters are spread over the EP x ETP ranks, not the TP ranks.
bool is_expert_op(const Op& op) {
  for (const auto& [key, value] : op.attrs) {
    if (key == kMoeExpertsAttr) return true;
  }
  return false;
}

/// Whether a forward op is an MoE dispatch or combine (an all-to-all under EP).
bool is_all_to_all_op(const Op& op) {
  for (const auto& [key, value] : op.attrs) {
    if (key == kMoeRoleAttr) return value == kMoeDispatch || value == kMoeCombine;
  }
  return false;
}

bool is_attention_op(const Op& op) {
  return op.category == OpCategory::kAttention || has(op.name, ".core_attention.");
}

/// Where a forward op sits relative to the layers: before them (embedding), in layer 0 (the
/// representative layer: all layers of a generated transformer are alike), in another
/// layer, or after them (final norm, head, loss).
enum class Part { kPre, kLayer0, kOtherLayer, kPost };

/// The per-op facts the estimates use, gathered once per graph.
class Estimator {
 public:
  explicit Estimator(const Problem& p) : p_(p), g_(p.graph), shape_(transformer_shape(p.graph)) {
    part_.assign(g_.num_ops(), Part::kPre);
    bool seen_layer = false;
    for (OpId o : g_.topo_order()) {
      const Op& op = g_.op(o);
      if (op.phase != Phase::kForward) continue;
      if (op.layer >= 0) {
        seen_layer = true;
        part_[o] = op.layer == 0 ? Part::kLayer0 : Part::kOtherLayer;
      } else {
        part_[o] = seen_layer ? Part::kPost : Part::kPre;
      }
    }
    for (OpId o = 0; o < g_.num_ops(); ++o) {
      const Op& op = g_.op(o);
      const OpId f = op.forward_op;
      if (op.phase != Phase::kForward && f < g_.num_ops()) part_[o] = part_[f];
      const int k = static_cast<int>(part_[o]);
      const bool expert =
          is_expert_op(op.phase != Phase::kForward && f < g_.num_ops() ? g_.op(f) : op);
      (expert ? expert_params_ : params_)[k] += static_cast<double>(op.param_bytes);
      (expert ? expert_state_ : state_)[k] += static_cast<double>(op.state_bytes);
      if (op.phase != Phase::kForward) continue;
      if (part_[o] == Part::kLayer0 && is_all_to_all_op(op) && !op.outputs.empty()) {
        moe_a2a_bytes_ += static_cast<double>(g_.tensor(op.outputs[0]).bytes);
      }
      if (part_[o] == Part::kLayer0 && op.category == OpCategory::kAttention &&
          !op.outputs.empty()) {
        attention_out_ = static_cast<double>(g_.tensor(op.outputs[0]).bytes);
        kv_share_ = kv_heads_share(op);
      }
      for (TensorId t : op.outputs) {
        const double b = static_cast<double>(g_.tensor(t).bytes);
        if (part_[o] == Part::kLayer0 && megatron_role(op) == TensorParallelRole::kRow) {
          row_out_ += b;  // the all-reduced activations of one layer
        }
        // Activations kept for backward (only what a backward op reads), per TP rank: split
        // ops hold 1/tp of theirs.
        bool read_by_backward = false;
        for (OpId c : g_.consumers(t)) read_by_backward |= g_.op(c).phase == Phase::kBackward;
        if (!read_by_backward) continue;
        (split_by_tp(op) ? act_split_ : act_whole_)[k] += b;
        if (part_[o] == Part::kLayer0 && has(op.name, ".core_attention.")) attention_act_ += b;
      }
    }
    device0_ = problem_devices(p).front();
    memory_ = static_cast<double>(p.cluster.device(device0_).spec.memory_bytes);
  }

  const TransformerShape& shape() const { return shape_; }

  MegatronCandidate estimate(const MegatronConfig& m) const {
    MegatronCandidate c;
    c.config = m;
    const int M = megatron_micro_batches(m);
    const int chunks = m.pp * m.virtual_stages;
    const double layers_per_chunk = double(shape_.layers) / chunks;
    const double mb_frac = double(m.micro_batch) / shape_.global_batch;
    const bool full = m.recompute == Recompute::kFull;
    const bool selective = m.recompute == Recompute::kSelective;

    // Time of one micro-batch through one chunk of layers (forward, backward, recompute,
    // TP all-reduces: 2 forward, 2 backward, 2 more when the forward is recomputed).
    // Context parallelism: every rank computes 1/cp of the micro-batch's tokens.
    const double tokens = mb_frac / m.cp;
    const PartTimes& lt = times(Part::kLayer0, m);
    double layer = lt.forward + lt.backward + (full ? lt.forward : selective ? lt.attention : 0);
    if (m.tp > 1) layer += (full ? 6 : 4) * tp_all_reduce(m.tp, row_out_ * tokens);
    layer += (full ? 2 : 1) * ring_exchange(m, lt, false) + ring_exchange(m, lt, true);
    layer += (full ? 3 : 2) * expert_all_to_all(m);
    const PartTimes& pre = times(Part::kPre, m);
    const PartTimes& post = times(Part::kPost, m);
    const double first_rank =
        m.virtual_stages * layers_per_chunk * layer + pre.forward + pre.backward;
    const double last_rank =
        m.virtual_stages * layers_per_chunk * layer + post.forward + post.backward;
    const double per_mb = std::max(first_rank, last_rank);
    double step = (M + double(m.pp - 1) / m.virtual_stages) * per_mb;
    if (m.pp > 1) {
      const int next = device0_ + m.tp * m.cp * m.dp;
      step += 2.0 * (M + m.pp - 1) *
              p_.cost.transfer_time(device0_, next, uint64_t(row_out_ * tokens / 2));
    }
    // Gradient all-reduce over the cp x dp copies (not overlapped: Megatron's default) and
    // the optimizer step, on the rank with the most parameters.
    const int copies = m.cp * m.dp;
    const double grads =
        (std::max(params_[0], params_[3]) + params_[1] * layers_per_chunk * m.virtual_stages) /
        m.tp;
    if (copies > 1) {
      std::vector<int> group;
      for (int r = 0; r < copies; ++r) group.push_back(device0_ + r * m.tp);
      step += p_.cost.collective_time(CollectiveKind::kAllReduce, group, uint64_t(grads),
                                      SyncScheme::kAuto);
    }
    step += (lt.optimizer * layers_per_chunk * m.virtual_stages +
             std::max(pre.optimizer, post.optimizer)) /
            (m.zero_stage >= 1 ? copies : 1);
    c.step_seconds = step;
    c.memory_bytes = peak_memory(m, M);
    return c;
  }

  double device_memory() const { return memory_; }

 private:
  struct PartTimes {
    double forward = 0, backward = 0, optimizer = 0, attention = 0, attention_backward = 0;
  };

  /// Exposed seconds of one layer's ring attention (forward or backward) for one
  /// micro-batch: the simulator's formula with the KV chunk sent to the next CP rank.
  double ring_exchange(const MegatronConfig& m, const PartTimes& lt, bool backward) const {
    if (m.cp < 2) return 0;
    const double tokens = double(m.micro_batch) / shape_.global_batch / m.cp;
    const double kv = 2 * attention_out_ * kv_share_ * tokens / m.tp;
    const double x = p_.cost.transfer_time(device0_, device0_ + m.tp, uint64_t(kv));
    const double c = (backward ? lt.attention_backward : lt.attention) / m.cp;
    return context_parallel_p2p_exposed(m.cp, c, x, backward);
  }

  /// Seconds of one layer's expert-parallel all-to-alls (dispatch and combine) in one
  /// direction for one micro-batch, over the EP ranks of Megatron-core's expert grid
  /// (etp apart).
  double expert_all_to_all(const MegatronConfig& m) const {
    if (m.ep < 2 || moe_a2a_bytes_ == 0) return 0;
    const double tokens = double(m.micro_batch) / shape_.global_batch / m.cp;
    std::vector<int> group;
    for (int k = 0; k < m.ep; ++k) group.push_back(device0_ + k * m.etp);
    return p_.cost.collective_time(CollectiveKind::kAllToAll, group,
                                   uint64_t(moe_a2a_bytes_ * tokens), SyncScheme::kAuto);
  }

  /// Seconds of one micro-batch of a part on one TP rank of a CP group (cached per
  /// micro-batch, tp, sp, cp, etp): routed experts' ops are split by etp, the ops Megatron
  /// splits by tp (all of them with sequence parallelism).
  const PartTimes& times(Part part, const MegatronConfig& m) const {
    const int tp = m.tp, etp = m.etp;
    const bool sp = m.sequence_parallel;
    const auto key = std::make_tuple(static_cast<int>(part), m.micro_batch, tp, sp, m.cp, etp);
    auto it = times_.find(key);
    if (it != times_.end()) return it->second;
    PartTimes t;
    const double mb_frac = double(m.micro_batch) / shape_.global_batch / m.cp;
    for (OpId o = 0; o < g_.num_ops(); ++o) {
      if (part_[o] != part) continue;
      const Op& op = g_.op(o);
      const Op& fwd = op.forward_op < g_.num_ops() ? g_.op(op.forward_op) : op;
      double frac = op.batch_scaled ? mb_frac : 1.0;
      if (is_expert_op(fwd)) {
        frac /= etp;
      } else if (split_by_tp(fwd) || sp) {
        frac /= tp;
      }
      const double s = p_.cost.op_time(op, g_.op_bytes(o), device0_, frac);
      if (op.phase == Phase::kForward) {
        t.forward += s;
        if (has(op.name, ".core_attention.")) t.attention += s;
      } else if (op.phase == Phase::kBackward) {
        t.backward += s;
        if (is_attention_op(fwd)) t.attention_backward += s;
      } else {
        t.optimizer += s;
      }
    }
    return times_.emplace(key, t).first->second;
  }

  double tp_all_reduce(int tp, double bytes) const {
    std::vector<int> group;
    for (int k = 0; k < tp; ++k) group.push_back(device0_ + k);
    return p_.cost.collective_time(CollectiveKind::kAllReduce, group, uint64_t(bytes),
                                   SyncScheme::kAuto);
  }

  /// Bytes on the fullest pipeline rank: model state (ZeRO-1 shards the optimizer state
  /// over cp x dp, the experts' over their expert-data-parallel ranks) and the activations
  /// of the micro-batches in flight under (interleaved) 1F1B, 1/cp of each micro-batch's.
  double peak_memory(const MegatronConfig& m, int M) const {
    const int v = m.virtual_stages;
    const double layers_per_rank = double(shape_.layers) / m.pp;
    const double mb_frac = double(m.micro_batch) / shape_.global_batch / m.cp;
    const bool zero = m.zero_stage >= 1;
    const double expert_ranks = double(m.ep) * m.etp;
    const double expert_dp = double(m.tp) * m.cp * m.dp / expert_ranks;
    // Parameters and their gradients, and the optimizer state.
    auto state = [&](int k, double copies) {
      const double dense = (2 * params_[k] + state_[k] / (zero ? m.cp * m.dp : 1)) / m.tp;
      const double experts =
          (2 * expert_params_[k] + expert_state_[k] / (zero ? expert_dp : 1)) / expert_ranks;
      return copies * (dense + experts);
    };
    auto act = [&](int k) {
      const double whole = act_whole_[k] / (m.sequence_parallel ? m.tp : 1);
      return (act_split_[k] / m.tp + whole) * mb_frac;
    };
    double layer_act = act(static_cast<int>(Part::kLayer0));
    const double layer_input = row_out_ / 2 * mb_frac / (m.sequence_parallel ? m.tp : 1);
    double kept_per_layer = layer_act;
    if (m.recompute == Recompute::kFull) kept_per_layer = layer_input;
    if (m.recompute == Recompute::kSelective)
      kept_per_layer = layer_act - attention_act_ / m.tp * mb_frac;
    double worst = 0;
    for (int r = 0; r < m.pp; ++r) {
      // Chunks in flight: Megatron's warm-up plus the one running (all of them when M = pp).
      int64_t w = v == 1 ? m.pp - r : 2 * (m.pp - r - 1) + int64_t(v - 1) * m.pp + 1;
      w = std::min<int64_t>(w, int64_t(M) * v);
      const double chunk_layers = layers_per_rank / v;
      double bytes = state(1, layers_per_rank);
      bytes += double(w) * chunk_layers * kept_per_layer;
      if (m.recompute == Recompute::kFull) bytes += layer_act;  // the layer being recomputed
      if (r == 0) bytes += state(0, 1) + double(std::min<int64_t>(M, m.pp)) * act(0);
      if (r == m.pp - 1) bytes += state(3, 1) + act(static_cast<int>(Part::kPost));
      worst = std::max(worst, bytes);
    }
    return worst;
  }

  const Problem& p_;
  const Graph& g_;
  TransformerShape shape_;
  std::vector<Part> part_;
  // Per Part (kLayer0: layer 0 alone): parameter bytes, optimizer-state bytes, and the
  // forward output bytes of TP-split ops and of the ops every TP rank runs whole.
  double params_[4] = {0, 0, 0, 0};
  double state_[4] = {0, 0, 0, 0};
  double act_split_[4] = {0, 0, 0, 0};
  double act_whole_[4] = {0, 0, 0, 0};
  double attention_act_ = 0, row_out_ = 0;
  // Routed experts' parameter and optimizer-state bytes per Part (spread over ep x etp).
  double expert_params_[4] = {0, 0, 0, 0};
  double expert_state_[4] = {0, 0, 0, 0};
  double attention_out_ = 0, kv_share_ = 1;  // layer 0's fused attention output, kv / heads
  double moe_a2a_bytes_ = 0;  // layer 0's dispatch and combine outputs (the all-to-all payloads)
  int device0_ = 0;
  double memory_ = 0;
  mutable std::map<std::tuple<int, int, int, bool, int, int>, PartTimes> times_;
};

}  // namespace

TransformerShape transformer_shape(const Graph& g) {
  if (!g.is_training_step()) {
    fail("graph '" + g.name() + "' is not a training step (generate it with --training-step)");
  }
  TransformerShape s;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const Op& op = g.op(o);
    if (op.phase != Phase::kForward) continue;
    s.layers = std::max(s.layers, op.layer + 1);
    if (s.heads == 0 && has(op.name, ".core_attention.") && !op.outputs.empty()) {
      const std::vector<int64_t>& shape = g.tensor(op.outputs[0]).shape;
      if (shape.size() == 4) s.heads = static_cast<int>(shape[1]), s.seq = shape[2];
    }
    // A fused attention op: heads from its attributes, tokens from its [b, s, h] output.
    if (s.heads == 0 && op.category == OpCategory::kAttention && !op.outputs.empty()) {
      const std::vector<int64_t>& shape = g.tensor(op.outputs[0]).shape;
      s.heads = attention_heads(g);
      if (shape.size() == 3) s.seq = shape[1];
      s.fused_attention = true;
    }
  }
  s.experts = graph_moe_shape(g).experts;
  if (s.layers == 0 || s.heads == 0) {
    // No numbered layers, or no core_attention op that names its heads.
    fail("graph '" + g.name() +
         "' is not a layered transformer with Megatron op names (`placer generate gpt` makes one)");
  }
  s.global_batch = static_cast<int>(g.batch_size());
  if (s.global_batch < 1) fail("graph '" + g.name() + "' has no batch size");
  return s;
}

/// Tokens a CP rank keeps at least: below this the ring's blocks are too short to hide the
/// KV exchange, and the grid does not offer the degree.
constexpr int64_t kMinTokensPerContextRank = 1024;

std::vector<int> context_degrees(const TransformerShape& sh, int ranks) {
  std::vector<int> out;
  for (int cp : divisors_of(ranks)) {
    const bool splits = sh.seq % (2 * int64_t(cp)) == 0 && sh.seq / cp >= kMinTokensPerContextRank;
    if (cp == 1 || (sh.fused_attention && splits)) out.push_back(cp);
  }
  return out;
}

std::vector<std::pair<int, int>> expert_layouts(const TransformerShape& sh, int tp, int cp,
                                                int dp) {
  if (sh.experts == 0) return {{1, 1}};
  std::vector<std::pair<int, int>> out;
  for (int ep : divisors_of(cp * dp)) {
    if (sh.experts % ep != 0) continue;
    out.emplace_back(ep, 1);
    if (tp > 1) out.emplace_back(ep, tp);
  }
  return out;
}

class MegatronEstimator::Impl : public Estimator {
 public:
  using Estimator::Estimator;
};

MegatronEstimator::MegatronEstimator(const Problem& problem)
    : impl_(std::make_unique<Impl>(problem)) {}
MegatronEstimator::~MegatronEstimator() = default;
const TransformerShape& MegatronEstimator::shape() const { return impl_->shape(); }
MegatronCandidate MegatronEstimator::estimate(const MegatronConfig& m) const {
  return impl_->estimate(m);
}
double MegatronEstimator::device_memory() const { return impl_->device_memory(); }

}  // namespace placer
