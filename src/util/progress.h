#pragma once
// Progress of long work on stderr: a bar with rate and ETA when stderr is a terminal,
// otherwise one plain line every few seconds (logs stay readable). Results go to stdout.

#include <chrono>
#include <cstdint>
#include <string>

namespace placer {

class Progress {
 public:
  /// `total` = 0 when the amount of work is unknown (time-bounded searches).
  Progress(std::string label, int64_t total);
  ~Progress();  ///< finishes the line if update() was called
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// Reports `done` units of work (monotone) with a short status ("best 12.3 ms").
  /// Cheap when called often: it prints at most every 0.2 s (terminal) or 2 s (log).
  void update(int64_t done, const std::string& status = "");
  /// Changes the total (e.g. once a search knows its budget).
  void set_total(int64_t total) { total_ = total; }
  /// Prints the final state once (also called by the destructor).
  void finish();

  /// Renders one line; public for tests.
  static std::string render(const std::string& label, int64_t done, int64_t total,
                            double elapsed_s, const std::string& status, bool bar);

 private:
  using Clock = std::chrono::steady_clock;
  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  std::string status_;
  bool tty_;
  bool printed_ = false;
  bool finished_ = false;
  Clock::time_point start_, last_;
};

}  // namespace placer
