// The report of bench/learned_placers (bench/learned_placers.h): the table, the CSV and the
// summaries, from the results of the searches.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/learned_placers.h"

namespace placer::learned_placers_bench {
namespace {

using bench::format_count;
using bench::geomean;

/// Mean of the finite values; inf when there is none.
double mean_finite(const std::vector<double>& v) {
  double s = 0;
  int n = 0;
  for (double x : v) {
    if (std::isfinite(x)) {
      s += x;
      ++n;
    }
  }
  return n ? s / n : INFINITY;
}

/// Mean of the non-negative counts, rounded; -1 when there is none.
int64_t mean_count(const std::vector<int64_t>& v) {
  double s = 0;
  int n = 0;
  for (int64_t x : v) {
    if (x >= 0) {
      s += double(x);
      ++n;
    }
  }
  return n ? static_cast<int64_t>(std::llround(s / n)) : -1;
}

/// The convergence table: per method, simulator runs until within 5% of its own final
/// best (mean over the rows x seeds where the curve shows it; the classical fast placers run
/// once each, so their column is their wall time), runs spent and wall time.
void convergence(const Args& a, const std::vector<RowResult>& rows) {
  std::printf("\n# samples (simulator runs) to within 5%% of each method's own final best\n");
  std::printf("%-10s %12s %12s %10s %10s %12s\n", "method", "runs to 5%", "runs spent", "seconds",
              "reached", "/ classical");
  double classic_seconds = 0;
  size_t runs = 0;
  for (const RowResult& r : rows) {
    for (const SeedRun& s : r.runs) classic_seconds += s.classic_seconds, ++runs;
  }
  for (const std::string& m : a.methods) {
    double to5 = 0, spent = 0, secs = 0;
    size_t n = 0, all = 0;
    std::vector<double> vs_classical;  // step time / the best fast classical plan's
    for (const RowResult& r : rows) {
      for (const SeedRun& s : r.runs) {
        const Result& x = s.m.at(m);
        ++all, spent += double(x.evaluations), secs += x.seconds;
        if (x.own5 >= 0) ++n, to5 += double(x.own5);
        if (std::isfinite(x.time) && std::isfinite(s.classic)) {
          vs_classical.push_back(x.time / s.classic);
        }
      }
    }
    if (all == 0) continue;
    std::printf("%-10s %12s %12.0f %10.2f %5zu/%-4zu %12.4f\n", m.c_str(),
                n ? format_count(std::llround(to5 / double(n))).c_str() : "-",
                spent / double(all), secs / double(all), n, all, geomean(vs_classical));
  }
  if (runs) {
    std::printf("%-10s %12s %12s %10.3f   (best fast classical placer, all of them run once)\n",
                "classical", "-", "-", classic_seconds / double(runs));
  }
}

}  // namespace

void write_csv_header(std::ofstream& csv) {
  csv << "graph,devices,ops,seed,method,step_ms,to_best,evaluations,seconds,within5,"
         "episodes_to_best,detail,own5\n";
}

void write_csv(std::ofstream& csv, const RowResult& row, const SeedRun& run) {
  auto cell = [](double t) {
    char buf[48];
    if (!std::isfinite(t)) return std::string("inf");
    std::snprintf(buf, sizeof buf, "%.6f", t * 1e3);
    return std::string(buf);
  };
  auto line = [&](const std::string& method, const Result& r, const std::string& detail) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.3f", r.seconds);
    csv << row.label << "," << row.k << "," << row.ops << "," << run.seed << "," << method << ","
        << cell(r.time) << "," << r.to_best << "," << r.evaluations << "," << secs << ","
        << r.within5 << "," << r.episodes_to_best << "," << detail << "," << r.own5 << "\n";
  };
  Result c;
  c.time = run.classic;
  c.seconds = run.classic_seconds;
  line("classical", c, run.classic_name);
  for (const auto& [method, r] : run.m) line(method, r, r.note);
  csv.flush();
}

void print_header(const Args& a) {
  std::printf("%-14s %2s %5s | %-11s %8s |", "graph", "k", "ops", "classical", "ms");
  for (const std::string& m : a.methods) std::printf(" %8s %9s %5s |", m.c_str(), "tb/ev", "s");
  if (has(a, "gdp") && has(a, "hdp")) std::printf(" %4s %4s", "w5hd", "w5gd");
  std::printf("\n");
  std::fflush(stdout);
}

