// The "rainbow-3d" placer (agents/rainbow/rainbow_3d.h): rainbow-opp's sharding search, rainbow-pp's cut
// search and a data-parallel / micro-batch search composed into one hybrid plan.
#include "agents/rainbow/rainbow_3d.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agents/api/methods.h"
#include "agents/common/megatron_outcome.h"
#include "agents/common/megatron_space.h"
#include "agents/common/method_options.h"
#include "agents/common/option_fields.h"
#include "agents/common/option_table.h"
#include "agents/common/outcome.h"
#include "agents/common/prediction.h"
#include "agents/rainbow/rainbow_opp.h"
#include "agents/rainbow/rainbow_pp_episodes.h"
#include "env/pipeline_env.h"
#include "src/plan/tensor_parallel.h"
#include "src/util/error.h"

namespace placer {
namespace {

constexpr const char* kName = "rainbow-3d";

[[noreturn]] void fail(const std::string& msg) {
  throw ValidationError(std::string(kName) + ": " + msg);
}

/// Micro-batches and memory savers of a plan (the warm start's, kept through its cut search;
/// those a shape needs by the grid's memory estimate).
struct Layout {
  int micro_batches = 1;
  bool sequence_parallel = false;
  int zero_stage = 0;
  Recompute recompute = Recompute::kNone;
};

/// A (t, cp, pp, dp) shape with the stage grids on the problem's devices, and its expert
/// layout.
struct Shape {
  int tp = 1, pp = 1, dp = 1;
  int v = 1;   ///< virtual stages (model chunks) per pipeline rank: pp x v stages
  int cp = 1;  ///< context-parallel ranks per TP rank (ring attention unless cp_comm says)
  ContextParallelComm cp_comm = ContextParallelComm::kP2P;
  int ep = 1, etp = 1;  ///< expert parallelism and expert tensor parallelism (MoE graphs)
  std::vector<std::vector<int>> groups;  ///< per rank: tp x cp x dp devices, Megatron's order
  /// Where shapes are ranked by the grid's estimate: the default micro-batches and the first
  /// memory savers it fits with, applied to the probe and every cut set.
  std::optional<Layout> savers;
  int stages() const { return pp * v; }
  int copies() const { return cp * dp; }  ///< data-parallel copies of a stage (ZeRO's ranks)
  bool same_layout(const Shape& o) const {
    return tp == o.tp && pp == o.pp && v == o.v && cp == o.cp && ep == o.ep && etp == o.etp;
  }
};

/// A simulated candidate: any plan that fits beats every OOM one, then the lower step time.
struct Scored {
  Plan plan;
  double time = std::numeric_limits<double>::infinity();
  bool oom = true;
  bool valid = false;
  bool beats(const Scored& o) const {
    if (!o.valid) return valid;
    if (!valid) return false;
    if (oom != o.oom) return !oom;
    return time < o.time;
  }
};

std::string format_ms(double s) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "best %.3f ms", s * 1e3);
  return buf;
}

class Search {
 public:
  Search(const Problem& problem, const SearchBudget& budget, const Rainbow3DOptions& o,
         Rainbow3DStats* stats)
      : p_(problem),
        budget_(budget),
        o_(o),
        stats_(stats),
        clock_(budget, kName, o.runs),
        g_(problem.graph) {}

  Scored run() {
    check_options();
    devs_ = problem_devices(p_);
    n_ = static_cast<int>(devs_.size());
    total_ = clock_.max_runs() > 0 ? clock_.max_runs() : o_.runs;
    batch_ = g_.batch_size();
    for (OpId op = 0; op < g_.num_ops(); ++op) {
      if (g_.op(op).phase == Phase::kForward) fwd_.push_back(op);
    }

    try {
      space_ = std::make_unique<MegatronEstimator>(p_);
    } catch (const Error&) {
      // Not a layered transformer with Megatron op names: no context or expert parallelism.
    }
    // 0. Warm start: the megatron grid's plan and shape, where the grid applies.
    warm_start();
    // 1. Operator sharding per TP degree (Megatron's at the warm start's degree).
    const std::vector<int> tps = sharded_tp_degrees();
    // 2. Shapes, probed with the balanced cuts (the warm start's shape has its plan).
    std::vector<std::pair<Scored, Shape>> probed = probe_shapes(tps);
    // 3. Cut search on the best shapes with a pipeline, then every other probed shape.
    std::vector<std::pair<Scored, Shape>> finalists = search_finalists(probed);
    // 4. Micro-batches, ZeRO-1 and recomputation, best plans first, while runs are left.
    for (size_t i = 0; i < finalists.size() && !out_of_runs(); ++i) {
      layout(finalists[i].first, finalists[i].second, grid_ && i == 0);
    }
    if (!best_.valid) fail("no plan could be simulated");
    return best_;
  }

 private:
  bool out_of_runs() const { return used_ >= total_ || !clock_.time_left(); }

