// `placer train-policy`: pretrains the GDP policy (agents/gdp/gdp.h) with PPO over a graph
// corpus, from a train.yaml plus command-line overrides; checkpoints, resumes, stops cleanly
// on SIGINT / SIGTERM, prints validation tables, and plots the learning curves with gnuplot.
// --agent rainbow-pp pretrains the pipeline-cut policy (agents/rainbow/rainbow_pp_policy.h), --agent
// placeto a Placeto policy on a graph family (agents/placeto/placeto.h); the run folder, signals and
// summary work the same way for all three.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "agents/gdp/gdp.h"
#include "agents/gdp/gdp_dist.h"
#include "agents/placeto/placeto.h"
#include "agents/rainbow/rainbow_pp_policy.h"
#include "agents/sync/autosync_rl.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "src/cli/commands.h"
#include "src/cli/config_fields.h"
#include "src/cli/placeto_train_config.h"
#include "src/cli/train_config.h"
#include "src/io/cluster_yaml.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"
#include "src/util/format.h"
#include "src/util/progress.h"

namespace placer::cli {
namespace {

namespace fs = std::filesystem;

struct TrainArgs {
  std::string config;
  std::vector<std::string> sets;
  std::string corpus;
  std::vector<std::string> clusters;
  int64_t updates = 0;
  uint64_t seed = 0;
  int eval_every = 0;
  std::string output_dir;
  std::string agent;  ///< "gdp" (default), "rainbow-pp" or "placeto"; "" = the config's or gdp
  bool resume = false, overwrite = false, plot = false, plot_only = false, print_config = false;
  // Distribution (docs/distributed.md); not part of the saved configuration, except
  // --dist-timeout, which overrides dist.timeout.
  std::string dist_url, device = "cpu";
  int rank = -1, world_size = -1, threads = 0;
  double dist_timeout = 60;  ///< applied only when given (else the config's dist.timeout)
};

// ------------------------------------------------------------------------ signals ----

volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int sig) {
  if (g_stop_signal != 0) {
    // A second signal: the user means it. Default action (terminate) right away.
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_stop_signal = sig;
}

/// Installs the SIGINT / SIGTERM handlers for its lifetime.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    old_int_ = std::signal(SIGINT, on_stop_signal);
    old_term_ = std::signal(SIGTERM, on_stop_signal);
  }
  ~StopSignals() {
    std::signal(SIGINT, old_int_);
    std::signal(SIGTERM, old_term_);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  bool stopped() const { return g_stop_signal != 0; }

 private:
  void (*old_int_)(int) = SIG_DFL;
  void (*old_term_)(int) = SIG_DFL;
};

// ------------------------------------------------------------------------ helpers ----

/// The command line as typed (Linux: /proc/self/cmdline), recorded in the policy's meta.
std::string command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string out;
  size_t start = 0;
  while (start < all.size()) {
    size_t end = all.find('\0', start);
    if (end == std::string::npos) end = all.size();
    std::string arg = all.substr(start, end - start);
    if (start == 0) arg = fs::path(arg).filename().string();
    if (arg.find_first_of(" \t'\"$") != std::string::npos) arg = "'" + arg + "'";
    out += (out.empty() ? "" : " ") + arg;
    start = end + 1;
  }
  return out.empty() ? "placer train-policy" : out;
}

/// The config file (or defaults), then --set in order, then the direct flags.
TrainConfig effective_config(const TrainArgs& a, const CLI::App& sub) {
  TrainConfig c = a.config.empty() ? TrainConfig{} : load_train_config(a.config);
  if (a.config.empty()) c.output_dir = absolute_path(c.output_dir);
  for (const std::string& s : a.sets) apply_train_override(&c, s);
  if (!a.corpus.empty()) c.corpus = absolute_path(a.corpus);
  if (!a.clusters.empty()) {
    c.clusters.clear();
    for (const std::string& p : a.clusters) c.clusters.push_back(absolute_path(p));
  }
  if (sub.count("--updates") > 0) c.updates = a.updates;
  if (sub.count("--seed") > 0) c.seed = a.seed;
  if (sub.count("--eval-every") > 0) c.eval_every = a.eval_every;
  if (!a.output_dir.empty()) c.output_dir = absolute_path(a.output_dir);
  c.dist.url = a.dist_url;
  c.dist.rank = a.rank;
  c.dist.world_size = a.world_size;
  if (sub.count("--dist-timeout") > 0) c.dist.timeout_seconds = a.dist_timeout;
  c.threads = a.threads;
  c.device = a.device;
  c.command = command_line();
  return c;
}

