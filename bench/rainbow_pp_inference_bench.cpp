// Zero-shot rainbow-pp (a pretrained policy, agents/rainbow/rainbow_pp_policy.h) against the online
// rainbow-pp (trained on each graph) and pipeline-dp on real models: simulated step time and
// search time per method. A table-printing program, not a Google Benchmark (no timing
// asserts anywhere); results go to docs/results.md with the command.
//
//   rainbow_pp_inference_bench [--policy models/pretrained/rainbow_pp.pt]
//       [--cluster datasets/clusters/automap_config_a.cluster.yaml]
//       [--models transformer_enc6_d512,...] [--samples 0] [--no-online] [--arrays]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <torch/utils.h>

#include "agents/api/placer.h"
#include "agents/rainbow/rainbow_pp_policy.h"
#include "env/pipeline_arrays.h"
#include "env/pipeline_env.h"
#include "simulator/cost_profile.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/io/graph_json.h"
#include "src/util/error.h"

namespace {

using namespace placer;
using Clock = std::chrono::steady_clock;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string x;
  while (std::getline(in, x, ',')) {
    if (!x.empty()) out.push_back(x);
  }
  return out;
}

struct Row {
  double time = 0, seconds = 0;
  bool oom = false;
};

Row run(Placer& p, const Problem& problem, Simulator& sim) {
  const auto t0 = Clock::now();
  SearchBudget b;
  b.seed = 1;
  const Plan plan = p.search(problem, b);
  Row r;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  SimOptions so;
  so.critical_path = false;
  const SimResult s = sim.run(plan, so);
  r.time = s.step_time;
  r.oom = s.oom;
  return r;
}

std::string ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", s * 1e3);
  return buf;
}


