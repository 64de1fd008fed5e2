#include "agents/classical/megatron_grid.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>

#include "agents/api/methods.h"
#include "agents/api/search_budget.h"
#include "agents/common/outcome.h"
#include "src/plan/tensor_parallel.h"
#include "src/util/error.h"

namespace placer {

namespace {

/// Simulator runs the grid may spend when the budget gives neither runs nor seconds: more
/// than a typical grid holds (a 1.3B GPT on 8 GPUs: 270 configurations), so that by default
/// the grid runs to its end and the plan does not depend on the machine's speed or load.
constexpr int64_t kDefaultRuns = 1000;

[[noreturn]] void fail(const std::string& m) { throw Error("megatron: " + m); }

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int k = 1; k <= n; ++k) {
    if (n % k == 0) d.push_back(k);
  }
  return d;
}

/// Whether TP splits the op's work (the rest, norms and residual adds, runs whole on every
/// TP rank unless sequence parallelism splits it along the sequence).
bool split_by_tp(const Op& op) {
  switch (megatron_role(op)) {
    case TensorParallelRole::kColumn:
    case TensorParallelRole::kSharded:
    case TensorParallelRole::kRow:
    case TensorParallelRole::kVocabEmbedding:
    case TensorParallelRole::kVocabLoss: return true;
    default: return false;
  }
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
      params_[k] += static_cast<double>(op.param_bytes);
      state_[k] += static_cast<double>(op.state_bytes);
      if (op.phase != Phase::kForward) continue;
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
    const PartTimes& lt = times(Part::kLayer0, m.micro_batch, m.tp, m.sequence_parallel);
    double layer = lt.forward + lt.backward + (full ? lt.forward : selective ? lt.attention : 0);
    if (m.tp > 1) layer += (full ? 6 : 4) * tp_all_reduce(m.tp, row_out_ * mb_frac);
    const PartTimes& pre = times(Part::kPre, m.micro_batch, m.tp, m.sequence_parallel);
    const PartTimes& post = times(Part::kPost, m.micro_batch, m.tp, m.sequence_parallel);
    const double first_rank = m.virtual_stages * layers_per_chunk * layer + pre.forward + pre.backward;
    const double last_rank = m.virtual_stages * layers_per_chunk * layer + post.forward + post.backward;
    const double per_mb = std::max(first_rank, last_rank);
    double step = (M + double(m.pp - 1) / m.virtual_stages) * per_mb;
    if (m.pp > 1) {
      const int next = device0_ + m.tp * m.dp;
      step += 2.0 * (M + m.pp - 1) * p_.cost.transfer_time(device0_, next, uint64_t(row_out_ * mb_frac / 2));
    }
    // Gradient all-reduce over the data-parallel copies (not overlapped: Megatron's default)
    // and the optimizer step, on the rank with the most parameters.
    const double grads =
        (std::max(params_[0], params_[3]) + params_[1] * layers_per_chunk * m.virtual_stages) / m.tp;
    if (m.dp > 1) {
      std::vector<int> group;
      for (int r = 0; r < m.dp; ++r) group.push_back(device0_ + r * m.tp);
      step += p_.cost.collective_time(CollectiveKind::kAllReduce, group, uint64_t(grads), SyncScheme::kAuto);
    }
    step += (lt.optimizer * layers_per_chunk * m.virtual_stages + std::max(pre.optimizer, post.optimizer)) /
            (m.zero_stage >= 1 ? m.dp : 1);
    c.step_seconds = step;
    c.memory_bytes = peak_memory(m, M);
    return c;
  }

  double device_memory() const { return memory_; }

 private:
  struct PartTimes {
    double forward = 0, backward = 0, optimizer = 0, attention = 0;
  };

  /// Seconds of one micro-batch of a part on one TP rank (cached per micro-batch, tp, sp).
  const PartTimes& times(Part part, int micro_batch, int tp, bool sp) const {
    const auto key = std::make_tuple(static_cast<int>(part), micro_batch, tp, sp);
    auto it = times_.find(key);
    if (it != times_.end()) return it->second;
    PartTimes t;
    const double mb_frac = double(micro_batch) / shape_.global_batch;
    for (OpId o = 0; o < g_.num_ops(); ++o) {
      if (part_[o] != part) continue;
      const Op& op = g_.op(o);
      const Op& fwd = op.forward_op < g_.num_ops() ? g_.op(op.forward_op) : op;
      double frac = op.batch_scaled ? mb_frac : 1.0;
      if (split_by_tp(fwd) || sp) frac /= tp;
      const double s = p_.cost.op_time(op, g_.op_bytes(o), device0_, frac);
      if (op.phase == Phase::kForward) {
        t.forward += s;
        if (has(op.name, ".core_attention.")) t.attention += s;
      } else if (op.phase == Phase::kBackward) {
        t.backward += s;
      } else {
        t.optimizer += s;
      }
    }
    return times_.emplace(key, t).first->second;
  }

  double tp_all_reduce(int tp, double bytes) const {
    std::vector<int> group;
    for (int k = 0; k < tp; ++k) group.push_back(device0_ + k);
    return p_.cost.collective_time(CollectiveKind::kAllReduce, group, uint64_t(bytes), SyncScheme::kAuto);
  }

  /// Bytes on the fullest pipeline rank: model state (ZeRO-1 shards the optimizer state
  /// over dp) and the activations of the micro-batches in flight under (interleaved) 1F1B.
  double peak_memory(const MegatronConfig& m, int M) const {
    const int v = m.virtual_stages;
    const double layers_per_rank = double(shape_.layers) / m.pp;
    const double mb_frac = double(m.micro_batch) / shape_.global_batch;
    // Parameters and their gradients, and the optimizer state (sharded over dp by ZeRO-1).
    auto state = [&](int k, double copies) {
      return copies * (2 * params_[k] + state_[k] / (m.zero_stage >= 1 ? m.dp : 1)) / m.tp;
    };
    auto act = [&](int k) {
      const double whole = act_whole_[k] / (m.sequence_parallel ? m.tp : 1);
      return (act_split_[k] / m.tp + whole) * mb_frac;
    };
    double layer_act = act(static_cast<int>(Part::kLayer0));
    const double layer_input = row_out_ / 2 * mb_frac / (m.sequence_parallel ? m.tp : 1);
    double kept_per_layer = layer_act;
    if (m.recompute == Recompute::kFull) kept_per_layer = layer_input;
    if (m.recompute == Recompute::kSelective) kept_per_layer = layer_act - attention_act_ / m.tp * mb_frac;
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
  int device0_ = 0;
  double memory_ = 0;
  mutable std::map<std::tuple<int, int, int, bool>, PartTimes> times_;
};

