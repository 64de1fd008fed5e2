#pragma once
// What the trainers of train-policy (agents/training/trainers.h) share on the command line: a run
// in its folder on the training harness (agents/common/training_run.h: the folder guard,
// config.yaml, the checkpoint) with Ctrl-C (agents/common/stop_signals.h), its opening and
// closing lines; and small helpers (the command line as typed, LibTorch required).

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "agents/common/stop_signals.h"
#include "agents/common/training_run.h"
#include "agents/training/trainers.h"

namespace placer {
class Progress;
}

namespace placer {

/// Ends `placer train-policy` with exit code `code`, its message already printed (2: no
/// LibTorch, 130: interrupted); the command line turns it into the process's exit code.
struct TrainerExit : std::exception {
  explicit TrainerExit(int exit_code) : code(exit_code) {}
  const char* what() const noexcept override { return "train-policy ended early"; }
  int code;
};

/// The command line as typed (Linux: /proc/self/cmdline), recorded as provenance.
std::string command_line();

/// "x1.234" for a ratio > 0, else "-".
std::string ratio_text(double r);

/// Exit 2 with the usual line when this placer has no LibTorch.
void require_torch(bool available);

/// ValidationError when options of --agent gdp alone are given to another trainer: the
/// distribution flags (it trains in one process), --plot, --plot-only.
void reject_gdp_only_options(const TrainArgs& a);

/// With --print-config: prints `yaml(header)`, header "Effective configuration of placer
/// train-policy<agent_flag>", and returns true (nothing to train). Else checks that training
/// can run (require_torch(torch_available)) and returns false.
bool printed_config(const TrainArgs& a, const std::string& agent_flag,
                    const std::function<std::string(const std::string& header)>& yaml,
                    bool torch_available = true);
/// The same for a config `c` and its writer `yaml(c, header)`.
template <class Config>
bool printed_config(const TrainArgs& a, const std::string& agent_flag, const Config& c,
                    std::string (*yaml)(const Config&, const std::string&),
                    bool torch_available = true) {
  return printed_config(
      a, agent_flag, [&c, yaml](const std::string& h) { return yaml(c, h); }, torch_available);
}

/// The header of a run's config.yaml: "Effective configuration of the training run in this
/// folder (placer train-policy<agent_flag>)\nwritten by: <command>".
std::string run_config_header(const std::string& agent_flag, const std::string& command);

/// One train-policy run in its output folder, from its start to its closing lines.
class TrainerRun {
 public:
  /// Opens the folder for a.resume / a.overwrite (TrainingRun::open; `remove`: this process
  /// removes the old run's files) and installs the Ctrl-C handlers.
  TrainerRun(const std::string& dir, const TrainArgs& a, bool remove = true);

  const TrainingRun& files() const { return run_; }
  bool resuming() const { return resume_; }
  /// The stop flag, for the trainer's should_stop callback.
  std::function<bool()> should_stop() const { return signals_.flag(); }
  bool stopped() const { return signals_.stopped(); }

  /// The update training continues after: resume() when resuming, else 0. Exits 130 ("nothing
  /// written") when stopped meanwhile.
  int64_t start(const std::function<int64_t()>& resume);

  /// "resuming after update S, updates S+1..T" (without the first part on a fresh run).
  std::string updates_text(int64_t start, int64_t total) const;

  /// Exits 130 ("interrupted at update D (checkpoint ...); resume with --resume") when
  /// stopped.
  void exit_if_stopped(int64_t done) const;

  /// "updates      D (D - S in this run)" and "wall time    W".
  void print_updates(int64_t done, int64_t start, double wall_seconds) const;

  /// Runs `train` (the trainer's loop, polling should_stop()), finishes `progress`, exits 130
  /// when stopped, else prints the updates and the wall time (also in `wall_seconds`).
  /// Returns the updates done.
  int64_t train(const std::function<int64_t()>& train, Progress& progress, int64_t start,
                double* wall_seconds = nullptr) const;

 private:
  TrainingRun run_;
  bool resume_ = false;
  StopSignals signals_;
};

/// The closing lines: the files present in the run's folder and how to use the policy
/// (`use_method`: "--method M " or "").
void print_files_and_use(const TrainingRun& run, const std::string& use_method);

/// Exit 130, "interrupted before training started; nothing written".
[[noreturn]] void interrupted_before_start();

}  // namespace placer
