// Simulator fidelity on measured training runs: predicts every run of a measured-runs CSV
// (docs/formats/iteration_runs.md) with a cluster and cost profile and prints the error
// table (MAPE, median, p90, signed mean, Spearman), overall and by micro-batch, hidden size
// and tensor-parallel degree. Results and commands: docs/results.md.
//
//   ./build/bench/megatron_fidelity --runs datasets/measurements/megatron_gpt_a100_1node.csv
//       --cluster datasets/clusters/dgx_a100.cluster.yaml
//       --profile datasets/clusters/dgx_a100.profile.yaml [--every 5] [--csv out.csv]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "simulator/calibration/iteration_runs.h"
#include "simulator/cost_profile.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

using namespace placer;

namespace {

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  auto ranks = [](const std::vector<double>& v) {
    std::vector<size_t> idx(v.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < idx.size();) {
      size_t j = i;
      while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
      for (size_t k = i; k <= j; ++k) r[idx[k]] = 0.5 * double(i + j);
      i = j + 1;
    }
    return r;
  };
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = double(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0;
}

struct Row {
  const IterationRun* run;
  double predicted;
};

void print_summary(const std::string& label, const std::vector<Row>& rows) {
  if (rows.empty()) return;
  std::vector<double> ape, meas, pred;
  double signed_sum = 0;
  for (const Row& r : rows) {
    const double e = (r.predicted - r.run->measured) / r.run->measured;
    ape.push_back(std::fabs(e));
    signed_sum += e;
    meas.push_back(r.run->measured);
    pred.push_back(r.predicted);
  }
  std::vector<double> s = ape;
  std::sort(s.begin(), s.end());
  const double mape = std::accumulate(ape.begin(), ape.end(), 0.0) / double(ape.size());
  const double med = s[s.size() / 2];
  const double p90 = s[std::min(s.size() - 1, size_t(std::ceil(0.9 * double(s.size()))) - 1)];
  std::printf("| %-22s | %5zu | %6.1f%% | %6.1f%% | %6.1f%% | %+7.1f%% | %6.3f |\n", label.c_str(),
              rows.size(), 100 * mape, 100 * med, 100 * p90,
              100 * signed_sum / double(rows.size()), spearman(meas, pred));
}

}  // namespace

int main(int argc, char** argv) {
  std::string runs_path = "datasets/measurements/megatron_gpt_a100_1node.csv";
  std::string cluster_path = "datasets/clusters/dgx_a100.cluster.yaml";
  std::string profile_path = "datasets/clusters/dgx_a100.profile.yaml";
  std::string csv_path;
  int every = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "megatron_fidelity: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--runs") runs_path = next();
    else if (a == "--cluster") cluster_path = next();
    else if (a == "--profile") profile_path = next();
    else if (a == "--csv") csv_path = next();
    else if (a == "--every") every = std::max(1, std::atoi(next().c_str()));
    else {
      std::fprintf(stderr,
                   "usage: megatron_fidelity [--runs CSV] [--cluster C] [--profile P] [--every K] "
                   "[--csv OUT]\n");
      return 2;
    }
  }
  try {
    const std::vector<IterationRun> runs = load_iteration_runs(runs_path);
    const Cluster cluster = load_cluster_yaml(cluster_path);
    const CostProfile profile = load_cost_profile(profile_path);
    RunPredictor predictor(cluster);
    std::vector<Row> rows;
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < runs.size(); i += size_t(every)) {
      rows.push_back({&runs[i], predictor.predict(runs[i], profile)});
      if (rows.size() % 100 == 0) std::fprintf(stderr, "  %zu runs simulated\n", rows.size());
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("# %zu of %zu runs of %s, cluster %s, profile %s; simulated in %.1f s\n",
                rows.size(), runs.size(), runs_path.c_str(), cluster_path.c_str(),
                profile_path.c_str(), secs);
    std::printf("| %-22s | %5s | %7s | %7s | %7s | %8s | %6s |\n", "rows", "n", "MAPE", "median",
                "p90", "signed", "Spearman");
    std::printf("|---|---|---|---|---|---|---|\n");
    print_summary("all", rows);
    auto by = [&](const char* name, const std::function<int(const IterationRun&)>& key) {
      std::map<int, std::vector<Row>> groups;
      for (const Row& r : rows) groups[key(*r.run)].push_back(r);
      for (const auto& [k, g] : groups) print_summary(std::string(name) + " " + std::to_string(k), g);
    };
    by("micro_batch", [](const IterationRun& r) { return r.config.micro_batch; });
    by("hidden", [](const IterationRun& r) { return int(r.hidden); });
    by("tp", [](const IterationRun& r) { return r.config.tp; });
    by("pp", [](const IterationRun& r) { return r.config.pp; });
    by("dp", [](const IterationRun& r) { return r.config.dp; });
    if (!csv_path.empty()) {
      std::ofstream out(csv_path);
      out << "line,hidden,layers,global_batch,micro_batch,tp,dp,pp,measured_ms,predicted_ms\n";
      for (const Row& r : rows) {
        const IterationRun& x = *r.run;
        out << x.line << ',' << x.hidden << ',' << x.layers << ',' << x.config.global_batch << ','
            << x.config.micro_batch << ',' << x.config.tp << ',' << x.config.dp << ','
            << x.config.pp << ',' << x.measured * 1e3 << ',' << r.predicted * 1e3 << '\n';
      }
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "megatron_fidelity: %s\n", e.what());
    return 1;
  }
  return 0;
}
