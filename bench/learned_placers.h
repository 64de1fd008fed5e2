#pragma once
// bench/learned_placers: its arguments, the results of a row's searches and the report
// (the table, the CSV, the summaries: bench/learned_placers_report.cpp). The searches
// themselves run in bench/learned_placers.cpp.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_common.h"

namespace placer::learned_placers_bench {

inline const std::vector<std::string> kMethods = {"anneal", "colocrl", "hdp", "placeto", "gdp",
                                            "gdp+stages"};

struct Args {
  std::string policy, cluster;
  std::string stages_policy;  ///< gdp+stages' policy (default: the shipped stages.pt)
  std::string suite;  ///< "", placeto, gdp, all
  std::vector<std::string> rows;
  std::vector<int> devices;  ///< empty: the suites' counts, 4 for --rows
  std::vector<std::string> methods = kMethods;
  int64_t budget = 160;
  uint64_t seed = 1;
  int seeds = 1;
  int threads = 1;
  int gdp_samples = 7;  ///< zero-shot samples before PPO (greedy + these)
  int ppo_samples = 8;
  int64_t max_ops = 20000;
  std::string csv;
  bool list = false;
  std::string zs_family = "enas_cnn";
  int zs_graphs = 8, zs_updates = 0, zs_unseen = 2, zs_devices = 4;
};

/// (placements simulated so far, best step time so far) after each progress report.
using Curve = std::vector<std::pair<int64_t, double>>;

struct Result {
  double time = INFINITY;  ///< best plan's simulated step time; inf = failed / OOM
  double seconds = 0;
  int64_t evaluations = 0;
  int64_t to_best = -1;           ///< placements until the best was found (-1: not tracked)
  int64_t episodes_to_best = -1;  ///< placeto: complete episodes until the best
  int64_t within5 = -1;           ///< hdp / gdp: placements to within 5% of min(gdp, hdp); -1 never
  int64_t own5 = -1;              ///< placements until within 5% of its own final best
  Curve curve;
  std::string note;
};

inline std::string ms(double s) { return bench::format_ms(s, 3); }

/// One seed of one row.
struct SeedRun {
  uint64_t seed = 0;
  std::string classic_name;
  double classic = INFINITY;
  double classic_seconds = 0;
  std::map<std::string, Result> m;  ///< by method, the methods run
};

struct RowResult {
  std::string label;
  int k = 0;
  int64_t ops = 0;
  std::vector<SeedRun> runs;
};

inline bool has(const Args& a, const std::string& method) {
  return std::find(a.methods.begin(), a.methods.end(), method) != a.methods.end();
}

/// The CSV's header line and one line per method of a row and seed (and the classical one).
void write_csv_header(std::ofstream& csv);
void write_csv(std::ofstream& csv, const RowResult& row, const SeedRun& run);

/// The table's header and one row (means over the seeds).
void print_header(const Args& a);
void print_row(const Args& a, const RowResult& r);

/// The summaries after the table: samples to within 5% of each method's own best and its
/// geomean over the best classical plan; Placeto's and GDP's claims.
void summaries(const Args& a, const std::vector<RowResult>& rows);

}  // namespace placer::learned_placers_bench
