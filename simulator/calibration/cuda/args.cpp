#include "args.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>

namespace placer::calibrate {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  std::istringstream in(text);
  while (std::getline(in, cur, sep)) parts.push_back(cur);
  if (!text.empty() && text.back() == sep) parts.emplace_back();
  return parts;
}

long long parse_int(const std::string& text, const std::string& option, long long lo,
                    long long hi) {
  if (text.empty()) throw UsageError(option + ": expected an integer, got an empty value");
  std::size_t pos = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &pos, 10);
  } catch (const std::exception&) {
    throw UsageError(option + ": expected an integer, got '" + text + "'");
  }
  if (pos != text.size()) throw UsageError(option + ": expected an integer, got '" + text + "'");
  if (v < lo || v > hi) {
    throw UsageError(option + ": " + text + " is out of range [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
  }
  return v;
}

// A comma-separated subset of `allowed`, returned in the order of `allowed`.
std::vector<std::string> parse_subset(const std::string& text, const std::string& option,
                                      const std::vector<std::string>& allowed) {
  if (text.empty()) throw UsageError(option + ": empty list");
  std::set<std::string> chosen;
  for (const auto& item : split(text, ',')) {
    if (std::find(allowed.begin(), allowed.end(), item) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ",") + a;
      throw UsageError(option + ": unknown value '" + item + "' (expected a comma-separated " +
                       "list of " + list + ")");
    }
    chosen.insert(item);
  }
  std::vector<std::string> out;
  for (const auto& a : allowed)
    if (chosen.count(a)) out.push_back(a);
  return out;
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_=.,/:+") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

bool Options::runs(const std::string& kind) const {
  return std::find(only.begin(), only.end(), kind) != only.end();
}
bool Options::has_dtype(const std::string& dtype) const {
  return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end();
}

std::size_t parse_size(const std::string& text, const std::string& option) {
  std::size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0) throw UsageError(option + ": expected a size like 8, 64K, 1M or 1G, got '" + text + "'");
  std::string unit = text.substr(i);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  unsigned shift = 0;
  if (unit.empty() || unit == "B") shift = 0;
  else if (unit == "K" || unit == "KB" || unit == "KIB") shift = 10;
  else if (unit == "M" || unit == "MB" || unit == "MIB") shift = 20;
  else if (unit == "G" || unit == "GB" || unit == "GIB") shift = 30;
  else if (unit == "T" || unit == "TB" || unit == "TIB") shift = 40;
  else
    throw UsageError(option + ": unknown size unit '" + text.substr(i) + "' in '" + text +
                     "' (use B, K, M, G or T; multiples of 1024)");
  const std::string digits = text.substr(0, i);
  if (digits.size() > 15) throw UsageError(option + ": size '" + text + "' is too large");
  const unsigned long long v = std::stoull(digits);
  if (v > (std::numeric_limits<unsigned long long>::max() >> 20) >> shift)
    throw UsageError(option + ": size '" + text + "' is too large");
  return static_cast<std::size_t>(v << shift);
}

std::string format_size(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (v == static_cast<double>(static_cast<long long>(v)))
    std::snprintf(buf, sizeof buf, "%lld %s", static_cast<long long>(v), units[u]);
  else
    std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

std::string usage() {
  return R"(Usage: placer-calibrate [options]

Measures this machine's GPUs (cuBLAS GEMM, cuDNN convolutions, element-wise, reduction and
softmax kernels, memory copies, NCCL collectives) and writes a measurement CSV for
`placer calibrate fit` (format: docs/formats/measurements.md, tool: docs/calibrate_cuda.md).

Options:
  --out FILE          measurement CSV to write ('-' = stdout) [placer-calibrate.csv]
  --quick             fewer shapes and sizes; --warmup 2 --iters 5 --step 4
  --only LIST         kinds to run, comma-separated: gemm,conv,elementwise,reduction,softmax,
                      memcpy,collective [all]
  --dtypes LIST       compute dtypes: fp32,tf32,fp16,bf16 [all the GPU supports]
  --min-bytes SIZE    smallest message/copy size, e.g. 8, 4K [8]
  --max-bytes SIZE    largest message/copy/buffer size, e.g. 64M, 1G [1G]
  --step N            size multiplier between message sizes, 2 or more [2; 4 with --quick]
  --warmup N          untimed warm-up runs per measurement [5]
  --iters N           timed runs per measurement (median, min, max reported) [20]
  --devices LIST      CUDA device ordinals to use, e.g. 0,1,2,3 [all visible]
  --ranks LIST        collectives over the first N of those GPUs for each N, e.g. 2,4,8
                      (one process; each N >= 2) [all of them]
  -h, --help          this help

Multi-host collectives: start one process per GPU with mpirun (when built with MPI) or with
the torchrun-style environment RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; rank 0
writes the CSV. Exit status: 0 ok, 1 CUDA/library/runtime error, 2 bad command line.
)";
}

