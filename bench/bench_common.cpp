#include "bench/bench_common.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <utility>

#include "datasets/family_registry.h"
#include "simulator/cost_profile.h"
#include "src/graph/training_step.h"
#include "src/io/graph_json.h"
#include "src/util/error.h"

namespace placer {
namespace bench {

std::string repo_path(const std::string& rel) {
  const std::filesystem::path here = std::filesystem::path(__FILE__).parent_path().parent_path();
  const std::filesystem::path p = here / rel;
  return std::filesystem::exists(p) ? p.string() : rel;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::vector<int> parse_int_list(const std::string& s, const std::string& option) {
  std::vector<int> out;
  for (const std::string& item : split_list(s)) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || used == 0) {
      throw Error(option + ": '" + item + "' is not an integer");
    }
    out.push_back(v);
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return NAN;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / double(v.size()));
}

std::string format_ms(double seconds, int decimals, const std::string& not_finite) {
  if (!std::isfinite(seconds)) return not_finite;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, seconds * 1e3);
  return buf;
}

std::string format_count(int64_t n) { return n < 0 ? "-" : std::to_string(n); }

std::vector<SuiteGraph> gdp_suite() {
  // label, family, seed (set below), fixed parameters, devices.
  std::vector<SuiteGraph> out = {{"rnnlm_2", "rnnlm", 0, {{"layers", 2}}, {2}},
                                 {"rnnlm_4", "rnnlm", 0, {{"layers", 4}}, {4}},
                                 {"gnmt_2", "gnmt", 0, {{"layers", 2}}, {2}},
                                 {"gnmt_4", "gnmt", 0, {{"layers", 4}}, {4}},
                                 {"gnmt_8", "gnmt", 0, {{"layers", 8}}, {8}},
                                 {"txl_2", "transformer_xl", 0, {{"layers", 2}}, {2}},
                                 {"txl_4", "transformer_xl", 0, {{"layers", 4}}, {4}},
                                 {"txl_8", "transformer_xl", 0, {{"layers", 8}}, {8}},
                                 {"inception", "inception", 0, {}, {2}},
                                 {"amoebanet", "amoebanet", 0, {}, {4}},
                                 {"wavenet_2", "wavenet", 0, {{"stacks", 2}}, {2}},
                                 {"wavenet_4", "wavenet", 0, {{"stacks", 4}}, {4}}};
  for (size_t i = 0; i < out.size(); ++i) out[i].seed = 7001 + i;
  return out;
}

std::vector<SuiteGraph> placeto_suite() {
  std::vector<SuiteGraph> out;
  for (const char* family : {"enas_cnn", "enas_rnn", "gnmt"}) {
    for (uint64_t seed = 1000; seed < 1003; ++seed) {
      out.push_back({std::string(family) + "_" + std::to_string(seed), family, seed, {}, {2, 4}});
    }
  }
  return out;
}

Graph family_training_step(const SuiteGraph& g) {
  FamilyRanges ranges;
  for (const auto& [name, v] : g.fixed) ranges.overrides[name] = ParamRange::fixed(v);
  return expand_training_step(make_family_graph(g.family, g.seed, ranges, g.label));
}

std::string model_path(const std::string& name) {
  if (std::filesystem::exists(name)) return name;
  return repo_path("datasets/models/" + name + ".graph.json");
}

Graph model_training_step(const std::string& path) {
  Graph forward = load_graph_json(path);
  return forward.is_training_step() ? forward : expand_training_step(forward);
}

CostModel default_cost_model(const Cluster& cluster) {
  return CostModel(cluster, default_profile());
}

std::vector<int> first_devices(const Cluster& cluster, int k) {
  if (k < 1 || k > cluster.num_devices()) {
    throw ValidationError("device count " + std::to_string(k) + " is not in [1, " +
                          std::to_string(cluster.num_devices()) + "] (cluster " + cluster.name +
                          ")");
  }
  std::vector<int> devs(static_cast<size_t>(k));
  for (int d = 0; d < k; ++d) devs[static_cast<size_t>(d)] = d;
  return devs;
}

StepProblem::StepProblem(Graph step, const Cluster& cluster, const CostModel& cost)
    : graph_(std::move(step)),
      cluster_(cluster),
      cost_(cost),
      sim_(std::make_unique<Simulator>(graph_, cluster_, cost_)) {}

StepProblem::~StepProblem() = default;

Problem StepProblem::problem(const std::vector<int>& devices) {
  return Problem{graph_, cluster_, cost_, *sim_, devices};
}

double simulate_plan(const Problem& p, const Plan& plan) {
  plan.validate(p.graph, p.cluster);
  SimOptions o;
  o.critical_path = false;
  const SimResult r = p.simulator.run(plan, o);
  return r.oom ? INFINITY : r.step_time;
}

std::vector<std::string> fast_classical_methods() {
  std::vector<std::string> out;
  for (const MethodInfo& m : placer_methods()) {
    if (m.fast && m.name != "gdp" && m.name != "anneal") out.push_back(m.name);
  }
  return out;
}

}  // namespace bench
}  // namespace placer