void print_row(const Args& a, const RowResult& r) {
  std::vector<double> cl;
  for (const SeedRun& s : r.runs) cl.push_back(s.classic);
  std::printf("%-14s %2d %5lld | %-11s %8s |", r.label.c_str(), r.k, static_cast<long long>(r.ops),
              r.runs.front().classic_name.c_str(), ms(mean_finite(cl)).c_str());
  std::map<std::string, std::vector<uint64_t>> failed;
  for (const std::string& m : a.methods) {
    std::vector<double> t, sec;
    std::vector<int64_t> tb, ev;
    for (const SeedRun& s : r.runs) {
      const Result& x = s.m.at(m);
      t.push_back(x.time);
      sec.push_back(x.seconds);
      tb.push_back(x.to_best);
      ev.push_back(x.evaluations);
      if (!std::isfinite(x.time)) failed[m].push_back(s.seed);
    }
    const std::string tbev = format_count(mean_count(tb)) + "/" + format_count(mean_count(ev));
    std::printf(" %8s %9s %5.0f |", ms(mean_finite(t)).c_str(), tbev.c_str(), mean_finite(sec));
  }
  if (has(a, "gdp") && has(a, "hdp")) {
    // Per seed, not reached = budget + 1; "-" when no seed reached it.
    for (const char* m : {"hdp", "gdp"}) {
      double s = 0;
      bool any = false;
      for (const SeedRun& run : r.runs) {
        const int64_t w = run.m.at(m).within5;
        any = any || w >= 0;
        s += w < 0 ? double(a.budget + 1) : double(w);
      }
      std::printf(" %4s",
                  any ? format_count(std::llround(s / double(r.runs.size()))).c_str() : "-");
    }
  }
  std::printf("\n");
  for (const auto& [m, seeds] : failed) {
    std::printf("#   %s@%d: %s oom/failed on seed(s)", r.label.c_str(), r.k, m.c_str());
    for (uint64_t s : seeds) std::printf(" %llu", static_cast<unsigned long long>(s));
    std::printf(" (the mean is over the others)\n");
  }
  std::fflush(stdout);
}

void summaries(const Args& a, const std::vector<RowResult>& rows) {
  convergence(a, rows);
  size_t runs = 0;
  for (const RowResult& r : rows) runs += r.runs.size();
  if (has(a, "placeto")) {
    // Placeto's claim: step time vs the RNN placers, and samples to best.
    std::printf(
        "\n# Placeto vs the RNN placers over %zu row x seed runs (per row: means over "
        "the seeds)\n",
        runs);
    for (const RowResult& r : rows) {
      std::vector<int64_t> tb, ev, ep;
      for (const SeedRun& s : r.runs) {
        const Result& pl = s.m.at("placeto");
        tb.push_back(pl.to_best);
        ev.push_back(pl.evaluations);
        ep.push_back(pl.episodes_to_best);
      }
      std::printf("# %-14s k=%d placeto: best at simulation %s of %s = episode %s\n",
                  r.label.c_str(), r.k, format_count(mean_count(tb)).c_str(),
                  format_count(mean_count(ev)).c_str(), format_count(mean_count(ep)).c_str());
    }
    for (const char* rnn : {"colocrl", "hdp"}) {
      if (!has(a, rnn)) continue;
      std::vector<double> t, n, ne;
      int comparable = 0, fewer = 0, both = 0;
      for (const RowResult& r : rows) {
        for (const SeedRun& s : r.runs) {
          const Result& pl = s.m.at("placeto");
          const Result& o = s.m.at(rnn);
          if (!std::isfinite(pl.time) || !std::isfinite(o.time)) continue;
          if (pl.episodes_to_best > 0 && o.to_best > 0)
            ne.push_back(double(pl.episodes_to_best) / double(o.to_best));
          if (pl.to_best < 1 || o.to_best < 1) continue;
          t.push_back(pl.time / o.time);
          n.push_back(double(pl.to_best) / double(o.to_best));
          const bool c = pl.time <= 1.05 * o.time, f = pl.to_best < o.to_best;
          comparable += c;
          fewer += f;
          both += c && f;
        }
      }
      std::printf(
          "# placeto / %-7s: geomean step time %.4f, geomean to-best %.4f (simulations; "
          "in complete episodes %.4f) over %zu runs; within 5%% or better in %d, fewer "
          "simulations to best in %d, both in %d\n",
          rnn, geomean(t), geomean(n), geomean(ne), t.size(), comparable, fewer, both);
    }
  }
  if (has(a, "gdp") && has(a, "hdp")) {
    // GDP's claim: faster convergence than HDP.
    int gdp_faster = 0, n_gdp = 0;
    std::vector<double> w;
    for (const RowResult& r : rows) {
      for (const SeedRun& s : r.runs) {
        const double target = std::min(s.m.at("gdp").time, s.m.at("hdp").time) * 1.05;
        if (!std::isfinite(target)) continue;
        ++n_gdp;
        // Not reached within the budget counts as budget + 1.
        const int64_t h = s.m.at("hdp").within5, g = s.m.at("gdp").within5;
        const double hh = h < 0 ? double(a.budget + 1) : double(h);
        const double gg = g < 0 ? double(a.budget + 1) : double(g);
        w.push_back(gg / hh);
        gdp_faster += gg < hh;
      }
    }
    std::printf(
        "# gdp vs hdp: placements to within 5%% of min(gdp, hdp): gdp fewer in %d of %d "
        "runs, geomean gdp / hdp %.4f (not reached = budget + 1)\n",
        gdp_faster, n_gdp, geomean(w));
  }
  std::fflush(stdout);
}

}  // namespace placer::learned_placers_bench