  void check_options() const {
    if (!g_.is_training_step()) {
      fail(
          "the graph must be a training step (forward, backward and optimizer ops); expand it "
          "first");
    }
    if (!(o_.opp_share >= 0 && o_.pp_share >= 0 && o_.opp_share + o_.pp_share <= 1)) {
      fail("opp_share and pp_share must be >= 0 and sum to at most 1");
    }
    if (o_.runs < 1) fail("runs must be >= 1, got " + std::to_string(o_.runs));
    if (o_.max_tp < 1 || o_.max_pp < 1 || o_.top_shapes < 0 || o_.opp_episodes < 1 ||
        o_.max_shapes < 1) {
      fail("max_tp, max_pp, max_shapes and opp_episodes must be >= 1 and top_shapes >= 0");
    }
  }

  /// The TP degrees to try: 1, the warm start's, and every other power of two whose sharding
  /// search (in equal shares of opp_share of the runs) found a plan.
  std::vector<int> sharded_tp_degrees() {
    std::vector<int> tps{1};
    if (grid_ && grid_->shape.tp > 1) tps.push_back(grid_->shape.tp);
    std::vector<int> cand;
    for (int t = 2; t <= std::min(o_.max_tp, n_); t *= 2) {
      if (grid_ && t == grid_->shape.tp) continue;
      if (n_ % t == 0 && tp_groups_in_hosts(t)) cand.push_back(t);
    }
    const int64_t opp_total = std::llround(o_.opp_share * double(total_));
    for (size_t i = 0; i < cand.size(); ++i) {
      const int64_t share = (opp_total - stats_->opp_runs) / int64_t(cand.size() - i);
      if (share < 4 || !clock_.time_left()) break;
      if (shard(cand[i], share)) tps.push_back(cand[i]);
    }
    return tps;
  }

  /// Every (tp, cp, pp, virtual stages, ep, etp) shape but the warm start's, simulated with
  /// the balanced cuts and the default micro-batches; best first. Where the graph allows
  /// context or expert parallelism, the shapes are memory-pruned and ordered by the grid's
  /// analytic estimate, and the first max_shapes of them probed.
  std::vector<std::pair<Scored, Shape>> probe_shapes(const std::vector<int>& tps) {
    std::vector<std::pair<Scored, Shape>> probed;
    for (Shape& s : candidate_shapes(tps)) {
      const int m = default_micro_batches(s);
      if (out_of_runs()) break;
      Scored sc;
      if (s.stages() > 1) {
        std::unique_ptr<PipelineEnv> env = make_env(s, m, 0);
        if (!env) continue;
        sc = evaluate(with_savers(compose(env->to_plan(env->center_solution()), s), s.savers));
      } else {
        sc = evaluate(with_savers(compose(one_stage(s, m), s), s.savers));
      }
      ++stats_->probe_runs;
      ++stats_->shapes;
      keep(sc);
      probed.emplace_back(std::move(sc), std::move(s));
    }
    if (probed.empty() && !grid_ && out_of_runs()) {
      fail(
          "the budget ran out before any (tensor, pipeline, data) parallel shape was simulated "
          "(" +
          std::to_string(used_) + " runs used); give it more runs or time");
    }
    if (probed.empty() && !grid_) {
      fail("no (tensor, pipeline, data) parallel shape fits these devices");
    }
    std::stable_sort(probed.begin(), probed.end(),
                     [](const auto& a, const auto& b) { return a.first.beats(b.first); });
    return probed;
  }

  /// The shapes probe_shapes simulates, in its order: every valid one (the loop order) on a
  /// graph without context- or expert-parallel degrees; else those the analytic memory
  /// estimate fits with some memory saver, by their estimated step, at most max_shapes.
  std::vector<Shape> candidate_shapes(const std::vector<int>& tps) const {
    std::vector<Shape> out;
    bool extended = false;  // some shape has cp, ep or etp > 1
    for (int t : tps) {
      const std::vector<int> cps =
          space_ ? context_degrees(space_->shape(), n_ / t) : std::vector<int>{1};
      for (int cp : cps) {
        for (int pp = 1; pp <= o_.max_pp; ++pp) {
          if (n_ % (t * cp * pp) != 0) continue;
          const int dp = n_ / (t * cp * pp);
          const std::vector<std::pair<int, int>> experts =
              space_ ? expert_layouts(space_->shape(), t, cp, dp)
                     : std::vector<std::pair<int, int>>{{1, 1}};
          for (int v : {1, 2, 4}) {
            if (v > o_.max_virtual_stages || (v > 1 && (pp == 1 || pp * v > n_))) continue;
            for (const auto& [ep, etp] : experts) {
              Shape s = make_shape(t, pp, v, cp, ep, etp);
              if (grid_ && s.same_layout(grid_->shape)) continue;
              if (batch_ > 0 && batch_ % s.dp != 0) continue;
              if (default_micro_batches(s) < 1) continue;
              extended = extended || cp > 1 || ep > 1 || etp > 1;
              out.push_back(std::move(s));
            }
          }
        }
      }
    }
    if (!extended) return out;
    return ranked_by_estimate(std::move(out));
  }