/// Shown paths: relative to the current directory when inside it.
std::string shown(const std::string& path) {
  std::error_code ec;
  const fs::path rel = fs::path(path).lexically_relative(fs::current_path(ec));
  if (ec || rel.empty() || *rel.begin() == "..") return path;
  return rel.string();
}

std::string ratio_text(double r) { return r > 0 ? "x" + fixed(r, 3) : std::string("-"); }

// ------------------------------------------------------------ shared by the agents ----

/// Exit 2 with the usual line when this placer has no LibTorch.
void require_torch(bool available) {
  if (available) return;
  std::cerr << "placer: error: train-policy needs LibTorch, and this placer was built without "
               "it; install libtorch-dev (scripts/setup.sh) and rebuild\n";
  throw CLI::RuntimeError(2);
}

/// The output folder of a run: --resume needs its checkpoint.pt; without it an existing run
/// (checkpoint or log) is an error unless --overwrite, which removes `run_files` (when
/// `remove`: rank 0 alone removes in a distributed run).
void prepare_run_dir(const std::string& dir, bool resume, bool overwrite,
                     const std::vector<std::string>& run_files, bool remove = true) {
  const std::string checkpoint = dir + "/checkpoint.pt";
  if (resume && !fs::exists(checkpoint)) {
    throw FileError("--resume: no checkpoint to resume from in " + shown(dir) + " (expected " +
                    shown(checkpoint) + "; start the run without --resume)");
  }
  // A fresh run would append to an old log.jsonl: an existing run is never mixed in.
  const std::string old_log = dir + "/log.jsonl";
  if (!resume && (fs::exists(checkpoint) || fs::exists(old_log))) {
    if (!overwrite) {
      throw Error(shown(dir) + " already holds a training run (" +
                  shown(fs::exists(checkpoint) ? checkpoint : old_log) +
                  "); continue it with --resume, start over with --overwrite, or pick another "
                  "--output-dir");
    }
    for (const std::string& f : run_files) {
      std::error_code ec;
      if (remove) fs::remove(dir + "/" + f, ec);
    }
  }
}

/// Creates the output folder and writes its config.yaml, which must read back to the
/// effective configuration (a mismatch is a bug of the config reader / writer).
template <class Config>
void write_run_config(const std::string& dir, const std::string& yaml,
                      const std::function<Config(const std::string&)>& load,
                      const std::function<bool(const Config&)>& same_as_effective) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw FileError(shown(dir) + ": cannot create the output directory (" + ec.message() + ")");
  const std::string config_file = dir + "/config.yaml";
  write_text_file(config_file, yaml);
  if (!same_as_effective(load(config_file))) {
    throw std::logic_error(config_file + " does not read back to the effective configuration");
  }
}

[[noreturn]] void interrupted_before_start() {
  std::cerr << "placer: interrupted before training started; nothing written\n";
  throw CLI::RuntimeError(130);
}

[[noreturn]] void interrupted_at(int64_t done, const std::string& checkpoint) {
  std::cout << std::flush;
  std::cerr << "placer: interrupted at update " << done << " (checkpoint " << shown(checkpoint)
            << "); resume with --resume\n";
  throw CLI::RuntimeError(130);
}

/// The closing lines: the files present in `dir` and how to use the policy.
void print_files_and_use(const std::string& dir, const std::string& use_method) {
  std::string files;
  for (const char* f : {"policy.pt", "best.pt", "checkpoint.pt", "log.jsonl", "config.yaml"}) {
    if (fs::exists(dir + "/" + f)) files += std::string(files.empty() ? "" : ", ") + f;
  }
  std::cout << "files        " << shown(dir) << "/{" << files << "}\n";
  std::cout << "use it       placer place " << use_method << "--policy "
            << shown(dir + "/policy.pt") << " --graph G --cluster C -o out.plan.yaml\n"
            << std::flush;
}