/// Memory savers in the order a user reaches for them (cheapest in time first).
struct Saver {
  bool sp;
  int zero;
  Recompute recompute;
};
constexpr Saver kSavers[] = {
    {false, 0, Recompute::kNone},      {true, 0, Recompute::kNone},
    {false, 1, Recompute::kNone},      {true, 1, Recompute::kNone},
    {true, 1, Recompute::kSelective},  {true, 1, Recompute::kFull},
};

// The query heads of a core_attention op: dim 1 of the unfused scores [batch, heads, seq,
// seq], or dim 1 of FlashAttention's logsumexp [batch, heads, seq]; 0 for other ops.
int attention_heads(const Graph& g, const Op& op) {
  const size_t out = op.type == "FlashAttention" ? 1 : 0;
  const size_t rank = op.type == "FlashAttention" ? 3 : 4;
  if (op.outputs.size() <= out) return 0;
  const std::vector<int64_t>& shape = g.tensor(op.outputs[out]).shape;
  return shape.size() == rank ? static_cast<int>(shape[1]) : 0;
}

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
    if (s.heads == 0 && has(op.name, ".core_attention.")) s.heads = attention_heads(g, op);
  }
  if (s.layers == 0 || s.heads == 0) {
    // No numbered layers, or no core_attention op that names its heads.
    fail("graph '" + g.name() + "' is not a layered transformer with Megatron op names (`placer generate gpt` makes one)");
  }
  s.global_batch = static_cast<int>(g.batch_size());
  if (s.global_batch < 1) fail("graph '" + g.name() + "' has no batch size");
  return s;
}

