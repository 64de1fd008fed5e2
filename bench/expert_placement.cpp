// Expert placement on held-out routing distributions (docs/expert_placement.md): the step of
// round-robin, EPLB, annealing over maps (from EPLB's) and expert-rl (the shipped policy,
// which chooses the replica counts, zero-shot and fine-tuned with as many evaluations as
// annealing; and models/pretrained/expert_rl_eplb_counts.pt, which places EPLB's copies) on
// the test split and on the families no policy is trained on, as geometric means of the
// ratio to EPLB; a lower bound on any map's step (under the simulator: EPLB's step less its
// experts' imbalance and all its all-to-alls; under the layer model expert_step_bound) and,
// under the simulator, the step of a perfectly balanced load and the share of EPLB's step in
// the experts' GEMMs and the all-to-alls; how often
// expert-rl ends above round-robin; the evaluations annealing and fine-tuning take to come
// within 5% of their final best; and the time EPLB and expert-rl take to place a
// 256-expert x 61-layer model. Three objectives: the simulated step of the whole plan of two
// models (4-layer Llamas with 64-expert MoE MLPs, data parallel over 2 nodes x 8 H100 with
// expert parallelism 16, through the expert placers' problem of agents/experts/): "sim toy"
// (hidden 1024, experts of width 512: the experts' GEMMs a twentieth of the step) and "sim
// dsv3" (MoE layers shaped as DeepSeek-V3's: hidden 7168, MLA, experts of width 2048 and a
// shared one, 4096 tokens per GPU); and the expert layer's step model of
// src/plan/expert_balance.h (slowest rank's expert compute plus the all-to-alls within and
// across nodes, with replicas serving their own node) on a DeepSeek-V3-shaped layer.
//
//   expert_placement [--count N] [--evaluations N] [--sim-evaluations N]
//                    [--problems toy,dsv3,layer]   (which rows; default all)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agents/experts/expert_episode.h"
#include "agents/experts/expert_problem.h"
#include "agents/experts/expert_rl.h"
#include "datasets/gpt.h"
#include "datasets/routing_gen.h"
#include "simulator/cost_profile.h"
#include "src/graph/moe_attrs.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/plan/expert_balance.h"
#include "src/plan/expert_search.h"