void print_eval(const TrainEvalStats& e, std::ostream& out) {
  size_t w = 8;
  for (const TrainEvalRow& r : e.rows) w = std::max(w, r.instance.size());
  out << "\nvalidation at update " << e.update << ": sampled / best classical "
      << ratio_text(e.geomean_vs_classical) << " (geomean), greedy / best classical "
      << ratio_text(e.geomean_greedy_vs_classical) << "\n";
  out << pad_right("instance", w + 2) << pad_right("best classical", 26) << pad_left("greedy", 10)
      << pad_left("sampled", 11) << pad_left("ratio", 9) << "\n";
  for (const TrainEvalRow& r : e.rows) {
    const std::string classical = human_time(r.best_classical_time) + " (" + r.best_classical + ")";
    out << pad_right(r.instance, w + 2) << pad_right(classical, 26)
        << pad_left(human_time(r.greedy_time), 10) << pad_left(human_time(r.sampled_time), 11)
        << pad_left(
               r.best_classical_time > 0 ? ratio_text(r.sampled_time / r.best_classical_time) : "-",
               9)
        << "\n";
  }
  out << std::flush;
}

// ------------------------------------------------------------------------ plotting ----

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

/// Writes `dir`/curves.png from `dir`/log.jsonl: mean reward and best ratio per update, and
/// the validation geomeans when there are evaluations. Returns the image's path.
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

// ------------------------------------------------------------------------ training ----

/// Files a fresh run writes; removed by --overwrite.
const std::vector<std::string> kRunFiles = {
    "checkpoint.pt", "checkpoint.pt.meta.json", "policy.pt", "policy.pt.meta.json",
    "best.pt",       "best.pt.meta.json",       "log.jsonl", "curves.png"};

void run_train_rainbow_pp(const TrainArgs& a, const CLI::App& sub);
void run_train_placeto(const TrainArgs& a, const CLI::App& sub);
void run_train_autosync(const TrainArgs& a, const CLI::App& sub);

