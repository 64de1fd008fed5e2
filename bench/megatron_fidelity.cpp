// Simulator fidelity on measured training runs (fit, cross-validation, extrapolation and
// ranking): predicts every run of a measured-runs CSV
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
#include <tuple>
#include <numeric>
#include <string>
#include <vector>

#include "simulator/calibration/iteration_fit.h"
#include "simulator/calibration/iteration_runs.h"
#include "simulator/cost_profile.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

using namespace placer;

namespace {

struct Row {
  const IterationRun* run;
  double predicted;
};

void print_summary(const std::string& label, const std::vector<Row>& rows) {
  if (rows.empty()) return;
  std::vector<double> meas, pred;
  for (const Row& r : rows) {
    meas.push_back(r.run->measured);
    pred.push_back(r.predicted);
  }
  const FidelitySummary f = summarize_fidelity(meas, pred);
  std::printf("| %-26s | %5d | %6.1f%% | %6.1f%% | %6.1f%% | %+7.1f%% | %6.3f |\n", label.c_str(),
              f.n, 100 * f.mape, 100 * f.median, 100 * f.p90, 100 * f.signed_mean, f.spearman);
}

// Per model (hidden, layers, global batch): is the configuration the simulator ranks
// fastest the measured fastest, and how far is its measured time from the measured best?
void print_ranking(const std::vector<Row>& rows) {
  std::map<std::tuple<int64_t, int, int>, std::vector<const Row*>> groups;
  for (const Row& r : rows) {
    groups[{r.run->hidden, r.run->layers, r.run->config.global_batch}].push_back(&r);
  }
  int n = 0, top1 = 0, within3 = 0;
  for (const auto& [k, g] : groups) {
    if (g.size() < 2) continue;
    ++n;
    const Row* by_pred = *std::min_element(g.begin(), g.end(), [](const Row* a, const Row* b) {
      return a->predicted < b->predicted;
    });
    const Row* by_meas = *std::min_element(g.begin(), g.end(), [](const Row* a, const Row* b) {
      return a->run->measured < b->run->measured;
    });
    top1 += by_pred == by_meas;
    within3 += by_pred->run->measured <= 1.03 * by_meas->run->measured;
  }
  std::printf("# ranking over %d model groups (hidden, layers, global batch; >= 2 configs): "
              "predicted fastest = measured fastest in %.1f%%, within 3%% of the measured best "
              "in %.1f%%\n",
              n, n ? 100.0 * top1 / n : 0.0, n ? 100.0 * within3 / n : 0.0);
}

void print_table(const std::string& title, const std::vector<Row>& rows) {
  std::printf("\n## %s\n", title.c_str());
  std::printf("| %-26s | %5s | %7s | %7s | %7s | %8s | %6s |\n", "rows", "n", "MAPE", "median",
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
  print_ranking(rows);
}

}  // namespace

int main(int argc, char** argv) {
  std::string runs_path = "datasets/measurements/megatron_gpt_a100_1node.csv";
  std::string cluster_path = "datasets/clusters/dgx_a100.cluster.yaml";
  std::string profile_path = "datasets/clusters/dgx_a100.profile.yaml";
  std::string csv_path;
  int every = 1;
  int fit_every = 0;  // > 0: fit the profile on every fit_every-th run first
  int fit_iters = 20;
  std::string write_profile, extrapolate;
  int folds = 0;
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
    else if (a == "--fit-every") fit_every = std::max(1, std::atoi(next().c_str()));
    else if (a == "--fit-iterations") fit_iters = std::max(1, std::atoi(next().c_str()));
    else if (a == "--write-profile") write_profile = next();
    else if (a == "--folds") folds = std::max(0, std::atoi(next().c_str()));
    else if (a == "--extrapolate") extrapolate = next();
    else {
      std::fprintf(stderr,
                   "usage: megatron_fidelity [--runs CSV] [--cluster C] [--profile P] [--every K]\n"
                   "  [--fit-every K [--write-profile OUT]] [--folds K] [--extrapolate hidden|pp]\n"
                   "  [--fit-iterations N] [--csv OUT]\n");
      return 2;
    }
  }
  try {
    const std::vector<IterationRun> runs = load_iteration_runs(runs_path);
    const Cluster cluster = load_cluster_yaml(cluster_path);
    const CostProfile base = load_cost_profile(profile_path);
    IterationFitOptions fo;
    fo.max_iterations = fit_iters;
    auto subsample = [&](const std::vector<IterationRun>& rs) {
      std::vector<IterationRun> out;
      for (size_t i = 0; i < rs.size(); i += size_t(std::max(1, fit_every))) out.push_back(rs[i]);
      return out;
    };
    // Fits on `train` from the base profile, predicts `test`; prints the fit's time.
    auto fit_predict = [&](const std::vector<IterationRun>& train,
                           const std::vector<IterationRun>& test, CostProfile* fitted) {
      const IterationFitResult fr =
          fit_iteration_times(cluster, iteration_fit_start(base), subsample(train), fo);
      std::printf("# fit on %zu runs: %.1f s, %d iterations, %d simulations of them\n",
                  subsample(train).size(), fr.seconds, fr.iterations, fr.simulations);
      if (fitted) *fitted = fr.profile;
      return predict_runs(cluster, fr.profile, test);
    };
    std::printf("# %s, cluster %s, base profile %s\n", runs_path.c_str(), cluster_path.c_str(),
                profile_path.c_str());
    std::vector<Row> rows;
    if (folds >= 2) {
      std::vector<int> fold_of(runs.size());
      for (size_t i = 0; i < runs.size(); ++i) fold_of[i] = int(i % size_t(folds));
      const std::vector<double> pred = cross_validated_predictions(
          cluster, iteration_fit_start(base), runs, fold_of, std::max(1, fit_every), fo,
          [](int fold, const IterationFitResult& fr) {
            std::printf("# fold %d: fit %.1f s, %d iterations, %d simulations\n", fold + 1,
                        fr.seconds, fr.iterations, fr.simulations);
          });
      for (size_t i = 0; i < runs.size(); ++i) rows.push_back({&runs[i], pred[i]});
      print_table(std::to_string(folds) + "-fold cross-validation (each fold fitted on every " +
                      std::to_string(std::max(1, fit_every)) + "-th of its training runs)",
                  rows);
    } else if (!extrapolate.empty()) {
      // Fit on one part, predict the other.
      std::function<bool(const IterationRun&)> in_train;
      if (extrapolate == "hidden") in_train = [](const IterationRun& r) { return r.hidden == 1024; };
      else if (extrapolate == "pp") in_train = [](const IterationRun& r) { return r.config.pp == 1; };
      else throw Error("--extrapolate: use hidden (1024 -> 2048) or pp (1 -> > 1)");
      std::vector<IterationRun> train, test;
      for (const IterationRun& r : runs) (in_train(r) ? train : test).push_back(r);
      const std::vector<double> p = fit_predict(train, test, nullptr);
      for (size_t i = 0; i < test.size(); ++i) rows.push_back({&test[i], p[i]});
      print_table("extrapolation " + extrapolate + ": fitted on " + std::to_string(train.size()) +
                      " runs, predicting the other " + std::to_string(test.size()),
                  rows);
      // rows point into `test`: print before it goes out of scope.
      rows.clear();
    } else {
      CostProfile profile = base;
      if (fit_every > 0) {
        std::vector<double> p = fit_predict(runs, runs, &profile);
        if (!write_profile.empty()) save_cost_profile(profile, write_profile);
        for (size_t i = 0; i < runs.size(); ++i) rows.push_back({&runs[i], p[i]});
      } else {
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<IterationRun> some;
        for (size_t i = 0; i < runs.size(); i += size_t(every)) some.push_back(runs[i]);
        const std::vector<double> p = predict_runs(cluster, profile, some);
        std::printf("# simulated %zu runs in %.1f s (2 threads)\n", some.size(),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        for (size_t i = 0, j = 0; i < runs.size(); i += size_t(every), ++j) {
          rows.push_back({&runs[i], p[j]});
        }
      }
      print_table(fit_every > 0 ? "fitted on every " + std::to_string(fit_every) +
                                      "-th run, all runs predicted"
                                : "profile as given",
                  rows);
    }
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
