#pragma once
// The stop flag of a training run (Ctrl-C): SIGINT / SIGTERM set it while a StopSignals is
// alive; the trainers poll it between updates (their `should_stop` callback), write their
// checkpoint and return, and `placer train-policy` exits 130. A second signal terminates at
// once. Part of the training harness (agents/common/training_run.h).

#include <functional>

namespace placer {

/// Installs the SIGINT / SIGTERM handlers for its lifetime (one at a time per process).
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  /// A signal came since construction.
  bool stopped() const;
  /// stopped() as a trainer's should_stop callback (valid while this object lives).
  std::function<bool()> flag() const {
    return [this] { return stopped(); };
  }

 private:
  void (*old_int_)(int);
  void (*old_term_)(int);
};

}  // namespace placer