  /// The shapes the grid's memory estimate fits with some memory saver (none; SP and ZeRO-1;
  /// then selective, then full recomputation), fastest estimated step first (ties: the
  /// given order), at most max_shapes.
  std::vector<Shape> ranked_by_estimate(std::vector<Shape> shapes) const {
    std::vector<std::pair<double, Shape>> fit;
    for (Shape& s : shapes) {
      MegatronConfig m;
      m.tp = s.tp, m.cp = s.cp, m.pp = s.pp, m.dp = s.dp, m.ep = s.ep, m.etp = s.etp;
      m.virtual_stages = s.v;
      m.global_batch = space_->shape().global_batch;
      m.micro_batch = m.global_batch / (s.dp * default_micro_batches(s));
      const std::pair<bool, Recompute> savers[] = {{false, Recompute::kNone},
                                                   {true, Recompute::kNone},
                                                   {true, Recompute::kSelective},
                                                   {true, Recompute::kFull}};
      for (const auto& [sp_zero, rc] : savers) {
        m.sequence_parallel = sp_zero && s.tp > 1;
        m.zero_stage = sp_zero && s.copies() > 1 ? 1 : 0;
        m.recompute = rc;
        const MegatronCandidate c = space_->estimate(m);
        if (c.memory_bytes <= space_->device_memory()) {
          s.savers = Layout{default_micro_batches(s), m.sequence_parallel, m.zero_stage, rc};
          fit.emplace_back(c.step_seconds, std::move(s));
          break;
        }
      }
    }
    std::stable_sort(fit.begin(), fit.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Shape> out;
    for (auto& [time, s] : fit) {
      if (int(out.size()) >= o_.max_shapes) break;
      out.push_back(std::move(s));
    }
    return out;
  }

  /// The warm start's plan (its cuts searched) first, then the top_shapes best probed shapes
  /// with a pipeline after their cut search (in equal shares of pp_share of the runs), best
  /// first, then every other probed shape, best first.
  std::vector<std::pair<Scored, Shape>> search_finalists(
      const std::vector<std::pair<Scored, Shape>>& probed) {
    std::vector<std::pair<Scored, Shape>> finalists;
    const bool grid_cuts = grid_ && grid_->shape.stages() > 1 && o_.top_shapes > 0;
    std::vector<size_t> searched;  // indices into probed (their probes: the balanced cuts)
    for (size_t i = 0; i < probed.size(); ++i) {
      if (probed[i].second.pp > 1 && int(searched.size()) + int(grid_cuts) < o_.top_shapes) {
        searched.push_back(i);
      }
    }
    const int64_t cut_total = std::llround(o_.pp_share * double(total_));
    const size_t n_searched = searched.size() + size_t(grid_cuts);
    auto cut_share = [&](size_t done) {
      return (cut_total - stats_->cut_runs) / int64_t(n_searched - done);
    };
    if (grid_) {
      Scored g = grid_->incumbent;
      if (grid_cuts && cut_share(0) >= 1 && !out_of_runs()) {
        g = search_cuts(grid_->shape, g, cut_share(0), &grid_->layout);
      }
      finalists.emplace_back(std::move(g), grid_->shape);
    }
    for (size_t i = 0; i < searched.size(); ++i) {
      const int64_t share = cut_share(i + size_t(grid_cuts));
      if (share < 1 || out_of_runs()) break;
      const auto& [center, shape] = probed[searched[i]];
      const Layout* fixed = shape.savers ? &*shape.savers : nullptr;
      finalists.emplace_back(search_cuts(shape, center, share, fixed), shape);
    }
    std::stable_sort(finalists.begin() + (grid_ ? 1 : 0), finalists.end(),
                     [](const auto& a, const auto& b) { return a.first.beats(b.first); });
    for (size_t i = 0; i < probed.size(); ++i) {
      if (std::find(searched.begin(), searched.end(), i) == searched.end()) {
        finalists.push_back(probed[i]);
      }
    }
    return finalists;
  }

  /// The warm start's plan (simulated again here, one probe run), shape and layout.
  struct Warm {
    Scored incumbent;
    Shape shape;
    Layout layout;
  };

  /// Step 0: the megatron grid, when it applies; sets grid_ and Megatron's sharding as the
  /// template of its TP degree. Nothing when the grid does not apply or finds no plan.
  void warm_start() {
    if (!(o_.grid_seconds > 0)) return;
    SearchBudget gb;
    gb.seed = budget_.seed;
    gb.max_seconds = o_.grid_seconds;
    if (clock_.max_seconds() > 0)
      gb.max_seconds = std::min(gb.max_seconds, clock_.max_seconds() / 2);
    gb.max_evaluations = std::max(0, o_.grid_runs);
    SearchOutcome out;
    try {
      // Through the registry: families do not include each other (scripts/check_layers.sh).
      out = make_placer("megatron")->search_outcome(p_, gb);
    } catch (const Error&) {
      return;  // not a layered transformer with Megatron op names, no fitting configuration, ...
    }
    stats_->grid_runs = out.stats.runs;
    const MegatronConfig m = megatron_config_of_outcome(out.stats);
    if (m.tp * m.cp * m.pp * m.dp != n_) return;
    Warm w;
    w.shape = make_shape(m.tp, m.pp, m.virtual_stages, m.cp, m.ep, m.etp);
    w.shape.cp_comm = out.plan.context_parallel.comm;
    w.layout.micro_batches = out.plan.pipeline.micro_batches;
    w.layout.sequence_parallel = m.sequence_parallel;
    w.layout.zero_stage = m.zero_stage;
    w.layout.recompute = m.recompute;
    std::vector<OpPartition> megatron;  // Megatron's sharding, as compose() applies it
    if (m.tp > 1) {
      Plan plain = out.plan;
      plain.tensor_parallel.sequence_parallel = false;
      try {
        megatron = expand_tensor_parallel(plain, g_, p_.cluster.num_devices()).partitions;
      } catch (const Error&) {
        return;
      }
    }
    Plan plan = std::move(out.plan);
    plan.method = kName;
    w.incumbent = evaluate(std::move(plan));
    ++stats_->probe_runs;
    ++stats_->shapes;
    if (!w.incumbent.valid) return;
    for (OpPartition& part : megatron) templates_[m.tp][part.op] = std::move(part);
    stats_->grid_step_time = w.incumbent.time;
    keep(w.incumbent);
    grid_ = std::move(w);
  }

  bool tp_groups_in_hosts(int t) const {
    for (int i = 0; i + t <= n_; i += t) {
      for (int k = 1; k < t; ++k) {
        if (p_.cluster.device(devs_[i + k]).host != p_.cluster.device(devs_[i]).host) return false;
      }
    }
    return true;
  }

  Shape make_shape(int t, int pp, int v, int cp = 1, int ep = 1, int etp = 1) const {
    Shape s;
    s.tp = t;
    s.pp = pp;
    s.v = v;
    s.cp = cp, s.ep = ep, s.etp = etp;
    s.dp = n_ / (t * cp * pp);
    const int per = t * cp * s.dp;
    for (int st = 0; st < pp; ++st) {
      s.groups.emplace_back(devs_.begin() + st * per, devs_.begin() + (st + 1) * per);
    }
    return s;
  }

  /// Micro-batches of a probe: the largest divisor of a replica's samples <= 4 pp (a multiple
  /// of pp with virtual stages, as interleaved 1F1B needs); 0 when there is none.
  int default_micro_batches(const Shape& s) const {
    const int64_t cap = 4 * s.pp;
    if (batch_ <= 0) return int(cap);
    const int64_t samples = batch_ / s.dp;
    for (int64_t m = std::min(samples, cap); m >= 1; --m) {
      if (samples % m == 0 && (s.v == 1 || m % s.pp == 0)) return int(m);
    }
    return 0;
  }

  std::unique_ptr<PipelineEnv> make_env(const Shape& s, int micro_batches, double reference) {
    PipelineEnvOptions eo;
    eo.stages = s.stages();
    // With virtual stages the env only places the cuts: one stand-in device per chunk (equal
    // groups, so the balanced cuts are even); compose() maps chunk c to rank c % pp.
    if (s.v == 1) {
      eo.groups = s.groups;
    } else {
      for (int c = 0; c < s.stages(); ++c) eo.groups.push_back({devs_[size_t(c)]});
    }
    eo.micro_batches = micro_batches;
    eo.simulate = false;
    eo.scope_depth = std::max(0, o_.cuts.scope_depth);
    eo.prune = o_.cuts.prune;
    eo.prune_radius = o_.cuts.prune_radius;
    eo.prune_per_cut = true;  // uneven cuts near the balanced ones, not any cut set
    eo.reference_time = reference > 0 ? reference : 1.0;  // no simulation in the constructor
    for (bool prune : {eo.prune, false}) {
      eo.prune = prune;
      try {
        return std::make_unique<PipelineEnv>(g_, p_.cluster, p_.cost, eo);
      } catch (const ValidationError&) {
        // Too many stages for the pivots near the balanced cuts (or at all).
      }
      if (!prune) break;
    }
    return nullptr;
  }

  /// Step 1: the sharding search at degree t; false when it found nothing better than
  /// replicating every op.
  bool shard(int t, int64_t runs) {
    RainbowOppOptions oo = rainbow_opp_defaults(OppEnvOptions::Task::kOperatorPartitioning);
    oo.env.degree = t;
    oo.env.tie_layers = o_.tie_layers;
    oo.env.ignore_memory = true;
    oo.env.mask_conflicts = true;
    oo.episodes = o_.opp_episodes;
    // Decay exploration over about half of the runs (each step of an episode simulates).
    oo.agent.epsilon_decay_steps = std::max<int64_t>(1, runs / 2);
    // Tens of distinct states in all: learn from the first 16 transitions.
    oo.agent.batch_size = 16;
    SearchBudget b;
    b.max_evaluations = runs;
    b.seed = budget_.seed + uint64_t(t);
    if (clock_.max_seconds() > 0)
      b.max_seconds = std::max(1.0, clock_.max_seconds() - clock_.elapsed());
    std::vector<int> first(static_cast<size_t>(t), 0);
    for (int i = 0; i < t; ++i) first[size_t(i)] = i;
    Problem sub{g_, p_.cluster, p_.cost, p_.simulator, first};
    RainbowOppReport r;
    try {
      r = rainbow_opp_search(sub, b, oo);
    } catch (const ValidationError&) {
      return false;  // e.g. no variable to shard
    }
    used_ += r.simulations;
    stats_->opp_runs += r.simulations;
    std::map<OpId, OpPartition>& tmpl = templates_[t];
    for (const OpPartition& part : r.plan.partitions) tmpl[part.op] = part;
    return !tmpl.empty() && std::isfinite(r.step_time) && r.step_time < r.reference_time;
  }

  /// `plan` with the memory savers of `savers` (none when empty; sequence parallelism only
  /// over the tensor-parallel shorthand).
  static Plan with_savers(Plan plan, const std::optional<Layout>& savers) {
    if (!savers) return plan;
    plan.tensor_parallel.sequence_parallel =
        savers->sequence_parallel && plan.tensor_parallel.enabled();
    plan.data_parallel.zero_stage = savers->zero_stage;
    plan.recompute = savers->recompute;
    return plan;
  }

  /// The one-stage plan of shape s (pp = 1) with m micro-batches.
  Plan one_stage(const Shape& s, int m) const {
    Plan plan;
    plan.graph_name = g_.name();
    PipelineStage st;
    st.devices = s.groups[0];
    st.ops = fwd_;
    plan.pipeline.stages.push_back(std::move(st));
    plan.pipeline.micro_batches = m;
    plan.placement.assign(g_.num_ops(), s.groups[0][0]);
    return plan;
  }

  /// The staged plan `pipe` (stages on s.groups) made 3-D: every stage a tp x dp grid, the
  /// sharding of degree s.tp on each stage's first TP group, the stage's other forward ops
  /// replicated over that group. A split tensor that crosses a
  /// stage boundary is gathered by its producer (no sharded_output), so every sharded chain
  /// stays inside one stage.
  Plan compose(Plan pipe, const Shape& s) const {
    pipe.method = kName;
    if (s.v > 1) {  // chunk c (on stand-in device devs_[c]) runs on rank c % pp
      std::map<int, int> rank_device;
      for (size_t c = 0; c < pipe.pipeline.stages.size(); ++c) {
        PipelineStage& st = pipe.pipeline.stages[c];
        rank_device[st.devices[0]] = s.groups[c % size_t(s.pp)][0];
        st.devices = s.groups[c % size_t(s.pp)];
      }
      for (int& d : pipe.placement) d = rank_device.at(d);
      pipe.pipeline.virtual_stages = s.v;
      pipe.pipeline.schedule = PipelineSchedule::k1F1B;
    }
    pipe.partitions.clear();
    pipe.tensor_parallel = TensorParallelConfig{};
    for (PipelineStage& st : pipe.pipeline.stages) st.tensor_parallel = s.tp;
    pipe.precision.loss_scaling = true;  // as Megatron-LM runs (and the megatron grid)
    pipe.precision.grad_clipping = true;
    pipe.data_parallel.overlap = o_.overlap_grad_reduce;
    pipe.context_parallel.degree = s.cp;
    pipe.context_parallel.comm = s.cp_comm;
    pipe.expert_parallel = ExpertParallelConfig{};
    pipe.expert_parallel.degree = s.ep;
    pipe.expert_parallel.tensor_parallel = s.etp;
    if (s.tp > 1) {
      const auto it = templates_.find(s.tp);
      if (it == templates_.end()) return pipe;
      std::vector<int> stage_of(g_.num_ops(), -1);
      for (size_t k = 0; k < pipe.pipeline.stages.size(); ++k) {
        for (OpId op : pipe.pipeline.stages[k].ops) stage_of[op] = int(k);
      }
      std::vector<int> index(g_.num_ops(), -1);
      for (size_t k = 0; k < pipe.pipeline.stages.size(); ++k) {
        const PipelineStage& st = pipe.pipeline.stages[k];
        for (OpId op : st.ops) {
          const auto pt = it->second.find(op);
          if (pt == it->second.end()) continue;
          OpPartition part = pt->second;
          part.devices.assign(st.devices.begin(), st.devices.begin() + s.tp);
          index[op] = int(pipe.partitions.size());
          pipe.partitions.push_back(std::move(part));
        }
      }
      // The other forward ops of a stage run whole on every device of its TP group (as
      // Megatron runs norms, residual adds and dropout), so no input is sent between them.
      for (size_t k = 0; k < pipe.pipeline.stages.size(); ++k) {
        const PipelineStage& st = pipe.pipeline.stages[k];
        for (OpId op : st.ops) {
          if (index[op] >= 0) continue;
          OpPartition part;
          part.op = op;
          part.replicated = true;
          part.devices.assign(st.devices.begin(), st.devices.begin() + s.tp);
          pipe.partitions.push_back(std::move(part));
        }
      }
      // Chains that cross a stage: the producer gathers, its consumers read whole tensors.
      for (OpPartition& part : pipe.partitions) {
        if (!part.sharded_output) continue;
        for (TensorId t : g_.op(part.op).outputs) {
          for (OpId c : g_.consumers(t)) {
            if (g_.op(c).phase == Phase::kForward &&
                (stage_of[c] != stage_of[part.op] || index[c] < 0)) {
              part.sharded_output = false;
            }
          }
        }
      }
      for (OpPartition& part : pipe.partitions) {
        if (!part.sharded_input) continue;
        bool reads_shards = false;
        for (TensorId t : g_.op(part.op).inputs) {
          const OpId pr = g_.tensor(t).producer;
          if (pr < g_.num_ops() && index[pr] >= 0 &&
              pipe.partitions[size_t(index[pr])].sharded_output) {
            reads_shards = true;
          }
        }
        part.sharded_input = reads_shards;
      }
      // Megatron's sharding found: the plan spells it as the shorthand, so that layout() can
      // turn sequence parallelism on.
      if (std::optional<Plan> sh =
              as_tensor_parallel_shorthand(pipe, g_, p_.cluster.num_devices())) {
        return std::move(*sh);
      }
    }
    return pipe;
  }

  Scored evaluate(Plan plan) {
    Scored sc;
    ++used_;
    ++stats_->runs;
    try {
      plan.validate(g_, p_.cluster);
    } catch (const ValidationError&) {
      return sc;  // not runnable (e.g. micro-batches that do not divide); counted anyway
    }
    SimResult r;
    try {
      r = predict(p_, &plan);
    } catch (const Error&) {
      return sc;  // e.g. an expert layout the simulator refuses for this sharding
    }
    sc.time = r.step_time;
    sc.oom = r.oom;
    sc.valid = std::isfinite(r.step_time);
    sc.plan = std::move(plan);
    return sc;
  }

  void keep(const Scored& sc) {
    if (sc.beats(best_)) {
      best_ = sc;
      if (!best_.oom) {
        stats_->improvements.emplace_back(
            stats_->grid_runs + stats_->opp_runs + stats_->runs, best_.time);
      }
    }
    if (budget_.progress) budget_.progress(used_, total_, format_ms(best_.time));
  }

  /// Step 3: the DQN picks the cuts of shape s; every terminal cut set is the 3-D plan,
  /// simulated.
  /// With `fixed` (the warm start's shape): every cut set is scored with its micro-batches and
  /// savers, and `probe` (its plan) is the incumbent.
  Scored search_cuts(const Shape& s, const Scored& probe, int64_t runs,
                     const Layout* fixed = nullptr) {
    // The cuts are scored where the balanced ones fit: when the probe ran out of memory, with
    // the memory savers that cost least time (sequence parallelism over Megatron's sharding
    // and ZeRO-1, then selective, then full recomputation), so that the rewards compare step
    // times rather than all being the OOM penalty.
    Scored center = probe;
    std::function<void(Plan*)> savers = [](Plan*) {};
    if (fixed) {
      savers = [fixed](Plan* p) { *p = with_savers(std::move(*p), *fixed); };
    }
    for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      if (fixed || !center.valid || !center.oom || out_of_runs()) break;
      const bool sp = probe.plan.tensor_parallel.enabled();
      if (rc == Recompute::kNone && !sp && s.copies() == 1) continue;  // nothing to turn on
      const std::function<void(Plan*)> on = [rc, sp, &s](Plan* p) {
        p->tensor_parallel.sequence_parallel = sp;
        if (s.copies() > 1) p->data_parallel.zero_stage = 1;
        p->recompute = rc;
      };
      Plan p = probe.plan;
      on(&p);
      Scored sc = evaluate(std::move(p));
      ++stats_->cut_runs;
      keep(sc);
      if (sc.valid && !sc.oom) savers = on, center = std::move(sc);
    }
    const int m = fixed ? fixed->micro_batches : default_micro_batches(s);
    // Reference: the balanced cuts' time (the probe; the warm start's plan), so rewards are
    // about 1.
    const double ref = center.valid && std::isfinite(center.time) ? center.time : 1.0;
    std::unique_ptr<PipelineEnv> env = make_env(s, m, ref);
    Scored best = center;
    if (!env) return best;
    const RainbowConfig cfg =
        rainbow_cut_agent_config(o_.cuts, s.stages(), runs, budget_.seed, kName);
    RainbowAgent agent(static_cast<int64_t>(env->observation().size()), env->num_pivots(), cfg);
    std::map<std::vector<int>, PipelineStepResult> cache;
    auto score = [&](const std::vector<int>& cuts) {
      const auto it = cache.find(cuts);
      if (it != cache.end()) return CutScore{it->second, false};
      Plan plan = compose(env->to_plan(cuts), s);
      savers(&plan);
      Scored sc = evaluate(std::move(plan));
      ++stats_->cut_runs;
      PipelineStepResult r;
      r.done = true;
      r.oom = sc.oom || !sc.valid;
      r.step_time = sc.time;
      r.reward = r.oom ? -1.0 : ref / sc.time;
      cache.emplace(cuts, r);
      keep(sc);
      if (sc.beats(best)) best = std::move(sc);
      return CutScore{r, true};
    };
    // The warm start's incumbent has the even split; its shape's balanced cuts come first.
    if (fixed) score(env->center_solution());
    run_cut_episodes(env.get(), &agent, runs, 4 * runs, score, [&] { return out_of_runs(); }, {});
    return best;
  }