MegatronGrid megatron_grid(const Problem& problem) {
  const Estimator est(problem);
  const TransformerShape& sh = est.shape();
  const std::vector<int> devs = problem_devices(problem);
  for (size_t i = 1; i < devs.size(); ++i) {
    if (devs[i] != devs[0] + static_cast<int>(i)) fail("the devices must be consecutive ids");
  }
  const int n = static_cast<int>(devs.size());
  const int per_host = static_cast<int>(problem.cluster.host(problem.cluster.device(devs[0]).host).devices.size());
  MegatronGrid grid;
  for (int tp : divisors(n)) {
    if (sh.heads % tp != 0 || tp > per_host) continue;
    for (int pp : divisors(n / tp)) {
      if (sh.layers % pp != 0) continue;
      const int dp = n / (tp * pp);
      if (sh.global_batch % dp != 0) continue;
      for (int mb : divisors(sh.global_batch / dp)) {
        const int M = sh.global_batch / (dp * mb);
        for (int v : divisors(sh.layers / pp)) {
          if (v > 1 && (pp == 1 || M % pp != 0 || v > 4)) continue;
          bool fitted_plain = false;
          for (const Saver& s : kSavers) {
            if ((s.sp && tp == 1) || (s.zero > 0 && dp == 1)) continue;
            // Recomputation only when the cheaper savers do not fit: it always costs time.
            if (s.recompute != Recompute::kNone && fitted_plain) break;
            MegatronConfig m;
            m.tp = tp, m.pp = pp, m.dp = dp, m.micro_batch = mb, m.global_batch = sh.global_batch;
            m.virtual_stages = v, m.sequence_parallel = s.sp, m.zero_stage = s.zero;
            m.recompute = s.recompute, m.first_device = devs[0];
            ++grid.enumerated;
            MegatronCandidate c = est.estimate(m);
            if (c.memory_bytes > est.device_memory()) continue;
            if (s.recompute == Recompute::kNone) fitted_plain = true;
            grid.fitting.push_back(c);
          }
        }
      }
    }
  }
  std::stable_sort(grid.fitting.begin(), grid.fitting.end(),
                   [](const MegatronCandidate& a, const MegatronCandidate& b) {
                     return a.step_seconds < b.step_seconds;
                   });
  return grid;
}

Plan MegatronGridPlacer::search(const Problem& problem, const SearchBudget& budget) {
  // Runs default to kDefaultRuns when the budget gives no limit; seconds only bind when given.
  const BudgetClock clock(budget, name(), kDefaultRuns);
  stats_ = {};
  const MegatronGrid grid = megatron_grid(problem);
  stats_.enumerated = grid.enumerated;
  stats_.fitting = static_cast<int>(grid.fitting.size());
  if (grid.fitting.empty()) {
    fail("none of the " + std::to_string(grid.enumerated) +
         " configurations fits in device memory by the analytic estimate");
  }
  Plan best;
  bool have = false, best_oom = true;
  double best_time = 0;
  std::string last_error;
  for (size_t i = 0; i < grid.fitting.size(); ++i) {
    if (stats_.simulated > 0 && clock.exhausted(stats_.simulated)) break;
    const MegatronConfig& m = grid.fitting[i].config;
    Plan plan;
    SimResult r;
    try {
      plan = megatron_plan(problem.graph, m);
      r = problem.simulator.run(plan);
    } catch (const Error& e) {
      last_error = e.what();  // e.g. an op the tensor-parallel rules cannot split
      continue;
    }
    ++stats_.simulated;
    if (budget.progress) budget.progress(int64_t(i + 1), int64_t(grid.fitting.size()), describe(m));
    if (!have || (best_oom && !r.oom) || (best_oom == r.oom && r.step_time < best_time)) {
      have = true, best_oom = r.oom, best_time = r.step_time;
      best = std::move(plan);
      stats_.best = m;
      stats_.best_index = static_cast<int>(i);
    }
  }
  if (!have) fail("no configuration could be simulated: " + last_error);
  best.method = name();
  return best;
}

SearchOutcome MegatronGridPlacer::search_outcome(const Problem& problem,
                                                const SearchBudget& budget) {
  Plan plan = search(problem, budget);
  SearchOutcome out = search_outcome_of(std::move(plan), stats_.simulated, 0, 0,
                                        {{"enumerated", stats_.enumerated},
                                         {"fitting", stats_.fitting},
                                         {"simulated", stats_.simulated},
                                         {"best_index", stats_.best_index}});
  add_megatron_config(stats_.best, &out.stats);
  return out;
}

std::string describe(const MegatronConfig& m) {
  return "tp " + std::to_string(m.tp) + ", pp " + std::to_string(m.pp) + ", dp " + std::to_string(m.dp) +
         ", mb " + std::to_string(m.micro_batch) + ", v " + std::to_string(m.virtual_stages) +
         ", recompute " + to_string(m.recompute) + ", sp " + (m.sequence_parallel ? "on" : "off") +
         ", zero " + std::to_string(m.zero_stage);
}

void add_megatron_methods(std::vector<MethodInfo>* out) {
  out->push_back({"megatron",
                  "Megatron-LM grid on a layered transformer: tp | heads within a host, pp | "
                  "layers, dp, micro-batch, virtual stages, SP / ZeRO-1 / recomputation as "
                  "memory needs; memory-pruned analytically, simulated best-first (1000 runs)",
                  true, [] { return std::make_unique<MegatronGridPlacer>(); }});
}

}  // namespace placer
