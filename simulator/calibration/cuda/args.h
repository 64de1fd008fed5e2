// placer-calibrate: command-line options and their parser (host-only, no CUDA headers).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace placer::calibrate {

// A bad command line: printed with the usage hint, exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The benchmark families (the `kind` column of the measurement CSV).
inline const std::vector<std::string>& all_kinds() {
  static const std::vector<std::string> kinds = {"gemm",    "conv",   "elementwise", "reduction",
                                                 "softmax", "memcpy", "collective"};
  return kinds;
}
inline const std::vector<std::string>& all_dtypes() {
  static const std::vector<std::string> dtypes = {"fp32", "tf32", "fp16", "bf16"};
  return dtypes;
}

struct Options {
  std::string out = "placer-calibrate.csv";  // "-" writes the CSV to stdout
  bool quick = false;
  std::vector<std::string> only = all_kinds();     // benchmark kinds to run, in canonical order
  std::vector<std::string> dtypes = all_dtypes();  // compute dtypes, in canonical order
  std::size_t min_bytes = 8;                       // smallest message / copy size
  std::size_t max_bytes = std::size_t{1} << 30;    // largest message / copy / buffer size
  int step = 2;                                    // size multiplier between message sizes
  int warmup = 5;
  int iters = 20;
  std::vector<int> devices;  // empty: every visible device
  std::vector<int> ranks;    // GPU counts for single-process collectives; empty: all of them
  bool help = false;
  std::string command;  // the command line as given (recorded in the CSV header)

  bool runs(const std::string& kind) const;
  bool has_dtype(const std::string& dtype) const;
};

// Parses argv (argv[0] is the program). Throws UsageError with a precise message.
// --quick lowers the defaults (warmup 2, iters 5, step 4, fewer shapes); explicit
// --warmup/--iters/--step win over it whatever the order.
Options parse_args(int argc, const char* const* argv);

// "8", "64K", "1M", "1G", "512KiB", "2MB" (binary multiples) -> bytes. Throws UsageError.
std::size_t parse_size(const std::string& text, const std::string& option);

// "1.5 GiB"-style rendering for progress lines.
std::string format_size(std::size_t bytes);

std::string usage();

}  // namespace placer::calibrate