namespace placer {
namespace {

struct Setup {
  ExpertTopology topo{16, 8};  // 2 nodes x 8 GPUs
  EplbOptions eplb{16, 0};     // 64 experts + 16 copies: 5 per rank
  ExpertStepCost cost;
  RoutingGenOptions shape;
  Setup() {
    // DeepSeek-V3's routed expert on 16 GPUs (the cost expert-rl is pretrained under).
    cost = ExpertRlTrainOptions::deepseek_layer_cost();
    shape.layers = 4;
    shape.experts = 64;
    shape.top_k = 8;
    shape.tokens = 4096 * 16;
  }
};

std::vector<ExpertLayerMap> maps_of(const RoutingStats& r, const Setup& s, bool eplb) {
  std::vector<ExpertLayerMap> m;
  for (const auto& share : r.share) {
    m.push_back(eplb ? eplb_layer(share, s.topo, s.eplb)
                     : round_robin_layer(int(share.size()), s.topo.ranks));
  }
  return m;
}

struct SplitRow {
  std::vector<double> rr, anneal, zero, tuned;  // ratios to EPLB (zero, tuned: expert-rl)
  std::vector<double> eplb_counts;              // the policy on EPLB's copy counts, zero-shot
  std::vector<double> bound;                    // a lower bound on any map's step, over EPLB's
  std::vector<double> balanced;                 // simulator: a perfectly balanced load, over EPLB's
  std::vector<double> gemm, all_to_all;         // simulator: their share of EPLB's step
  std::vector<int64_t> samples, tuned_samples;  // evaluations to within 5% of the best
  int worse_than_rr = 0;                        // expert-rl zero-shot or tuned above rr
};

/// The shipped expert-rl policy, loaded once (a fresh copy per fine-tuning).
std::unique_ptr<ExpertPolicy> shipped_policy() {
  return ExpertPolicy::load(default_expert_policy_path());
}

std::vector<std::vector<int>> copies_of(const std::vector<ExpertLayerMap>& maps) {
  std::vector<std::vector<int>> c;
  for (const ExpertLayerMap& m : maps) {
    c.emplace_back();
    for (const std::vector<int>& r : m.replicas) c.back().push_back(int(r.size()));
  }
  return c;
}

/// A lower bound on any map's step; and, under the simulator (0 elsewhere), the step of a
/// perfectly balanced load and the seconds of EPLB's step in the routed experts' GEMMs and
/// in the all-to-alls.
struct StepBounds {
  double bound = 0, balanced = 0, gemm = 0, all_to_all = 0;
};

/// The maps of one distribution and the objective that judges them.
struct Evaluator {
  std::function<std::vector<ExpertLayerMap>(bool eplb)> maps;
  ExpertObjective step;
  std::function<StepBounds()> bounds;
  const RoutingStats* routing;
  ExpertTopology topo;
  int slots_per_rank;
};

void add_learned(SplitRow* row, const Evaluator& ev, int64_t evaluations, double eplb, double rr) {
  const std::vector<std::vector<int>> copies = copies_of(ev.maps(true));
  std::unique_ptr<ExpertPolicy> policy = shipped_policy();
  const double zero = ev.step(policy->place(ev.routing->share, copies, ev.topo, ev.slots_per_rank));
  const std::unique_ptr<ExpertPolicy> counts = ExpertPolicy::load(
      std::string(PLACER_SOURCE_DIR) + "/models/pretrained/expert_rl_eplb_counts.pt");
  row->eplb_counts.push_back(
      ev.step(counts->place(ev.routing->share, copies, ev.topo, ev.slots_per_rank)) / eplb);
  std::vector<double> curve;
  const int samples = 8;
  const std::vector<ExpertLayerMap> tuned =
      policy->finetune(ev.routing->share, copies, ev.topo, ev.slots_per_rank, ev.step,
                       std::max<int64_t>(1, evaluations / samples), samples, 1, &curve);
  const double best = ev.step(tuned);
  row->zero.push_back(zero / eplb);
  row->tuned.push_back(best / eplb);
  row->tuned_samples.push_back(samples_to_within(curve, 0.05));
  if (zero > rr || best > rr) ++row->worse_than_rr;
}

void add_row(SplitRow* row, const Evaluator& ev, int64_t evaluations) {
  const double eplb = ev.step(ev.maps(true));
  const double rr = ev.step(ev.maps(false));
  row->rr.push_back(rr / eplb);
  const StepBounds b = ev.bounds();
  row->bound.push_back(b.bound / eplb);
  if (b.balanced > 0) {
    row->balanced.push_back(b.balanced / eplb);
    row->gemm.push_back(b.gemm / eplb);
    row->all_to_all.push_back(b.all_to_all / eplb);
  }
  ExpertAnnealOptions o;
  o.evaluations = evaluations;
  const ExpertSearchResult a = anneal_expert_maps(ev.maps(true), ev.topo.ranks, ev.step, o);
  row->anneal.push_back(a.best / eplb);
  row->samples.push_back(samples_to_within(a.best_curve, 0.05));
  add_learned(row, ev, evaluations, eplb, rr);
}

SplitRow run_model_split(RoutingSplit split, int count, int64_t evaluations, const Setup& s) {
  SplitRow row;
  for (const RoutingTrace& t : routing_corpus(split, count, s.shape, 7)) {
    const RoutingStats r = t.stats();
    const int slots = (s.shape.experts + s.eplb.redundant) / s.topo.ranks;
    add_row(
        &row,
        {[&](bool eplb) { return maps_of(r, s, eplb); },
         [&](const std::vector<ExpertLayerMap>& m) { return expert_step(r, m, s.topo, s.cost); },
         [&] { return StepBounds{expert_step_bound(r, s.topo, s.cost, slots)}; }, &r, s.topo,
         slots},
        evaluations);
  }
  return row;
}

/// A whole-plan problem: a 4-layer Llama with 64-expert MoE MLPs (top 8), data parallel over
/// devices 0-15 of h100_ib_4node (2 nodes x 8 H100, the shipped profile) with expert
/// parallelism 16, one sample of `seq_len` tokens per GPU.
struct PlanShape {
  const char* name;
  int64_t hidden, heads, expert_ffn, seq_len;
  bool deepseek;  ///< DeepSeek-V3's attention (MLA), shared expert and router biases
};

/// The small model: the routed experts' GEMMs are a twentieth of the step.
constexpr PlanShape kToyShape{"sim toy", 1024, 8, 512, 1024, false};
/// MoE layers shaped as DeepSeek-V3's (hidden 7168, 128 MLA heads, experts of width 2048,
/// a shared expert of width 2048, 4096 tokens per GPU): the layer of the layer model.
constexpr PlanShape kDeepSeekShape{"sim dsv3", 7168, 128, 2048, 4096, true};

Graph plan_graph(const PlanShape& shape) {
  LlamaOptions o;
  o.layers = 4;
  o.hidden = shape.hidden;
  o.heads = shape.heads;
  o.seq_len = shape.seq_len;
  o.batch = 16;
  o.vocab = 32000;
  o.moe.experts = 64;
  o.moe.top_k = 8;
  o.moe.expert_ffn = shape.expert_ffn;
  if (shape.deepseek) {
    o.mla = MlaOptions{1536, 512, 64, 128, 128};
    o.moe.shared_ffn = 2048;
    o.moe.router_bias = true;
  }
  return expand_training_step(make_llama(o));
}

struct PlanSetup {
  const PlanShape& shape;
  Graph graph;
  Cluster cluster = load_cluster_yaml(std::string(PLACER_SOURCE_DIR) +
                                      "/datasets/clusters/h100_ib_4node.cluster.yaml");
  CostModel cost{cluster, load_cost_profile(std::string(PLACER_SOURCE_DIR) +
                                            "/datasets/clusters/h100.profile.yaml")};
  std::unique_ptr<Simulator> sim;
  explicit PlanSetup(const PlanShape& s) : shape(s), graph(plan_graph(s)) {
    sim = std::make_unique<Simulator>(graph, cluster, cost);
  }
};

/// Seconds of device `d`'s timeline in the routed experts' GEMMs (forward and backward, per
/// MoE layer) and in the expert-parallel all-to-alls.
struct MoeTimeline {
  std::vector<double> gemm;
  double all_to_all = 0;
};

MoeTimeline moe_timeline(const Graph& g, const SimResult& r, int d) {
  MoeTimeline t;
  for (const SimEvent& e : r.events) {
    if (e.device != d) continue;
    if (e.kind == SimEvent::kCollective && e.collective == uint8_t(CollectiveKind::kAllToAll)) {
      t.all_to_all += e.end - e.start;
    }
    if (e.kind != SimEvent::kCompute || e.op == kNoOp) continue;
    const Op& op = g.op(e.op);
    const Op& fwd = op.forward_op == kNoOp ? op : g.op(op.forward_op);
    const std::string* role = find_op_attr(fwd, kMoeRoleAttr);
    if (!role || (*role != kMoeExpertUp && *role != kMoeExpertAct && *role != kMoeExpertDown)) {
      continue;
    }
    const size_t l = size_t(op_attr_int(fwd, kMoeLayerAttr, 1 << 20));
    if (t.gemm.size() <= l) t.gemm.resize(l + 1, 0.0);
    t.gemm[l] += e.end - e.start;
  }
  return t;
}

/// The whole plan's bounds under EPLB's map: (a) a lower bound on any map's step: EPLB's
/// step less its experts' imbalance (each layer's expert GEMMs at the mean rank's load
/// instead of the slowest's) and less every all-to-all (as if free); (b) the step of a
/// perfectly balanced load: uniform routing on round-robin (every rank the mean load, the
/// all-to-all of uniform tokens).
StepBounds plan_bounds(PlanSetup& ps, const Problem& p, const ExpertMethodOptions& o,
                       ExpertProblem& ep) {
  SimOptions so;
  so.critical_path = false;
  so.record_events = true;
  so.routing = &ep.routing();
  const SimResult r = ps.sim->run(ep.plan_with(ep.eplb_maps()), so);
  const MoeTimeline t = moe_timeline(ps.graph, r, p.devices.front());
  double saved = t.all_to_all, gemm = 0;
  for (size_t l = 0; l < t.gemm.size() && l < r.expert_load.size(); ++l) {
    gemm += t.gemm[l];
    const double slowest = *std::max_element(r.expert_load[l].begin(), r.expert_load[l].end());
    saved += t.gemm[l] * (1 - 1 / slowest);
  }
  RoutingStats uniform = ep.routing();
  for (std::vector<double>& row : uniform.share)
    std::fill(row.begin(), row.end(), 1.0 / row.size());
  ExpertProblem even(p, o, "bench", uniform);
  std::vector<ExpertLayerMap> rr;
  for (int l = 0; l < even.layers(); ++l)
    rr.push_back(round_robin_layer(even.experts(), even.topology().ranks));
  return {r.step_time - saved, even.step(rr), gemm, t.all_to_all};
}

SplitRow run_plan_split(RoutingSplit split, int count, int64_t evaluations, PlanSetup& ps,
                        const Setup& s) {
  SplitRow row;
  std::vector<int> devices(16);
  for (int d = 0; d < 16; ++d) devices[d] = d;
  ExpertMethodOptions o;
  o.redundant = s.eplb.redundant;
  for (const RoutingTrace& t : routing_corpus(split, count, s.shape, 7)) {
    const RoutingStats r = t.stats();
    const Problem p{ps.graph, ps.cluster, ps.cost, *ps.sim, devices};
    ExpertProblem ep(p, o, "bench", r);
    add_row(&row,
            {[&](bool eplb) { return eplb ? ep.eplb_maps() : maps_of(r, s, false); },
             [&](const std::vector<ExpertLayerMap>& m) { return ep.step(m); },
             [&] { return plan_bounds(ps, p, o, ep); }, &r, ep.topology(), ep.slots_per_rank()},
            evaluations);
  }
  return row;
}

double geomean(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += std::log(v);
  return std::exp(s / double(x.size()));
}

int64_t median(std::vector<int64_t> x) {
  std::sort(x.begin(), x.end());
  return x[x.size() / 2];
}

/// A DeepSeek-V3-sized model's routing: 61 MoE layers x 256 experts, top 8.
RoutingStats routing_256x61() {
  RoutingGenOptions o;
  o.layers = 61;
  o.experts = 256;
  o.top_k = 8;
  return generate_routing(o).stats();
}

double eplb_time_256x61() {
  const RoutingStats r = routing_256x61();
  const ExpertTopology topo{64, 8};
  const auto t0 = std::chrono::steady_clock::now();
  size_t copies = 0;
  for (const auto& share : r.share)
    copies += eplb_layer(share, topo, EplbOptions{64, 0}).replicas.size();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return copies > 0 ? s : 0;
}

/// expert-rl's zero-shot placement of the same model (the shipped policy; the slots of EPLB's
/// copies, their counts too unless the policy chooses them): wall and CPU seconds.
std::pair<double, double> learned_time_256x61() {
  const RoutingStats r = routing_256x61();
  const ExpertTopology topo{64, 8};
  std::vector<std::vector<int>> copies;
  for (const auto& share : r.share) copies.push_back(eplb_copies(share, topo, EplbOptions{64, 0}));
  const std::unique_ptr<ExpertPolicy> policy = shipped_policy();
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  const std::vector<ExpertLayerMap> maps = policy->place(r.share, copies, topo, 5);
  const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {maps.size() == 61 ? s : 0, cpu};
}

void print_row(const char* objective, RoutingSplit split, const SplitRow& r) {
  std::printf(
      "%-12s %-8s %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %8lld %8lld %6d/%zu %8.3f %8s\n",
      objective, to_string(split), geomean(r.rr), geomean(r.anneal),
      *std::max_element(r.anneal.begin(), r.anneal.end()), geomean(r.eplb_counts), geomean(r.zero),
      geomean(r.tuned), (long long)median(r.samples), (long long)median(r.tuned_samples),
      r.worse_than_rr, r.rr.size(), geomean(r.bound),
      r.balanced.empty() ? "-" : std::to_string(geomean(r.balanced)).substr(0, 5).c_str());
}

double mean(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return s / double(x.size());
}

/// How much of EPLB's simulated step the map can touch.
void print_shares(const char* problem, RoutingSplit split, const SplitRow& r) {
  std::printf(
      "%s %s: under EPLB the routed experts' GEMMs take %.1f%% and the all-to-alls "
      "%.1f%% of the step (mean over distributions, device 0's intervals)\n",
      problem, to_string(split), 100 * mean(r.gemm), 100 * mean(r.all_to_all));
}

struct SimRow {
  const char* problem;
  RoutingSplit split;
  SplitRow row;
};

}  // namespace
}  // namespace placer