  /// Step 4's switches on `given` (of shape s), each kept when it beats the plan without:
  /// sequence parallelism when the sharding is Megatron's, under context parallelism the other
  /// key-value exchanges (Ulysses' all-to-all of heads, the all-gather), and on an MoE graph
  /// the shape's other expert layouts (ep, etp), which the estimate's ranking may have left
  /// unprobed.
  Plan switched(const Scored& given, const Shape& s) {
    std::vector<std::function<void(Plan*)>> moves;
    const Plan& g = given.plan;
    if (g.tensor_parallel.enabled() && !g.tensor_parallel.sequence_parallel) {
      moves.emplace_back([](Plan* p) { p->tensor_parallel.sequence_parallel = true; });
    }
    if (g.context_parallel.enabled()) {
      for (ContextParallelComm c : {ContextParallelComm::kP2P, ContextParallelComm::kAllToAll,
                                    ContextParallelComm::kAllGather}) {
        if (c != g.context_parallel.comm) {
          moves.emplace_back([c](Plan* p) { p->context_parallel.comm = c; });
        }
      }
    }
    const std::vector<std::pair<int, int>> experts =
        space_ ? expert_layouts(space_->shape(), s.tp, s.cp, s.dp)
               : std::vector<std::pair<int, int>>{};
    for (const auto& [ep, etp] : experts) {
      if (ep == s.ep && etp == s.etp) continue;
      moves.emplace_back([ep = ep, etp = etp](Plan* p) {
        p->expert_parallel.degree = ep;
        p->expert_parallel.tensor_parallel = etp;
      });
    }
    Scored base = given;
    for (const std::function<void(Plan*)>& move : moves) {
      if (out_of_runs()) break;
      Plan p = base.plan;
      move(&p);
      Scored sc = evaluate(std::move(p));
      ++stats_->layout_runs;
      keep(sc);
      if (sc.beats(base)) base = std::move(sc);
    }
    return std::move(base.plan);
  }