/// How well the analytic array length ranks the simulator's step times: every cut set of
/// reachable pivots (S = 4, at most 5000 sets) scored both ways.
void correlate_model(const std::string& root, const std::string& m, const Cluster& cluster,
                     const CostModel& cost) {
  Graph g = load_graph_json(root + "/datasets/models/" + m + ".graph.json");
  if (!g.is_training_step()) g = expand_training_step(g);
  PipelineEnvOptions eo;
  eo.stages = 4;
  eo.prune = false;
  eo.simulate = false;
  PipelineEnv env(g, cluster, cost, eo);
  std::vector<int> devices;
  for (int d = 0; d < cluster.num_devices(); ++d) devices.push_back(d);
  const int F = static_cast<int>(env.forward_order().size());
  PositionArrays raw = graph_position_arrays(g, cost, env.position_of_op(), F, 0);
  double peak = 1;
  ArrayProblem ap;
  ap.topology = cost_topology(cluster, cost, devices, &peak);
  for (double& x : raw.activation) x /= peak;
  for (double& x : raw.params) x /= peak;
  ap.arrays = coarsen_arrays(raw, env.pivots());
  for (const auto& gr : env.device_groups()) ap.stage_devices.push_back(static_cast<int>(gr.size()));
  ap.micro_batches = env.micro_batches();
  std::vector<int> pts;  // allowed coarse points, each a distinct pivot
  for (int j = 0; j < kCutActions; ++j) {
    if (ap.arrays.allowed[static_cast<size_t>(j)]) pts.push_back(j);
  }
  std::vector<int> pivot_of;
  for (int j : pts) {
    const int b = ap.arrays.boundary[static_cast<size_t>(j)];
    pivot_of.push_back(static_cast<int>(
        std::lower_bound(env.pivots().begin(), env.pivots().end(), b) - env.pivots().begin()));
  }
  const int P = static_cast<int>(pts.size());
  std::vector<double> L, T;
  double best_t = 1e300, t_of_best_l = 0, best_l = 1e300;
  for (int a = 0; a < P; ++a)
    for (int b = a + 1; b < P; ++b)
      for (int c = b + 1; c < P && L.size() < 5000; ++c) {
        const double l = pipeline_length(ap, {pts[size_t(a)], pts[size_t(b)], pts[size_t(c)]});
        const PipelineStepResult r =
            env.evaluate({pivot_of[size_t(a)], pivot_of[size_t(b)], pivot_of[size_t(c)]});
        const double t = r.oom ? 1e9 : r.step_time;
        L.push_back(l);
        T.push_back(t);
        best_t = std::min(best_t, t);
        if (l < best_l) best_l = l, t_of_best_l = t;
      }
  auto ranks = [](const std::vector<double>& v) {
    std::vector<size_t> idx(v.size());
    for (size_t i = 0; i < v.size(); ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&v](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < idx.size(); ++i) r[idx[i]] = static_cast<double>(i);
    return r;
  };
  const std::vector<double> rl = ranks(L), rt = ranks(T);
  const double n = static_cast<double>(L.size());
  double d2 = 0;
  for (size_t i = 0; i < L.size(); ++i) d2 += (rl[i] - rt[i]) * (rl[i] - rt[i]);
  const double rho = n > 1 ? 1 - 6 * d2 / (n * (n * n - 1)) : 0;
  const double center_t = env.evaluate(env.center_solution()).step_time;
  std::printf("%-24s pivots %3d reachable %3d sets %5zu spearman %.3f  best sim %s ms, "
              "sim of best-L %s ms, center %s ms\n",
              m.c_str(), env.num_pivots(), P, L.size(), rho, ms(best_t).c_str(),
              ms(t_of_best_l).c_str(), ms(center_t).c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
#ifdef PLACER_SOURCE_DIR
  std::string root = PLACER_SOURCE_DIR;
#else
  std::string root = ".";  // run from the repository root
#endif
  std::string policy = root + "/models/pretrained/rainbow_pp.pt";
  std::string cluster_path = root + "/datasets/clusters/automap_config_a.cluster.yaml";
  std::string models =
      "transformer_enc6_d512,transformer_enc12_d768,lstm_seq2seq_l2_h512,resnet50,vgg13";
  int samples = 0;
  bool online = true, arrays = false, correlate = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--policy") {
      policy = next();
    } else if (a == "--cluster") {
      cluster_path = next();
    } else if (a == "--models") {
      models = next();
    } else if (a == "--samples") {
      samples = std::atoi(next().c_str());
    } else if (a == "--no-online") {
      online = false;
    } else if (a == "--arrays") {
      arrays = true;
    } else if (a == "--correlate") {
      correlate = true;
    } else {
      std::cerr << "unknown option " << a << "\n";
      return 2;
    }
  }
  torch::set_num_threads(1);
  try {
    const Cluster cluster = load_cluster_yaml(cluster_path);
    const CostModel cost(cluster, default_profile());
    if (correlate) {
      for (const std::string& m : split(models)) correlate_model(root, m, cluster, cost);
      return 0;
    }
    RainbowPPPolicyOptions po;
    po.samples = samples;
    auto zero_shot = make_rainbow_pp_policy_placer(policy, po);
    std::printf("policy %s, cluster %s (%d devices), samples %d\n\n", policy.c_str(),
                cluster.name.c_str(), cluster.num_devices(), samples);
    std::printf("%-24s %9s %11s %11s %11s %11s %8s %8s %7s %s\n", "model (ms)", "center",
                "pipeline-dp", "online-rbpp", "zs-greedy", "zs-final", "zs/pdp", "zs/onl",
                "zs s", "winner");
    for (const std::string& m : split(models)) {
      Graph g = load_graph_json(root + "/datasets/models/" + m + ".graph.json");
      if (!g.is_training_step()) g = expand_training_step(g);
      Simulator sim(g, cluster, cost);
      Problem problem{g, cluster, cost, sim, {}};
      auto pdp = make_placer("pipeline-dp");
      const Row rp = run(*pdp, problem, sim);
      Row ro;
      if (online) {
        auto on = make_placer("rainbow-pp");
        ro = run(*on, problem, sim);
      }
      const Row rz = run(*zero_shot, problem, sim);
      const RainbowPPInferenceInfo info = rainbow_pp_inference_info(*zero_shot);
      std::printf("%-24s %9s %11s %11s %11s %11s %8.3f %8s %7.2f %s%s\n", m.c_str(),
                  ms(info.center_time).c_str(), (ms(rp.time) + (rp.oom ? "!" : "")).c_str(),
                  online ? ms(ro.time).c_str() : "-", ms(info.policy_time).c_str(),
                  ms(rz.time).c_str(), rz.time / rp.time,
                  online ? std::to_string(rz.time / ro.time).substr(0, 5).c_str() : "-",
                  rz.seconds, info.used_policy ? "policy cuts" : "center cuts",
                  info.layout_changed ? " + layout" : "");
      if (arrays) {
        std::printf("  positions %d, pivots %d, coarse cuts", info.positions, info.pivots);
        for (int c : info.coarse_cuts) std::printf(" %d", c);
        std::printf(", pivot cuts");
        for (int c : info.pivot_cuts) std::printf(" %d", c);
        std::printf("; search s: pipeline-dp %.2f, online %.2f\n", rp.seconds, ro.seconds);
      }
      std::fflush(stdout);
    }
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
