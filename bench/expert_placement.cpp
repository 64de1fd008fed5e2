// Expert placement on held-out routing distributions (docs/expert_placement.md): the step of
// round-robin, EPLB, annealing over maps (from EPLB's) and expert-rl (the shipped policy
// zero-shot, and fine-tuned with as many evaluations as annealing) on the test split and on
// the families no policy is trained on, as geometric means of the ratio to EPLB; how often
// expert-rl ends above round-robin; the evaluations annealing and fine-tuning take to come
// within 5% of their final best; and the time EPLB and expert-rl take to place a
// 256-expert x 61-layer model. Two objectives: the simulated step of the whole plan (a
// 4-layer Llama with 64-expert MoE MLPs, data parallel over 2 nodes x 8 H100 with expert
// parallelism 16, through the expert placers' problem of agents/experts/), and the expert
// layer's step model of src/plan/expert_balance.h (slowest rank's expert compute plus the
// all-to-alls within and across nodes, with replicas serving their own node) on a
// DeepSeek-V3-shaped layer.
//
//   expert_placement [--count N] [--evaluations N] [--sim-evaluations N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/experts/expert_episode.h"
#include "agents/experts/expert_problem.h"
#include "agents/experts/expert_rl.h"
#include "datasets/gpt.h"
#include "datasets/routing_gen.h"
#include "simulator/cost_profile.h"
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

/// The maps of one distribution and the objective that judges them.
struct Evaluator {
  std::function<std::vector<ExpertLayerMap>(bool eplb)> maps;
  ExpertObjective step;
  const RoutingStats* routing;
  ExpertTopology topo;
  int slots_per_rank;
};

void add_learned(SplitRow* row, const Evaluator& ev, int64_t evaluations, double eplb, double rr) {
  const std::vector<std::vector<int>> copies = copies_of(ev.maps(true));
  std::unique_ptr<ExpertPolicy> policy = shipped_policy();
  const double zero = ev.step(policy->place(ev.routing->share, copies, ev.topo, ev.slots_per_rank));
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
    add_row(
        &row,
        {[&](bool eplb) { return maps_of(r, s, eplb); },
         [&](const std::vector<ExpertLayerMap>& m) { return expert_step(r, m, s.topo, s.cost); },
         &r, s.topo, (s.shape.experts + s.eplb.redundant) / s.topo.ranks},
        evaluations);
  }
  return row;
}

/// The whole-plan problem: a 4-layer Llama with 64-expert MoE MLPs (top 8), data parallel
/// over devices 0-15 of h100_ib_4node with expert parallelism 16.
struct PlanSetup {
  Graph graph;
  Cluster cluster = load_cluster_yaml(std::string(PLACER_SOURCE_DIR) +
                                      "/datasets/clusters/h100_ib_4node.cluster.yaml");
  CostModel cost{cluster, load_cost_profile(std::string(PLACER_SOURCE_DIR) +
                                            "/datasets/clusters/h100.profile.yaml")};
  std::unique_ptr<Simulator> sim;
  PlanSetup() {
    LlamaOptions o;
    o.layers = 4;
    o.hidden = 1024;
    o.heads = 8;
    o.seq_len = 1024;
    o.batch = 16;
    o.vocab = 32000;
    o.moe.experts = 64;
    o.moe.top_k = 8;
    o.moe.expert_ffn = 512;
    graph = expand_training_step(make_llama(o));
    sim = std::make_unique<Simulator>(graph, cluster, cost);
  }
};

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
             [&](const std::vector<ExpertLayerMap>& m) { return ep.step(m); }, &r, ep.topology(),
             ep.slots_per_rank()},
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

/// expert-rl's zero-shot placement of the same model (the shipped policy, EPLB's copy counts).
double learned_time_256x61() {
  const RoutingStats r = routing_256x61();
  const ExpertTopology topo{64, 8};
  std::vector<std::vector<int>> copies;
  for (const auto& share : r.share) copies.push_back(eplb_copies(share, topo, EplbOptions{64, 0}));
  const std::unique_ptr<ExpertPolicy> policy = shipped_policy();
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<ExpertLayerMap> maps = policy->place(r.share, copies, topo, 5);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return maps.size() == 61 ? s : 0;
}

void print_row(const char* objective, RoutingSplit split, const SplitRow& r) {
  std::printf("%-12s %-8s %10.3f %10.3f %10.3f %10.3f %10.3f %8lld %8lld %6d/%zu\n", objective,
              to_string(split), geomean(r.rr), geomean(r.anneal),
              *std::max_element(r.anneal.begin(), r.anneal.end()), geomean(r.zero),
              geomean(r.tuned), (long long)median(r.samples), (long long)median(r.tuned_samples),
              r.worse_than_rr, r.rr.size());
}

}  // namespace
}  // namespace placer

int main(int argc, char** argv) {
  using namespace placer;
  int count = 12;
  int64_t evaluations = 2000, sim_evaluations = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--count") count = std::atoi(argv[i + 1]);
    if (a == "--evaluations") evaluations = std::atoll(argv[i + 1]);
    if (a == "--sim-evaluations") sim_evaluations = std::atoll(argv[i + 1]);
  }
  const Setup s;
  PlanSetup ps;
  std::printf(
      "expert placement: %d MoE layers x %d experts (top %d), %d EP ranks on %d nodes, "
      "EPLB with %d redundant copies; %d distributions per split; annealing %lld "
      "evaluations (simulator: %lld)\n",
      s.shape.layers, s.shape.experts, s.shape.top_k, s.topo.ranks, s.topo.nodes(),
      s.eplb.redundant, count, (long long)evaluations, (long long)sim_evaluations);
  std::printf("%-12s %-8s %10s %10s %10s %10s %10s %8s %8s %8s\n", "objective", "split", "rr/eplb",
              "anneal", "anneal max", "rl zero", "rl tuned", "ann 5%", "rl 5%", "rl>rr");
  for (RoutingSplit split : {RoutingSplit::kTest, RoutingSplit::kUnseen}) {
    print_row("simulator", split, run_plan_split(split, count, sim_evaluations, ps, s));
  }
  for (RoutingSplit split : {RoutingSplit::kTest, RoutingSplit::kUnseen}) {
    print_row("layer model", split, run_model_split(split, count, evaluations, s));
  }
  std::printf(
      "EPLB placement of 256 experts x 61 layers on 64 ranks (8 nodes, 64 redundant): "
      "%.3f s\n",
      eplb_time_256x61());
  std::printf("expert-rl zero-shot placement of the same model: %.3f s\n", learned_time_256x61());
  return 0;
}