void run_train(const TrainArgs& a, const CLI::App& sub) {
  if (a.resume && a.overwrite) throw Error("--resume and --overwrite exclude each other");
  std::string agent = a.agent;
  if (agent.empty()) agent = a.config.empty() ? "" : train_config_file_agent(a.config);
  if (agent == "autosync") {
    run_train_autosync(a, sub);
    return;
  }
  if (agent == "rainbow-pp" || agent == "placeto") {
    if (!a.dist_url.empty() || a.rank >= 0 || a.world_size >= 0) {
      throw ValidationError("--dist-url / --rank / --world-size: only --agent gdp trains distributed");
    }
    if (agent == "rainbow-pp") {
      run_train_rainbow_pp(a, sub);
    } else {
      run_train_placeto(a, sub);
    }
    return;
  }
  if (a.plot_only && (a.resume || a.print_config)) {
    throw Error("--plot-only plots an existing run; it takes neither --resume nor --print-config");
  }
  TrainConfig c = effective_config(a, sub);
  if (a.print_config) {
    std::cout << train_config_yaml(c, "Effective configuration of placer train-policy");
    return;
  }
  if (a.plot_only) {
    const std::string png = plot_curves(c.output_dir);
    std::cout << "curves       " << shown(png) << "\n";
    return;
  }
  require_torch(gdp_available());
  if (c.corpus.empty()) {
    throw ValidationError(
        "corpus: required (a *.corpus.yaml; set `corpus:` in the config or "
        "pass --corpus)");
  }
  if (c.clusters.empty()) {
    throw ValidationError(
        "clusters: required (one or more *.cluster.yaml; set `clusters:` in "
        "the config or pass --cluster)");
  }
  // Rank 0 alone prints and writes (docs/distributed.md); the others only train.
  const DistSetup dist = resolve_dist(c.dist);
  const bool root = dist.rank == 0;
  const std::string dir = c.output_dir;
  const std::string checkpoint = dir + "/checkpoint.pt";
  prepare_run_dir(dir, a.resume, a.overwrite, kRunFiles, root);

  StopSignals signals;
  std::unique_ptr<Progress> prep;
  std::string prep_what;
  GdpTrainer trainer(c);
  int64_t start = 0;
  if (a.resume) start = trainer.resume();
  if (signals.stopped()) interrupted_before_start();

  if (!root) {  // another rank: train in step with rank 0, print nothing
    GdpTrainer::Callbacks quiet;
    quiet.should_stop = [&signals]() { return signals.stopped(); };
    trainer.train(quiet);
    if (signals.stopped()) throw CLI::RuntimeError(130);
    return;
  }
  // The file must reproduce the run (docs/gdp.md).
  write_run_config<TrainConfig>(
      dir,
      train_config_yaml(c,
                        "Effective configuration of the training run in this folder (placer "
                        "train-policy)\nwritten by: " +
                            c.command),
      load_train_config, [&c](const TrainConfig& back) { return same_train_config(back, c); });

  std::cout << "training     "
            << (a.resume ? "resuming after update " + std::to_string(start) + ", " : std::string())
            << "updates " << start + 1 << ".." << c.updates << " on "
            << trainer.num_train_instances() << " train / " << trainer.num_val_instances()
            << " validation instances\n"
            << "output       " << shown(dir) << "\n";
  if (dist.world_size > 1) {
    std::cout << "ranks        " << dist.world_size << " (rank 0 here, " << dist.init
              << ", " << trainer.dist_backend() << ")\n";
  }
  std::cout << std::flush;

  Progress progress("placer: train-policy", std::max<int64_t>(0, c.updates - start));
  int64_t run_evaluations = 0;
  GdpTrainer::Callbacks cb;
  cb.on_prepare = [&prep, &prep_what](int64_t done, int64_t total, const std::string& what) {
    if (total == 0) {  // a note (e.g. a graph skipped for max_ops), not a counter
      std::cerr << "placer: train-policy: " << what << "\n";
      return;
    }
    if (!prep || what != prep_what) {
      prep = std::make_unique<Progress>("placer: " + what, total);
      prep_what = what;
    }
    prep->set_total(total);
    prep->update(done);
    if (total > 0 && done >= total) prep->finish();
  };
  cb.on_update = [&](const TrainUpdateStats& u) {
    if (prep) prep->finish();
    run_evaluations += u.evaluations;
    const double rate = u.seconds > 0 ? double(u.evaluations) / u.seconds : 0;
    const std::string phase =
        u.phase == "imitation" ? "imitation acc " + fixed(u.accuracy, 2) + ", " : std::string();
    progress.update(u.update - start, phase + "reward " + fixed(u.mean_reward, 3) + ", best " +
                                          ratio_text(u.best_ratio) + " ref, " +
                                          fixed(rate, rate >= 100 ? 0 : 1) + " placements/s");
  };
  cb.on_eval = [](const TrainEvalStats& e) { print_eval(e, std::cout); };
  cb.should_stop = [&signals]() { return signals.stopped(); };

  const auto t0 = std::chrono::steady_clock::now();
  const int64_t done = trainer.train(cb);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress.finish();

  if (signals.stopped()) interrupted_at(done, checkpoint);

  std::cout << "\nupdates      " << done << " (" << done - start << " in this run)\n"
            << "wall time    " << human_time(wall) << "\n"
            << "placements/s "
            << (wall > 0 ? fixed(double(run_evaluations) / wall, 1) : std::string("-")) << " ("
            << run_evaluations << " simulated placements)\n";
  print_files_and_use(dir, "");
  if (a.plot) {
    const std::string png = plot_curves(dir);
    std::cout << "curves       " << shown(png) << "\n";
  }
}


// ------------------------------------------------------------------------ rainbow-pp ----

RainbowPPTrainConfig effective_pp_config(const TrainArgs& a, const CLI::App& sub) {
  if (!a.corpus.empty() || !a.clusters.empty()) {
    throw ValidationError(
        "--corpus / --cluster apply to --agent gdp; rainbow-pp trains on generated arrays "
        "(eval_graphs / eval_cluster in the config name real graphs to evaluate)");
  }
  RainbowPPTrainConfig c;
  if (!a.config.empty()) {
    c = load_rainbow_pp_train_config(a.config);
  } else {
    c.output_dir = absolute_path(c.output_dir);
  }
  for (const std::string& s : a.sets) apply_rainbow_pp_override(&c, s);
  if (sub.count("--updates") > 0) c.updates = a.updates;
  if (sub.count("--seed") > 0) c.seed = a.seed;
  if (sub.count("--eval-every") > 0) c.eval_every = a.eval_every;
  if (!a.output_dir.empty()) c.output_dir = absolute_path(a.output_dir);
  c.command = command_line();
  return c;
}

