#pragma once
// Pieces shared by the table-printing benchmark programs (gdp_quality, opp_expectations,
// learned_placers): repository paths, comma lists, the suites of the learned-placer papers
// (GDP's Table 1 rows, Placeto's families), building a training-step problem from a family
// graph or a model file on the first K devices of a cluster, simulating a plan, the
// geomean and the table cells. No LibTorch here.
//
//   const Cluster cluster = load_cluster_yaml(repo_path("datasets/clusters/x.cluster.yaml"));
//   const CostModel cost = default_cost_model(cluster);
//   StepProblem sp(family_training_step(gdp_suite()[0]), cluster, cost);
//   const Problem p = sp.problem(first_devices(cluster, 4));
//   const double t = simulate_plan(p, make_placer("metis")->search(p, SearchBudget{}));

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "simulator/cost_model.h"
#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/plan/plan.h"

namespace placer {
namespace bench {

/// `rel` under the repository root this program was built from, when that exists there;
/// else `rel` unchanged (relative to the working directory).
std::string repo_path(const std::string& rel);

/// "a,b,,c" -> {"a", "b", "c"} (empty items dropped).
std::vector<std::string> split_list(const std::string& s);
/// "2,4,8" -> {2, 4, 8}; throws Error naming `option` for an item that is not an integer.
std::vector<int> parse_int_list(const std::string& s, const std::string& option);

double seconds_since(std::chrono::steady_clock::time_point t0);

/// Geometric mean; NaN for an empty list.
double geomean(const std::vector<double>& v);

/// Step time `seconds` as milliseconds with `decimals` digits ("15.635"), or `not_finite`
/// for +inf / NaN (failed or OOM plans).
std::string format_ms(double seconds, int decimals, const std::string& not_finite = "oom/fail");
/// n, or "-" for a negative count (not tracked / never reached).
std::string format_count(int64_t n);

/// One graph of a suite: make_family_graph(family, seed) with `fixed` parameters, called
/// `label`, and the device counts the paper places it on.
struct SuiteGraph {
  std::string label;
  std::string family;
  uint64_t seed = 0;
  std::map<std::string, int64_t> fixed;
  std::vector<int> devices;
};

/// GDP's table suite (Zhou et al. 2019, Table 1), in gdp_quality's row order: RNNLM 2/4
/// layers, GNMT 2/4/8, Transformer-XL 2/4/8, Inception, AmoebaNet, WaveNet 2/4 stacks,
/// seeds 7001 + index. devices: one count per graph, the layer / stack count (Inception 2,
/// AmoebaNet 4).
std::vector<SuiteGraph> gdp_suite();

/// Placeto's suite (Addanki et al. 2019): its three graph families as in the registry,
/// enas_cnn (cifar10), enas_rnn (ptb), gnmt (nmt), three members each at default sizes,
/// seeds 1000..1002 (used neither by the default corpus nor by family training on seeds
/// 1..), on 2 and 4 devices.
std::vector<SuiteGraph> placeto_suite();

/// The forward graph of `g` expanded to its training step (expand_training_step).
Graph family_training_step(const SuiteGraph& g);

/// datasets/models/<name>.graph.json, or `name` itself when that file exists.
std::string model_path(const std::string& name);
/// The graph file `path` as a training step (expanded unless it already is one).
Graph model_training_step(const std::string& path);

/// The cost model of `cluster` with the shipped default profile.
CostModel default_cost_model(const Cluster& cluster);

/// Devices 0..k-1; throws ValidationError when k < 1 or the cluster has fewer devices.
std::vector<int> first_devices(const Cluster& cluster, int k);

/// A training step and its simulator on a cluster; hands out Problems on device subsets.
/// Not copyable or movable (the simulator and the Problems refer to the graph).
class StepProblem {
 public:
  StepProblem(Graph step, const Cluster& cluster, const CostModel& cost);
  ~StepProblem();
  StepProblem(const StepProblem&) = delete;
  StepProblem& operator=(const StepProblem&) = delete;

  const Graph& graph() const { return graph_; }
  Simulator& simulator() { return *sim_; }
  /// The problem on `devices`; valid while this object lives.
  Problem problem(const std::vector<int>& devices);

 private:
  Graph graph_;
  const Cluster& cluster_;
  const CostModel& cost_;
  std::unique_ptr<Simulator> sim_;
};

/// Validates `plan` and simulates it without the critical path: the step time, +inf on OOM.
double simulate_plan(const Problem& p, const Plan& plan);

/// The registered fast classical placers (placer_methods(), fast) except gdp and anneal:
/// the "best classical" column of the benches.
std::vector<std::string> fast_classical_methods();

}  // namespace bench
}  // namespace placer
