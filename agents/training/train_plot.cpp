// `placer train-policy --plot` / `--plot-only`: the learning curves of a run folder's
// log.jsonl as curves.png, drawn by gnuplot (agents/training/train_plot.h).
#include "agents/training/train_plot.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agents/common/training_run.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"

namespace placer {
namespace {

namespace fs = std::filesystem;

std::string shown(const std::string& path) { return shown_path(path); }

/// Directory on $PATH holding an executable `name`, or "".
std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::stringstream in(path);
  std::string dir;
  while (std::getline(in, dir, ':')) {
    if (dir.empty()) dir = ".";
    const std::string p = dir + "/" + name;
    if (access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p)) return p;
  }
  return "";
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string plot_curves(const std::string& dir) {
  const std::string log = dir + "/log.jsonl";
  if (!fs::exists(log)) {
    throw FileError(shown(log) + ": not found (nothing to plot; train into " + shown(dir) +
                    " first)");
  }
  const std::string gnuplot = find_on_path("gnuplot");
  if (gnuplot.empty()) {
    throw Error(
        "--plot needs gnuplot, which is not on PATH (Debian: apt-get install "
        "gnuplot-nox; scripts/setup.sh installs it)");
  }
  std::ifstream in(log);
  std::ostringstream updates, evals;
  int n_updates = 0, n_evals = 0, line_no = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      throw FormatError(shown(log) + ": line " + std::to_string(line_no) + ": not a JSON object");
    }
    auto num = [&j](const char* k) {
      return j.contains(k) && j[k].is_number() ? j[k].get<double>() : std::nan("");
    };
    const std::string type = j.value("type", "");
    if (type == "update") {
      updates << num("update") << " " << num("mean_reward") << " " << num("best_ratio") << "\n";
      ++n_updates;
    } else if (type == "eval") {
      evals << num("update") << " " << num("geomean_vs_classical") << " "
            << num("geomean_greedy_vs_classical") << "\n";
      ++n_evals;
    }
  }
  if (n_updates == 0) throw Error(shown(log) + ": no update lines to plot");
  const std::string tmp = dir + "/.curves";
  write_text_file(tmp + ".updates.dat", updates.str());
  write_text_file(tmp + ".eval.dat", evals.str());
  std::ostringstream gp;
  gp << "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
     << "  set terminal pngcairo size " << (n_evals > 0 ? 1500 : 1000) << ",420 font ',10'\n"
     << "} else {\n"
     << "  set terminal png size " << (n_evals > 0 ? 1500 : 1000) << ",420\n"
     << "}\n"
     << "set output 'curves.png'\n"
     << "set datafile missing 'nan'\n"
     << "set grid\n"
     << "set key top right\n"
     << "set multiplot layout 1," << (n_evals > 0 ? 3 : 2) << "\n"
     << "set xlabel 'update'\n"
     << "set title 'mean reward (-1 = reference time)'\n"
     << "plot '.curves.updates.dat' using 1:2 with lines lw 2 notitle\n"
     << "set title 'best sampled / reference (geomean)'\n"
     << "plot '.curves.updates.dat' using 1:3 with lines lw 2 notitle\n";
  if (n_evals > 0) {
    gp << "set title 'validation: policy / best classical (geomean)'\n"
       << "plot '.curves.eval.dat' using 1:2 with linespoints lw 2 title 'sampled', "
       << "'' using 1:3 with linespoints lw 2 title 'greedy', 1 with lines dt 2 notitle\n";
  }
  gp << "unset multiplot\n";
  write_text_file(tmp + ".gp", gp.str());
  const std::string cmd =
      "cd " + shell_quote(dir) + " && " + shell_quote(gnuplot) + " .curves.gp > .curves.err 2>&1";
  const int rc = std::system(cmd.c_str());
  std::string err;
  try {
    err = read_text_file(tmp + ".err", "gnuplot output");
  } catch (const Error&) {
  }
  for (const char* ext : {".updates.dat", ".eval.dat", ".gp", ".err"}) {
    std::error_code ec;
    fs::remove(tmp + ext, ec);
  }
  const std::string png = dir + "/curves.png";
  if (rc != 0 || !fs::exists(png)) {
    while (!err.empty() && err.back() == '\n') err.pop_back();
    throw Error("gnuplot failed to write " + shown(png) + (err.empty() ? "" : ": " + err));
  }
  return png;
}

}  // namespace placer