Options parse_args(int argc, const char* const* argv) {
  Options o;
  for (int i = 0; i < argc; ++i) o.command += (i ? " " : "") + shell_quote(argv[i] ? argv[i] : "");
  bool warmup_set = false, iters_set = false, step_set = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_inline = false;
    if (arg.rfind("--", 0) == 0) {
      const auto eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_inline = true;
      }
    }
    auto need_value = [&]() -> std::string {
      if (has_inline) return value;
      if (i + 1 >= argc) throw UsageError(arg + ": missing value");
      return argv[++i];
    };
    auto no_value = [&]() {
      if (has_inline) throw UsageError(arg + ": takes no value");
    };
    if (arg == "-h" || arg == "--help") {
      no_value();
      o.help = true;
    } else if (arg == "--quick") {
      no_value();
      o.quick = true;
    } else if (arg == "--out" || arg == "-o") {
      o.out = need_value();
      if (o.out.empty()) throw UsageError(arg + ": empty file name");
    } else if (arg == "--only") {
      o.only = parse_subset(need_value(), arg, all_kinds());
    } else if (arg == "--dtypes") {
      o.dtypes = parse_subset(need_value(), arg, all_dtypes());
    } else if (arg == "--min-bytes") {
      o.min_bytes = parse_size(need_value(), arg);
    } else if (arg == "--max-bytes") {
      o.max_bytes = parse_size(need_value(), arg);
    } else if (arg == "--step") {
      o.step = static_cast<int>(parse_int(need_value(), arg, 2, 1024));
      step_set = true;
    } else if (arg == "--warmup") {
      o.warmup = static_cast<int>(parse_int(need_value(), arg, 0, 100000));
      warmup_set = true;
    } else if (arg == "--iters") {
      o.iters = static_cast<int>(parse_int(need_value(), arg, 1, 100000));
      iters_set = true;
    } else if (arg == "--devices") {
      const std::string v = need_value();
      o.devices.clear();
      for (const auto& item : split(v, ',')) {
        const int d = static_cast<int>(parse_int(item, arg, 0, 1023));
        if (std::find(o.devices.begin(), o.devices.end(), d) != o.devices.end())
          throw UsageError(arg + ": device " + item + " is listed twice");
        o.devices.push_back(d);
      }
    } else if (arg == "--ranks") {
      const std::string v = need_value();
      o.ranks.clear();
      for (const auto& item : split(v, ',')) {
        const int r = static_cast<int>(parse_int(item, arg, 2, 1024));
        if (std::find(o.ranks.begin(), o.ranks.end(), r) != o.ranks.end())
          throw UsageError(arg + ": " + item + " is listed twice");
        o.ranks.push_back(r);
      }
      std::sort(o.ranks.begin(), o.ranks.end());
    } else {
      throw UsageError("unknown argument '" + std::string(argv[i]) + "'");
    }
  }
  if (o.quick) {
    if (!warmup_set) o.warmup = 2;
    if (!iters_set) o.iters = 5;
    if (!step_set) o.step = 4;
  }
  if (o.min_bytes == 0) throw UsageError("--min-bytes: must be at least 1 byte");
  if (o.min_bytes > o.max_bytes) {
    throw UsageError("--min-bytes " + format_size(o.min_bytes) + " is larger than --max-bytes " +
                     format_size(o.max_bytes));
  }
  return o;
}

}  // namespace placer::calibrate