  /// Step 4: sequence parallelism when the sharding is Megatron's (kept when it beats the
  /// plan without), then micro-batches (powers of two and multiples of pp dividing a
  /// replica's samples, up to 64), ZeRO-1 when there are data-parallel copies, selective
  /// then full recomputation only while no plan fits (and, when `warm`, the warm start's own),
  /// on the plan `given` of shape s.
  void layout(const Scored& given, const Shape& s, bool warm) {
    if (given.plan.pipeline.stages.empty() || !clock_.time_left()) return;
    const Plan base = switched(given, s);
    const int64_t samples = batch_ > 0 ? batch_ / s.dp : 64;
    std::vector<int> ms;
    for (int64_t m = 1; m <= std::min<int64_t>(samples, 64); m *= 2) {
      if (samples % m == 0) ms.push_back(int(m));
    }
    for (int k : {1, 2, 4, 8}) {
      const int64_t m = int64_t(k) * s.pp;
      if (m <= samples && samples % m == 0) ms.push_back(int(m));
    }
    if (s.v > 1)
      ms.erase(std::remove_if(ms.begin(), ms.end(), [&](int m) { return m % s.pp != 0; }),
               ms.end());
    std::sort(ms.begin(), ms.end());
    ms.erase(std::unique(ms.begin(), ms.end()), ms.end());
    bool fits = !best_.oom;
    for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      // On the warm start's shape its own recomputation is tried too (it may be selective).
      if (rc != Recompute::kNone && fits && !(warm && rc == base.recompute)) continue;
      for (int zero : {0, 1}) {
        if (zero == 1 && s.copies() == 1) continue;
        for (int m : ms) {
          if (out_of_runs()) return;
          Plan p = base;
          p.pipeline.micro_batches = m;
          p.data_parallel.zero_stage = zero;
          p.recompute = rc;
          if (p.pipeline.micro_batches == base.pipeline.micro_batches &&
              zero == base.data_parallel.zero_stage && rc == base.recompute) {
            continue;
          }
          Scored sc = evaluate(std::move(p));
          ++stats_->layout_runs;
          fits = fits || (sc.valid && !sc.oom);
          keep(sc);
        }
      }
    }
  }

  const Problem& p_;
  const SearchBudget& budget_;
  const Rainbow3DOptions& o_;
  Rainbow3DStats* stats_;
  const BudgetClock clock_;
  const Graph& g_;
  std::vector<int> devs_;
  int n_ = 0;
  int64_t total_ = 0, used_ = 0, batch_ = 0;
  std::vector<OpId> fwd_;
  std::map<int, std::map<OpId, OpPartition>> templates_;  ///< per TP degree: op -> partition
  std::optional<Warm> grid_;                              ///< the warm start, when the grid applied
  /// The grid's configuration space (context and expert degrees, memory estimate) where the
  /// graph is a layered transformer with Megatron op names.
  std::unique_ptr<MegatronEstimator> space_;
  Scored best_;
};

