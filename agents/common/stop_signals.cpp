// The stop flag of a training run (agents/common/stop_signals.h).
#include "agents/common/stop_signals.h"

#include <csignal>

namespace placer {
namespace {

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

}  // namespace

StopSignals::StopSignals() {
  g_stop_signal = 0;
  old_int_ = std::signal(SIGINT, on_stop_signal);
  old_term_ = std::signal(SIGTERM, on_stop_signal);
}

StopSignals::~StopSignals() {
  std::signal(SIGINT, old_int_);
  std::signal(SIGTERM, old_term_);
}

bool StopSignals::stopped() const { return g_stop_signal != 0; }

}  // namespace placer