void print_pp_eval(const RainbowPPEvalStats& e, std::ostream& out) {
  out << "\nvalidation at update " << e.update << ": held-out mean reward "
      << fixed(e.heldout_mean_reward, 3) << " (1 = balanced cuts), better than balanced on "
      << fixed(100 * e.heldout_win_rate, 1) << "%\n";
  if (!e.rows.empty()) {
    size_t w = 8;
    for (const RainbowPPEvalRow& r : e.rows) w = std::max(w, r.graph.size());
    out << pad_right("graph", w + 2) << pad_left("center", 12) << pad_left("policy", 12)
        << pad_left("ratio", 9) << "\n";
    for (const RainbowPPEvalRow& r : e.rows) {
      out << pad_right(r.graph, w + 2) << pad_left(human_time(r.center_time), 12)
          << pad_left(human_time(r.policy_time), 12)
          << pad_left(r.center_time > 0 ? "x" + fixed(r.policy_time / r.center_time, 3) : "-", 9)
          << "\n";
    }
  }
  out << std::flush;
}

const std::vector<std::string> kPPRunFiles = {
    "checkpoint.pt", "checkpoint.pt.meta.json", "policy.pt", "policy.pt.meta.json",
    "best.pt",       "best.pt.meta.json",       "log.jsonl"};

void run_train_rainbow_pp(const TrainArgs& a, const CLI::App& sub) {
  if (a.plot || a.plot_only) throw Error("--plot / --plot-only apply to --agent gdp only");
  RainbowPPTrainConfig c = effective_pp_config(a, sub);
  if (a.print_config) {
    std::cout << rainbow_pp_train_config_yaml(
        c, "Effective configuration of placer train-policy --agent rainbow-pp");
    return;
  }
  require_torch(rainbow_pp_policy_available());
  const std::string dir = c.output_dir;
  const std::string checkpoint = dir + "/checkpoint.pt";
  prepare_run_dir(dir, a.resume, a.overwrite, kPPRunFiles);

  StopSignals signals;
  RainbowPPTrainer trainer(c);
  int64_t start = 0;
  if (a.resume) start = trainer.resume();
  if (signals.stopped()) interrupted_before_start();
  write_run_config<RainbowPPTrainConfig>(
      dir,
      rainbow_pp_train_config_yaml(c,
                                   "Effective configuration of the training run in this "
                                   "folder (placer train-policy --agent rainbow-pp)\n"
                                   "written by: " +
                                       c.command),
      load_rainbow_pp_train_config,
      [&c](const RainbowPPTrainConfig& back) { return same_rainbow_pp_train_config(back, c); });
  std::cout << "training     rainbow-pp, "
            << (a.resume ? "resuming after update " + std::to_string(start) + ", " : std::string())
            << "updates " << start + 1 << ".." << c.updates << " of " << c.arrays_per_update
            << " generated array problems (" << c.stages << " stages, <= " << c.max_devices
            << " devices)\n"
            << "output       " << shown(dir) << "\n"
            << std::flush;

  Progress progress("placer: train-policy", std::max<int64_t>(0, c.updates - start));
  int64_t arrays = 0;
  RainbowPPTrainer::Callbacks cb;
  cb.on_update = [&](const RainbowPPUpdateStats& u) {
    arrays += u.arrays;
    const double rate = u.seconds > 0 ? double(u.arrays) / u.seconds : 0;
    progress.update(u.update - start, "reward " + fixed(u.mean_reward, 3) + ", eps " +
                                          fixed(u.epsilon, 2) + ", loss " + fixed(u.loss, 3) +
                                          ", " + fixed(rate, rate >= 100 ? 0 : 1) + " arrays/s");
  };
  cb.on_eval = [](const RainbowPPEvalStats& e) { print_pp_eval(e, std::cout); };
  cb.should_stop = [&signals]() { return signals.stopped(); };
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t done = trainer.train(cb);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress.finish();
  if (signals.stopped()) interrupted_at(done, checkpoint);
  std::cout << "\nupdates      " << done << " (" << done - start << " in this run)\n"
            << "wall time    " << human_time(wall) << "\n"
            << "arrays       " << arrays << " generated problems in this run\n";
  print_files_and_use(dir, "--method rainbow-pp ");
}