const OptionTable<Rainbow3DOptions>& rainbow_3d_option_table() {
  static const OptionTable<Rainbow3DOptions> t = [] {
    using O = Rainbow3DOptions;
    OptionTable<O> v(kName);
    add_fields(&v, R"(
      runs                 simulator runs when the budget gives none
      grid_seconds         seconds of the megatron grid's warm start (0: none)
      opp_share            share of the runs for the operator-sharding searches
      pp_share             share of the runs for the cut searches
      max_tp               largest tensor-parallel degree (powers of two within a host)
      max_pp               largest pipeline depth
      max_virtual_stages   most model chunks per pipeline rank (1, 2 or 4)
      top_shapes           probed shapes with a pipeline that get a cut search
      max_shapes           most shapes probed where the graph allows CP or EP
      grid_runs            most configurations the warm start's grid simulates (0: no cap)
      opp_episodes         most episodes of one operator-sharding search
      tie_layers           one sharding decision per block for every layer
      overlap_grad_reduce  all-reduce data-parallel gradients during backward)",
               &O::runs, &O::grid_seconds, &O::opp_share, &O::pp_share, &O::max_tp, &O::max_pp,
               &O::max_virtual_stages, &O::top_shapes, &O::max_shapes, &O::grid_runs,
               &O::opp_episodes, &O::tie_layers, &O::overlap_grad_reduce);
    add_fields(&v, &O::cuts, R"(
      scope_depth   cut pivots: 0 layer boundaries, 1 sub-modules too
      prune_radius  pivots kept either side of a balanced cut)",
               &RainbowPPOptions::scope_depth, &RainbowPPOptions::prune_radius);
    return v;
  }();
  return t;
}

}  // namespace

