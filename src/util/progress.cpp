#include "src/util/progress.h"

#include <unistd.h>

#include <cstdio>

#include "src/util/format.h"

namespace placer {

Progress::Progress(std::string label, int64_t total)
    : label_(std::move(label)), total_(total), tty_(isatty(STDERR_FILENO) != 0) {
  start_ = last_ = Clock::now();
}

Progress::~Progress() { finish(); }

std::string Progress::render(const std::string& label, int64_t done, int64_t total,
                             double elapsed_s, const std::string& status, bool bar) {
  std::string s = label + ": ";
  const double rate = elapsed_s > 0 ? double(done) / elapsed_s : 0;
  if (total > 0) {
    const double frac = std::min(1.0, double(done) / double(total));
    if (bar) {
      constexpr int kWidth = 24;
      const int fill = static_cast<int>(frac * kWidth + 0.5);
      s += "[" + std::string(fill, '#') + std::string(kWidth - fill, '.') + "] ";
    }
    s += fixed(100 * frac, 0) + "% " + std::to_string(done) + "/" + std::to_string(total);
    if (rate > 0 && done < total) {
      s += ", " + fixed(rate, rate >= 100 ? 0 : 1) + "/s, ETA " +
           human_time(double(total - done) / rate);
    }
  } else {
    s += std::to_string(done) + " done";
    if (rate > 0) s += ", " + fixed(rate, rate >= 100 ? 0 : 1) + "/s";
  }
  s += ", " + human_time(elapsed_s);
  if (!status.empty()) s += ", " + status;
  return s;
}

void Progress::update(int64_t done, const std::string& status) {
  done_ = done;
  status_ = status;
  const Clock::time_point now = Clock::now();
  const double since = std::chrono::duration<double>(now - last_).count();
  if (since < (tty_ ? 0.2 : 2.0)) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const std::string line = render(label_, done_, total_, elapsed, status_, tty_);
  if (tty_) {
    std::fprintf(stderr, "\r%s\033[K", line.c_str());
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
  printed_ = true;
}

void Progress::finish() {
  if (finished_ || !printed_) return;  // short work prints nothing
  finished_ = true;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const std::string line = render(label_, done_, total_, elapsed, status_, tty_);
  if (tty_) {
    std::fprintf(stderr, "\r%s\033[K\n", line.c_str());
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

}  // namespace placer
