// What the trainers of train-policy share on the command line (agents/training/trainer_run.h).
#include "agents/training/trainer_run.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "src/util/error.h"
#include "src/util/format.h"
#include "src/util/progress.h"

namespace placer {

namespace fs = std::filesystem;

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

std::string ratio_text(double r) { return r > 0 ? "x" + fixed(r, 3) : std::string("-"); }

void require_torch(bool available) {
  if (available) return;
  std::cerr << "placer: error: train-policy needs LibTorch, and this placer was built without "
               "it; install libtorch-dev (scripts/setup.sh) and rebuild\n";
  throw TrainerExit(2);
}

void reject_gdp_only_options(const TrainArgs& a) {
  if (!a.dist_url.empty() || a.rank >= 0 || a.world_size >= 0) {
    throw ValidationError(
        "--dist-url / --rank / --world-size: only --agent gdp trains distributed");
  }
  if (a.plot || a.plot_only)
    throw ValidationError("--plot / --plot-only apply to --agent gdp only");
}

bool printed_config(const TrainArgs& a, const std::string& agent_flag,
                    const std::function<std::string(const std::string& header)>& yaml,
                    bool torch_available) {
  if (!a.print_config) {
    require_torch(torch_available);
    return false;
  }
  std::cout << yaml("Effective configuration of placer train-policy" + agent_flag);
  return true;
}

std::string run_config_header(const std::string& agent_flag, const std::string& command) {
  return "Effective configuration of the training run in this folder (placer train-policy" +
         agent_flag + ")\nwritten by: " + command;
}

void interrupted_before_start() {
  std::cerr << "placer: interrupted before training started; nothing written\n";
  throw TrainerExit(130);
}

TrainerRun::TrainerRun(const std::string& dir, const TrainArgs& a, bool remove)
    : run_(dir), resume_(a.resume) {
  run_.open(a.resume, a.overwrite, remove);
}

int64_t TrainerRun::start(const std::function<int64_t()>& resume) {
  const int64_t start = resume_ ? resume() : 0;
  if (stopped()) interrupted_before_start();
  return start;
}

std::string TrainerRun::updates_text(int64_t start, int64_t total) const {
  return (resume_ ? "resuming after update " + std::to_string(start) + ", " : std::string()) +
         "updates " + std::to_string(start + 1) + ".." + std::to_string(total);
}

void TrainerRun::exit_if_stopped(int64_t done) const {
  if (!stopped()) return;
  std::cout << std::flush;
  std::cerr << "placer: interrupted at update " << done << " (checkpoint "
            << shown_path(run_.checkpoint_file()) << "); resume with --resume\n";
  throw TrainerExit(130);
}

int64_t TrainerRun::train(const std::function<int64_t()>& train, Progress& progress, int64_t start,
                          double* wall_seconds) const {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t done = train();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress.finish();
  exit_if_stopped(done);
  print_updates(done, start, wall);
  if (wall_seconds != nullptr) *wall_seconds = wall;
  return done;
}

void TrainerRun::print_updates(int64_t done, int64_t start, double wall_seconds) const {
  std::cout << "\nupdates      " << done << " (" << done - start << " in this run)\n"
            << "wall time    " << human_time(wall_seconds) << "\n";
}

void print_files_and_use(const TrainingRun& run, const std::string& use_method) {
  std::string files;
  for (const char* f : {"policy.pt", "best.pt", "checkpoint.pt", "log.jsonl", "config.yaml"}) {
    if (fs::exists(run.file(f))) files += std::string(files.empty() ? "" : ", ") + f;
  }
  std::cout << "files        " << shown_path(run.dir()) << "/{" << files << "}\n";
  std::cout << "use it       placer place " << use_method << "--policy "
            << shown_path(run.file("policy.pt")) << " --graph G --cluster C -o out.plan.yaml\n"
            << std::flush;
}

}  // namespace placer