SearchOutcome Rainbow3DPlacer::search_outcome(const Problem& problem, const SearchBudget& budget) {
  Rainbow3DStats stats;
  const BudgetClock clock(budget, kName);
  Search s(problem, budget, options_, &stats);
  Scored best = s.run();
  const Plan& p = best.plan;
  stats.step_time = best.time;
  stats.v = std::max(1, p.pipeline.virtual_stages);
  stats.pp = int(p.pipeline.stages.size()) / stats.v;
  stats.tp = p.pipeline.stages.empty() ? 1 : p.pipeline.stages[0].tensor_parallel;
  stats.dp = p.pipeline.stages.empty()
                 ? 1
                 : p.pipeline.stages[0].data_parallel() / std::max(1, p.context_parallel.degree);
  stats.micro_batches = p.pipeline.micro_batches;
  stats.zero_stage = p.data_parallel.zero_stage;
  stats.recompute = p.recompute == Recompute::kFull        ? 2
                    : p.recompute == Recompute::kSelective ? 1
                                                           : 0;
  stats.sequence_parallel = p.tensor_parallel.sequence_parallel;
  stats.cp = p.context_parallel.degree;
  stats.cp_comm = p.context_parallel.comm;
  stats.ep = p.expert_parallel.degree;
  stats.etp = p.expert_parallel.tensor_parallel;
  stats.seconds = clock.elapsed();
  int64_t runs_to_5pct = -1;  // first run whose best was within 5% of the final one
  for (const auto& [runs, time] : stats.improvements) {
    if (time <= 1.05 * best.time) {
      runs_to_5pct = runs;
      break;
    }
  }
  return search_outcome_of(std::move(best.plan), stats.runs + stats.opp_runs + stats.grid_runs, 0,
                           stats.seconds,
                           {{"tp", stats.tp},
                            {"pp", stats.pp},
                            {"virtual_stages", stats.v},
                            {"dp", stats.dp},
                            {"micro_batches", stats.micro_batches},
                            {"opp_runs", double(stats.opp_runs)},
                            {"cut_runs", double(stats.cut_runs)},
                            {"layout_runs", double(stats.layout_runs)},
                            {"step_time", stats.step_time},
                            {"shapes", stats.shapes},
                            {"probe_runs", double(stats.probe_runs)},
                            {"zero_stage", stats.zero_stage},
                            {"recompute", stats.recompute},
                            {"sequence_parallel", stats.sequence_parallel ? 1.0 : 0.0},
                            {"cp", stats.cp},
                            {"cp_comm", double(static_cast<int>(stats.cp_comm))},
                            {"ep", stats.ep},
                            {"etp", stats.etp},
                            {"grid_runs", double(stats.grid_runs)},
                            {"grid_step_time", stats.grid_step_time},
                            {"runs_to_5pct", double(runs_to_5pct)}});
}

void add_rainbow_3d_methods(std::vector<MethodInfo>* out) {
  out->push_back(with_options(
      MethodInfo{kName,
                 "Auto-MAP's explorers composed (Wang et al. 2020), warm-started from the "
                 "megatron grid on GPT graphs: Rainbow DQN operator sharding per tensor-parallel "
                 "degree (attention heads included), then DQN pipeline cuts on the grid's and the "
                 "best shapes, then micro-batches / ZeRO-1 / recomputation; 300 simulator runs "
                 "(+ the grid's, 10 s)",
                 false, [] { return std::make_unique<Rainbow3DPlacer>(); }},
      rainbow_3d_option_table(), Rainbow3DOptions{},
      [](const Rainbow3DOptions& o) { return std::make_unique<Rainbow3DPlacer>(o); }));
}

}  // namespace placer