int main(int argc, char** argv) {
  using namespace placer;
  int count = 12;
  int64_t evaluations = 2000, sim_evaluations = 300;
  std::string problems = "toy,dsv3,layer";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--count") count = std::atoi(argv[i + 1]);
    if (a == "--evaluations") evaluations = std::atoll(argv[i + 1]);
    if (a == "--sim-evaluations") sim_evaluations = std::atoll(argv[i + 1]);
    if (a == "--problems") problems = argv[i + 1];
  }
  const auto wanted = [&](const char* p) { return problems.find(p) != std::string::npos; };
  const Setup s;
  std::printf(
      "expert placement: %d MoE layers x %d experts (top %d), %d EP ranks on %d nodes, "
      "EPLB with %d redundant copies; %d distributions per split; annealing %lld "
      "evaluations (simulator: %lld)\n",
      s.shape.layers, s.shape.experts, s.shape.top_k, s.topo.ranks, s.topo.nodes(),
      s.eplb.redundant, count, (long long)evaluations, (long long)sim_evaluations);
  std::printf("%-12s %-8s %10s %10s %10s %10s %10s %10s %8s %8s %8s %8s %8s\n", "objective",
              "split", "rr/eplb", "anneal", "anneal max", "rl n=eplb", "rl zero", "rl tuned",
              "ann 5%", "rl 5%", "rl>rr", "bound", "balanced");
  std::vector<SimRow> sim_rows;
  for (const PlanShape* shape : {&kToyShape, &kDeepSeekShape}) {
    if (!wanted(shape == &kToyShape ? "toy" : "dsv3")) continue;
    PlanSetup ps(*shape);
    for (RoutingSplit split : {RoutingSplit::kTest, RoutingSplit::kUnseen}) {
      sim_rows.push_back(
          {shape->name, split, run_plan_split(split, count, sim_evaluations, ps, s)});
      print_row(shape->name, split, sim_rows.back().row);
    }
  }
  for (RoutingSplit split : {RoutingSplit::kTest, RoutingSplit::kUnseen}) {
    if (wanted("layer"))
      print_row("layer model", split, run_model_split(split, count, evaluations, s));
  }
  for (const SimRow& r : sim_rows) print_shares(r.problem, r.split, r.row);
  std::printf(
      "EPLB placement of 256 experts x 61 layers on 64 ranks (8 nodes, 64 redundant): "
      "%.3f s\n",
      eplb_time_256x61());
  const auto [wall, cpu] = learned_time_256x61();
  std::printf("expert-rl zero-shot placement of the same model%s: %.3f s (%.3f CPU s)\n",
              shipped_policy()->chooses_replicas() ? ", replica counts included" : "", wall, cpu);
  return 0;
}