// ------------------------------------------------------------------------ placeto ----

PlacetoCliConfig effective_placeto_config(const TrainArgs& a, const CLI::App& sub) {
  if (!a.corpus.empty()) {
    throw ValidationError(
        "--corpus applies to --agent gdp; placeto trains on generated members of `family:` "
        "(graphs, first_seed, ranges in the config)");
  }
  if (a.clusters.size() > 1) {
    throw ValidationError("--cluster: --agent placeto trains on one cluster (got " +
                          std::to_string(a.clusters.size()) + ")");
  }
  for (const char* opt : {"--eval-every", "--threads", "--device", "--dist-timeout"}) {
    if (sub.count(opt) > 0) {
      throw ValidationError(std::string(opt) + " applies to --agent gdp only");
    }
  }
  PlacetoCliConfig c = a.config.empty() ? PlacetoCliConfig{} : load_placeto_train_config(a.config);
  if (a.config.empty()) c.train.output_dir = absolute_path(c.train.output_dir);
  for (const std::string& s : a.sets) apply_placeto_override(&c, s);
  if (!a.clusters.empty()) c.cluster = absolute_path(a.clusters.front());
  if (sub.count("--updates") > 0) {
    if (a.updates > std::numeric_limits<int>::max())
      throw ValidationError("--updates: at most " + std::to_string(std::numeric_limits<int>::max()));
    c.train.updates = int(a.updates);
  }
  if (sub.count("--seed") > 0) c.train.seed = a.seed;
  if (!a.output_dir.empty()) c.train.output_dir = absolute_path(a.output_dir);
  c.command = command_line();
  return c;
}

const std::vector<std::string> kPlacetoRunFiles = {"checkpoint.pt", "checkpoint.pt.meta.json",
                                                   "policy.pt", "policy.pt.meta.json",
                                                   "log.jsonl"};

void run_train_placeto(const TrainArgs& a, const CLI::App& sub) {
  if (a.plot || a.plot_only) throw ValidationError("--plot / --plot-only apply to --agent gdp only");
  PlacetoCliConfig c = effective_placeto_config(a, sub);
  if (a.print_config) {
    std::cout << placeto_train_config_yaml(
        c, "Effective configuration of placer train-policy --agent placeto");
    return;
  }
  require_torch(placeto_available());
  if (c.cluster.empty()) {
    throw ValidationError(
        "cluster: required (a *.cluster.yaml; set `cluster:` in the config or pass --cluster)");
  }
  const Cluster cluster = load_cluster_yaml(c.cluster);
  for (int d : c.train.devices) {
    if (d >= cluster.num_devices()) {
      throw ValidationError("devices: device " + std::to_string(d) + " is not in " +
                            shown(c.cluster) + " (" + std::to_string(cluster.num_devices()) +
                            " devices, ids 0.." + std::to_string(cluster.num_devices() - 1) + ")");
    }
  }
  const CostModel cost(cluster, c.profile.empty() ? default_profile() : load_cost_profile(c.profile));
  const std::string dir = c.train.output_dir;
  const std::string checkpoint = dir + "/checkpoint.pt";
  prepare_run_dir(dir, a.resume, a.overwrite, kPlacetoRunFiles);

  StopSignals signals;

  PlacetoTrainConfig t = c.train;
  t.resumable = true;
  t.resume = a.resume;
  std::unique_ptr<Progress> prep, progress;
  int64_t start = 0, run_evaluations = 0;
  double run_update_seconds = 0;
  PlacetoTrainCallbacks cb;
  cb.on_prepare = [&](int64_t done, int64_t total) {
    if (!prep) prep = std::make_unique<Progress>("placer: preparing graphs", total);
    prep->update(done);
    if (done >= total) prep->finish();
  };
  cb.on_start = [&](int64_t start_update) {
    start = start_update;
    // After the checkpoint was checked against the configuration (placeto_train).
    write_run_config<PlacetoCliConfig>(
        dir,
        placeto_train_config_yaml(c,
                                  "Effective configuration of the training run in this folder "
                                  "(placer train-policy --agent placeto)\nwritten by: " +
                                      c.command),
        load_placeto_train_config,
        [&c](const PlacetoCliConfig& back) { return same_placeto_train_config(back, c); });
    std::cout << "training     placeto, "
              << (a.resume ? "resuming after update " + std::to_string(start) + ", "
                           : std::string())
              << "updates " << start + 1 << ".." << t.updates << " on " << t.graphs << " "
              << t.family << " graphs (seeds " << t.first_seed << ".."
              << t.first_seed + uint64_t(t.graphs) - 1 << "), " << t.devices.size()
              << " devices of " << cluster.name << ", " << t.rl.episodes
              << " episodes per update\n"
              << "output       " << shown(dir) << "\n"
              << std::flush;
    progress = std::make_unique<Progress>("placer: train-policy",
                                          std::max<int64_t>(0, t.updates - start));
  };
  cb.on_update = [&](const PlacetoTrainUpdate& u) {
    run_evaluations += u.update_evaluations;
    run_update_seconds += u.update_seconds;
    const double rate = run_update_seconds > 0 ? double(run_evaluations) / run_update_seconds : 0;
    progress->update(u.update - start,
                     "return " + fixed(u.mean_return, 3) + ", entropy " + fixed(u.entropy, 2) +
                         ", best " + ratio_text(u.best_ratio) + " ref, " +
                         fixed(rate, rate >= 100 ? 0 : 1) + " placements/s");
  };
  cb.should_stop = [&signals]() { return signals.stopped(); };

  const auto t0 = std::chrono::steady_clock::now();
  const PlacetoTrainResult res = placeto_train(t, cluster, cost, cb);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (prep) prep->finish();
  if (progress) progress->finish();
  if (res.stopped) {
    if (res.policy_path.empty()) interrupted_before_start();
    interrupted_at(res.updates, checkpoint);
  }
  std::cout << "\nupdates      " << res.updates << " (" << res.updates - res.start_update
            << " in this run)\n"
            << "wall time    " << human_time(wall) << "\n"
            << "placements   " << run_evaluations << " simulated in this run ("
            << res.evaluations << " in all)\n";
  print_files_and_use(dir, "--method placeto ");
}

// ------------------------------------------------------------------------ autosync ----

void run_train_autosync(const TrainArgs& a, const CLI::App& sub) {
  for (const char* opt : {"--config", "--resume", "--plot", "--plot-only", "--print-config",
                          "--eval-every", "--dist-url", "--rank", "--world-size", "--threads",
                          "--device", "--dist-timeout"}) {
    if (sub.count(opt) > 0) {
      throw ValidationError(std::string(opt) + " does not apply to --agent autosync");
    }
  }
  AutosyncTrainOptions o;
  o.corpus = a.corpus;
  for (const std::string& c : a.clusters) o.clusters.push_back(absolute_path(c));
  for (const std::string& s : a.sets) apply_autosync_train_option(&o, s);
  if (sub.count("--updates") > 0) o.episodes = a.updates;
  if (sub.count("--seed") > 0) o.seed = a.seed;
  if (o.corpus.empty()) {
    throw ValidationError("--agent autosync: --corpus required (a *.corpus.yaml)");
  }
  if (o.clusters.empty()) {
    throw ValidationError("--agent autosync: --cluster required (repeatable)");
  }
  require_torch(autosync_rl_available());
  const std::string dir = absolute_path(a.output_dir.empty() ? "runs/autosync" : a.output_dir);
  o.output = dir + "/policy.pt";
  if (fs::exists(o.output) && !a.overwrite) {
    throw Error(shown(o.output) +
                " exists; start over with --overwrite or pick another --output-dir");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw FileError(shown(dir) + ": cannot create the output directory (" + ec.message() + ")");
  }
  StopSignals signals;
  Progress progress("placer: train-policy", o.episodes);
  o.progress = [&](int64_t done, int64_t, double mean) {
    progress.update(done, "reward " + fixed(mean, 3));
  };
  o.should_stop = [&signals]() { return signals.stopped(); };
  std::cout << "training     autosync, " << o.episodes << " episodes on the " << o.split
            << " split of " << shown(o.corpus) << " (<= " << o.graphs << " graphs of <= "
            << o.max_ops << " ops) x " << o.clusters.size() << " clusters\n"
            << std::flush;
  const AutosyncTrainResult r = autosync_train(o);
  progress.finish();
  std::cout << "\nepisodes     " << r.episodes << " on " << r.problems << " problems, "
            << r.simulations << " simulations\n"
            << "reward       " << fixed(r.mean_reward, 3)
            << " (mean of the last 100: log-speedup over the best builder)\n"
            << "cpu time     " << human_time(r.cpu_seconds) << " (wall "
            << human_time(r.wall_seconds) << ")\n";
  print_files_and_use(dir, "--method autosync ");
}

}  // namespace

void register_train_policy(CLI::App& app);
static CommandRegistrar train_policy_registrar(17, "train-policy", register_train_policy);

void register_train_policy(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* sub = app.add_subcommand(
      "train-policy",
      "Pretrain the GDP placement policy with PPO on a graph corpus (docs/gdp.md), or with\n"
      "--agent rainbow-pp the pipeline-cut policy on generated arrays\n"
      "(docs/rainbow_pp_inference.md), or with --agent placeto a Placeto policy on a graph\n"
      "family (docs/placeto.md); writes checkpoints, policy.pt (for `placer place\n"
      "--policy`), log.jsonl and config.yaml.");
  sub->add_option("--agent", args->agent,
                  "Policy to pretrain: gdp (default; a graph corpus, PPO), rainbow-pp (Auto-MAP "
                  "pipeline cuts on generated arrays, docs/rainbow_pp_inference.md) or placeto "
                  "(REINFORCE on a graph family, docs/placeto.md) or autosync (per-variable sync "
                  "strategies on a corpus, docs/sync.md); default: the config's "
                  "`agent:`, else gdp")
      ->check(CLI::IsMember({"gdp", "rainbow-pp", "placeto", "autosync"}));
  sub->add_option("--config", args->config,
                  "Training configuration (train.yaml; see examples/train_policy.yaml, "
                  "train_rainbow_pp.yaml, train_placeto.yaml). "
                  "Without it: the defaults plus the options below")
      ->check(CLI::ExistingFile);
  sub->add_option("--set", args->sets,
                  "Override one key, KEY=VALUE, as named in the YAML (net.hidden=32, "
                  "ppo.lr=3e-4, device_counts=[2,4]); repeatable, applied after the file")
      ->type_name("KEY=VALUE");
  sub->add_option("--corpus", args->corpus, "Corpus manifest (*.corpus.yaml); overrides corpus")
      ->check(CLI::ExistingFile);
  sub->add_option("--cluster", args->clusters,
                  "Cluster file (*.cluster.yaml), repeatable; replaces clusters (placeto: one, "
                  "replaces cluster)")
      ->check(CLI::ExistingFile);
  sub->add_option("--updates", args->updates, "PPO updates in total (overrides updates)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--seed", args->seed, "Seed (overrides seed)");
  sub->add_option("--eval-every", args->eval_every,
                  "Updates between validation evaluations, 0 = off (overrides eval_every)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("-o,--output-dir", args->output_dir, "Output folder (overrides output_dir)");
  sub->add_option("--dist-url", args->dist_url,
                  "Distributed run: rendezvous tcp://HOST:PORT (rank 0 serves it) or "
                  "file:///PATH; default: MASTER_ADDR/MASTER_PORT (docs/distributed.md)");
  sub->add_option("--rank", args->rank, "Distributed run: this process's rank (default: $RANK)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--world-size", args->world_size,
                  "Distributed run: number of processes (default: $WORLD_SIZE, else 1)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--dist-timeout", args->dist_timeout,
                  "Seconds the rendezvous and every collective may take; a lost rank ends the "
                  "run after at most this (overrides dist.timeout, default 60)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--threads", args->threads,
                  "Rollout (simulator) threads in this process; 0 = all cores (default)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--device", args->device,
                  "Where the network trains: cpu (default) or cuda (needs a CUDA LibTorch)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_flag("--resume", args->resume,
                "Continue the run in the output folder from its checkpoint.pt");
  sub->add_flag("--overwrite", args->overwrite,
                "Start over in an output folder that already holds a run");
  sub->add_flag("--plot", args->plot,
                "After training, plot log.jsonl to curves.png in the output folder (gnuplot)");
  sub->add_flag("--plot-only", args->plot_only,
                "Only plot the existing run in the output folder (no training)");
  sub->add_flag("--print-config", args->print_config,
                "Print the effective configuration as YAML and exit (no training)");
  sub->callback([args, sub]() { run_train(*args, *sub); });
}

}  // namespace placer::cli
