#include "simulator/calibration/measurements.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "src/io/json_read.h"
#include "src/io/units.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"

namespace placer {

namespace {

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string cur;
  for (char c : text) {
    if (c == '\n') {
      if (!cur.empty() && cur.back() == '\r') cur.pop_back();
      lines.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) {
    if (cur.back() == '\r') cur.pop_back();
    lines.push_back(cur);
  }
  return lines;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}

std::vector<std::string> tokens(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  std::string t;
  while (in >> t) out.push_back(t);
  return out;
}

[[noreturn]] void fail(const std::string& file, int line, const std::string& msg) {
  throw FormatError(file + ":" + std::to_string(line) + ": " + msg);
}

double number(const std::string& text, const std::string& file, int line,
              const std::string& column) {
  double v = 0;
  if (!parse_measurement(text, &v)) {
    fail(file, line,
         column + ": expected a finite number of normal magnitude, got " + quote_short(text));
  }
  return v;
}

int integer(const std::string& text, const std::string& file, int line, const std::string& column) {
  const double v = number(text, file, line, column);
  if (v != std::floor(v) || v < 0 || v > 1e9) {
    fail(file, line, column + ": expected a non-negative integer, got " + quote_short(text));
  }
  return static_cast<int>(v);
}

}  // namespace

// ---- names -----------------------------------------------------------------------------------

const char* to_string(MeasureKind k) {
  switch (k) {
    case MeasureKind::kGemm:
      return "gemm";
    case MeasureKind::kConv:
      return "conv";
    case MeasureKind::kElementwise:
      return "elementwise";
    case MeasureKind::kReduction:
      return "reduction";
    case MeasureKind::kSoftmax:
      return "softmax";
    case MeasureKind::kMemcpy:
      return "memcpy";
    case MeasureKind::kCollective:
      return "collective";
  }
  return "gemm";
}

bool parse_measure_kind(const std::string& s, MeasureKind* out) {
  for (int k = 0; k <= static_cast<int>(MeasureKind::kCollective); ++k) {
    if (s == to_string(static_cast<MeasureKind>(k))) {
      *out = static_cast<MeasureKind>(k);
      return true;
    }
  }
  return false;
}

bool measure_category(MeasureKind k, OpCategory* out) {
  switch (k) {
    case MeasureKind::kGemm:
      *out = OpCategory::kMatMul;
      return true;
    case MeasureKind::kConv:
      *out = OpCategory::kConv;
      return true;
    case MeasureKind::kElementwise:
      *out = OpCategory::kElementwise;
      return true;
    case MeasureKind::kReduction:
      *out = OpCategory::kReduction;
      return true;
    case MeasureKind::kSoftmax:
      *out = OpCategory::kSoftmax;
      return true;
    default:
      return false;
  }
}

bool measure_dtype(const std::string& dtype, DType* out) {
  const std::string d = lower(dtype);
  if (d == "fp32" || d == "f32" || d == "float" || d == "float32" || d == "tf32") {
    *out = DType::kF32;
  } else if (d == "fp16" || d == "f16" || d == "half" || d == "float16") {
    *out = DType::kF16;
  } else if (d == "bf16" || d == "bfloat16") {
    *out = DType::kBF16;
  } else if (d == "fp64" || d == "f64" || d == "double") {
    *out = DType::kF64;
  } else if (d == "u8" || d == "uint8") {
    *out = DType::kU8;
  } else if (d == "i8" || d == "int8") {
    *out = DType::kI8;
  } else {
    return false;
  }
  return true;
}

std::string normalize_collective_name(const std::string& s) {
  std::string n = lower(s);
  if (n.size() > 5 && n.compare(n.size() - 5, 5, "_perf") == 0) n.resize(n.size() - 5);
  std::string compact;
  for (char c : n) {
    if (c != '_' && c != '-') compact += c;
  }
  if (compact == "allreduce") return "all_reduce";
  if (compact == "allgather") return "all_gather";
  if (compact == "reducescatter") return "reduce_scatter";
  if (compact == "broadcast") return "broadcast";
  if (compact == "sendrecv") return "send_recv";
  if (compact == "alltoall") return "all_to_all";
  if (compact == "reduce") return "reduce";
  if (compact == "gather") return "gather";
  if (compact == "scatter") return "scatter";
  return "";
}

// ---- CSV -------------------------------------------------------------------------------------

MeasurementSet parse_measurements_csv(const std::string& text, const std::string& file) {
  static const std::vector<std::string> kColumns = {"kind",   "op",    "dtype",   "shape",
                                                    "flops",  "bytes", "devices", "hosts",
                                                    "time_s", "min_s", "max_s",   "iters"};
  MeasurementSet set;
  set.source = file;
  set.format = "csv";
  const std::vector<std::string> lines = split_lines(text);
  std::vector<int> col(kColumns.size(), -1);
  size_t ncols = 0;
  bool have_header = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const int ln = static_cast<int>(i) + 1;
    const std::string line = trim(lines[i]);
    if (line.empty()) continue;
    if (line[0] == '#') {
      const std::string body = trim(line.substr(1));
      const size_t colon = body.find(':');
      if (colon != std::string::npos) {
        set.header[trim(body.substr(0, colon))] = trim(body.substr(colon + 1));
      }
      continue;
    }
    const std::vector<std::string> f = split(line, ',');
    if (!have_header) {
      for (size_t c = 0; c < f.size(); ++c) {
        for (size_t k = 0; k < kColumns.size(); ++k) {
          if (f[c] == kColumns[k]) col[k] = static_cast<int>(c);
        }
      }
      for (size_t k = 0; k < kColumns.size(); ++k) {
        if (col[k] < 0) {
          fail(file, ln,
               "header row: missing column '" + kColumns[k] +
                   "' (expected kind,op,dtype,shape,flops,bytes,devices,hosts,time_s,min_s,"
                   "max_s,iters; docs/formats/measurements.md)");
        }
      }
      ncols = f.size();
      have_header = true;
      continue;
    }
    if (f.size() != ncols) {
      fail(file, ln,
           "expected " + std::to_string(ncols) + " comma-separated fields, got " +
               std::to_string(f.size()));
    }
    auto get = [&](size_t k) -> const std::string& { return f[static_cast<size_t>(col[k])]; };
    Measurement m;
    m.source = file;
    m.line = ln;
    if (!parse_measure_kind(get(0), &m.kind)) {
      fail(file, ln,
           "kind: unknown kind '" + get(0) +
               "' (expected gemm, conv, elementwise, reduction, softmax, memcpy or collective)");
    }
    m.op = get(1);
    if (m.op.empty()) fail(file, ln, "op: empty");
    if (m.kind == MeasureKind::kCollective) {
      const std::string n = normalize_collective_name(m.op);
      if (n.empty()) {
        fail(file, ln,
             "op: unknown collective '" + m.op +
                 "' (expected all_reduce, all_gather, reduce_scatter, broadcast or send_recv)");
      }
      m.op = n;
    }
    m.dtype = get(2);
    m.shape = get(3);
    m.flops = number(get(4), file, ln, "flops");
    m.bytes = number(get(5), file, ln, "bytes");
    m.devices = integer(get(6), file, ln, "devices");
    m.hosts = integer(get(7), file, ln, "hosts");
    m.time_s = number(get(8), file, ln, "time_s");
    m.min_s = number(get(9), file, ln, "min_s");
    m.max_s = number(get(10), file, ln, "max_s");
    m.iters = integer(get(11), file, ln, "iters");
    if (m.flops < 0) fail(file, ln, "flops: must be >= 0");
    if (m.bytes < 0) fail(file, ln, "bytes: must be >= 0");
    if (!(m.time_s > 0)) fail(file, ln, "time_s: must be > 0, got " + get(8));
    if (m.devices < 1) fail(file, ln, "devices: must be >= 1");
    set.rows.push_back(std::move(m));
  }
  if (!have_header) {
    throw FormatError(file +
                      ": no header row (expected kind,op,dtype,shape,flops,bytes,devices,"
                      "hosts,time_s,min_s,max_s,iters)");
  }
  return set;
}

// ---- nccl-tests ------------------------------------------------------------------------------

bool looks_like_nccl_tests(const std::string& text) {
  return text.find("nThread") != std::string::npos ||
         (text.find("algbw") != std::string::npos && text.find("busbw") != std::string::npos) ||
         text.find("Avg bus bandwidth") != std::string::npos;
}

namespace {

// The collective an "X_perf" mention names, or "".
std::string op_in_line(const std::string& line) {
  static const char* kNames[] = {"all_reduce_perf", "all_gather_perf", "reduce_scatter_perf",
                                 "broadcast_perf",  "sendrecv_perf",   "alltoall_perf",
                                 "reduce_perf",     "gather_perf",     "scatter_perf",
                                 "hypercube_perf"};
  size_t best = std::string::npos;
  std::string found;
  for (const char* n : kNames) {
    const size_t at = line.find(n);
    if (at == std::string::npos) continue;
    // "reduce_perf" also matches inside "all_reduce_perf": keep the longest at a position.
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_')) {
      continue;
    }
    if (best == std::string::npos || at < best) {
      best = at;
      found = n;
    }
  }
  return found.empty() ? "" : normalize_collective_name(found);
}

std::string base_name(const std::string& path) {
  const size_t s = path.find_last_of("/\\");
  return s == std::string::npos ? path : path.substr(s + 1);
}

// Ranks implied by busbw / algbw for a collective (0 when the ratio does not tell).
int ranks_from_ratio(const std::string& op, double ratio) {
  if (!(ratio > 0)) return 0;
  double n = 0;
  if (op == "all_reduce") {
    if (ratio >= 2) return 0;
    n = 2 / (2 - ratio);
  } else if (op == "all_gather" || op == "reduce_scatter" || op == "all_to_all") {
    if (ratio >= 1) return 0;
    n = 1 / (1 - ratio);
  } else {
    return 0;
  }
  if (!(n >= 1.5 && n < 1e6)) return 0;
  return static_cast<int>(std::lround(n));
}

// MPI launchers prefix output with "[0]" or "[1,0]<stdout>:", sometimes in the middle of a
// line when ranks interleave ("sum -1[0] 1626.5"): every "[digits]" tag becomes a space.
std::string drop_rank_tags(const std::string& line) {
  std::string cleaned;
  for (size_t k = 0; k < line.size();) {
    if (line[k] == '[') {
      size_t e = k + 1;
      while (e < line.size() &&
             (std::isdigit(static_cast<unsigned char>(line[e])) || line[e] == ','))
        ++e;
      if (e < line.size() && line[e] == ']' && e > k + 1) {
        cleaned += ' ';
        k = e + 1;
        if (line.compare(k, 9, "<stdout>:") == 0) k += 9;
        continue;
      }
    }
    cleaned += line[k++];
  }
  return cleaned;
}

// "nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5
//  iters: 20 agg iters: 1 validation: 1 graph: 0"
void read_nthread_line(const std::vector<std::string>& t,
                       std::map<std::string, std::string>* header) {
  for (size_t k = 0; k + 1 < t.size(); ++k) {
    const std::string& key = t[k];
    if (key == "nThread" || key == "nGpus" || key == "minBytes" || key == "maxBytes") {
      (*header)[key] = t[k + 1];
    } else if (key == "iters:") {
      const std::string prev = k > 0 ? t[k - 1] : "";
      (*header)[prev == "warmup" ? "warmup_iters"
                : prev == "agg"  ? "agg_iters"
                                 : "iters"] = t[k + 1];
    }
  }
}

// The measurement format's name of an nccl-tests type ("float" -> "fp32").
std::string nccl_dtype(const std::string& type) {
  static const std::map<std::string, std::string> names = {{"float", "fp32"},    {"half", "fp16"},
                                                           {"bfloat16", "bf16"}, {"double", "fp64"},
                                                           {"int8", "i8"},       {"uint8", "u8"}};
  const auto it = names.find(type);
  return it == names.end() ? type : it->second;
}

bool modelled_collective(const std::string& op) {
  return op == "all_reduce" || op == "all_gather" || op == "reduce_scatter" || op == "broadcast" ||
         op == "send_recv";
}

// One result row, with the bandwidths that tell how many ranks ran.
struct NcclRow {
  Measurement m;
  double algbw = 0, busbw = 0;
  std::string op;
};

// An nccl-tests log read line by line: the header, the "# Rank" lines and the result tables.
struct NcclLog {
  std::string file;
  std::string op;       // the caller's, "" when not named
  std::string file_op;  // the one the file name names, or ""
  MeasurementSet* set = nullptr;
  std::vector<std::string> rank_hosts;  // host of each "# Rank" line
  std::string log_op;                   // the last one a line named
  std::string device;
  std::vector<NcclRow> rows;
  bool in_table = false;
  int header_root = -1;  // the table header lists a root column: 1, does not: 0, unseen: -1

  void read_line(const std::string& raw, int ln) {
    const std::string line = trim(drop_rank_tags(trim(raw)));
    if (line.empty()) return;
    if (const std::string o = op_in_line(line); !o.empty()) log_op = o;
    const std::string body = line[0] == '#' ? trim(line.substr(1)) : line;
    const std::vector<std::string> t = tokens(body);
    if (t.empty()) return;
    if (t[0] == "nThread") {
      read_nthread_line(t, &set->header);
    } else if (t[0] == "Rank" && t.size() >= 4) {
      read_rank_line(t, body);
    } else if (t[0] == "Avg" || t[0] == "Out") {
      in_table = false;
    } else if (t[0] == "size") {
      in_table = true;
      header_root = std::find(t.begin(), t.end(), "root") != t.end() ? 1 : 0;
    } else if (line[0] != '#' && std::isdigit(static_cast<unsigned char>(line[0])) && in_table) {
      // (digits before any table header are not part of a result table, e.g. a date)
      read_result_row(t, ln);
    }
  }

  // "Rank 0 Group 0 Pid 123 on host device 0 [0x1b] NVIDIA H100 80GB HBM3"
  // "Rank 0 Pid 123 on host device 0 [0x27] NVIDIA A100-SXM4-80GB"
  void read_rank_line(const std::vector<std::string>& t, const std::string& body) {
    auto on = std::find(t.begin(), t.end(), "on");
    if (on != t.end() && on + 1 != t.end()) rank_hosts.push_back(*(on + 1));
    const size_t br = body.find(']');
    if (br != std::string::npos && device.empty()) device = trim(body.substr(br + 1));
  }

  // size count type redop [root] time algbw busbw #wrong [time algbw busbw #wrong]
  void read_result_row(const std::vector<std::string>& t, int ln) {
    if (t.size() < 7) {
      fail(file, ln,
           "malformed result row: expected size, count, type, redop, [root,] time, algbw, busbw, "
           "#wrong, got " +
               std::to_string(t.size()) + " fields");
    }
    // With a root column the out-of-place time is field 5, without it field 4: the table
    // has 13 / 9 fields, or 8 when its header lists a root column and no #wrong (tables
    // published with the out-of-place time, algbw and busbw only).
    size_t base = 4;
    if (t.size() == 13 || t.size() == 9 || (t.size() == 8 && header_root == 1)) base = 5;
    if (t.size() != 12 && t.size() != 13 && t.size() != 8 && t.size() != 9) {
      fail(file, ln,
           "malformed result row: " + std::to_string(t.size()) +
               " fields (expected 12 or 13 with in-place columns, 8 or 9 without)");
    }
    NcclRow r;
    Measurement& m = r.m;
    m.kind = MeasureKind::kCollective;
    m.source = file;
    m.line = ln;
    m.bytes = number(t[0], file, ln, "size");
    m.dtype = nccl_dtype(t[2]);
    m.shape = "count=" + t[1];
    const double oop = number(t[base], file, ln, "out-of-place time");
    r.algbw = number(t[base + 1], file, ln, "out-of-place algbw");
    r.busbw = number(t[base + 2], file, ln, "out-of-place busbw");
    double ip = oop;
    if (t.size() >= 12) ip = number(t[base + 4], file, ln, "in-place time");
    if (!(oop > 0)) fail(file, ln, "out-of-place time must be > 0, got '" + t[base] + "'");
    m.time_s = oop * 1e-6;
    m.min_s = std::min(oop, ip > 0 ? ip : oop) * 1e-6;
    m.max_s = std::max(oop, ip) * 1e-6;
    r.op = !op.empty() ? op : !log_op.empty() ? log_op : file_op;
    rows.push_back(std::move(r));
  }

  // Every row's collective (named and modelled) and the header's iteration count.
  void name_ops() {
    int iters = 0;
    if (auto it = set->header.find("iters"); it != set->header.end()) {
      double v = 0;
      if (parse_double(it->second, &v) && v >= 0) iters = static_cast<int>(v);
    }
    for (NcclRow& r : rows) {
      if (r.op.empty()) {
        fail(file, r.m.line,
             "cannot tell which collective this log measured: name it (OP=" + file +
                 ", OP = all_reduce, all_gather, reduce_scatter, broadcast or send_recv) or keep "
                 "'X_perf' in the file name");
      }
      if (!modelled_collective(r.op)) {
        fail(file, r.m.line,
             "collective '" + r.op +
                 "' is not modelled (all_reduce, all_gather, reduce_scatter, broadcast, "
                 "send_recv)");
      }
      r.m.op = r.op;
      r.m.iters = iters;
    }
  }

  // Ranks: the listed ones, unless busbw / algbw says more ran (then the hosts are not
  // all known: 0), else the header's nGpus, else 1.
  std::pair<int, int> ranks_and_hosts() const {
    const int listed = static_cast<int>(rank_hosts.size());
    const std::set<std::string> distinct(rank_hosts.begin(), rank_hosts.end());
    int inferred = 0;
    for (const NcclRow& r : rows) {
      if (r.algbw >= 1 && r.busbw > 0) {
        inferred = std::max(inferred, ranks_from_ratio(r.op, r.busbw / r.algbw));
      }
    }
    int ranks = listed;
    int hosts = static_cast<int>(distinct.size());
    if (inferred > listed) ranks = inferred, hosts = 0;
    if (ranks <= 0) {
      if (auto it = set->header.find("nGpus"); it != set->header.end()) {
        double v = 0;
        if (parse_double(it->second, &v) && v >= 1) ranks = static_cast<int>(v);
      }
    }
    if (ranks <= 0) ranks = 1;
    if (listed == 0) hosts = 0;
    return {ranks, hosts};
  }

  // The rows with their group (send_recv: one pair of ranks, whose link carries `size`).
  void write_rows(int ranks, int hosts) {
    if (!device.empty()) set->header["device"] = device;
    set->header["ranks"] = std::to_string(ranks);
    set->header["hosts"] = std::to_string(hosts);
    for (NcclRow& r : rows) {
      const bool pair = r.op == "send_recv";
      r.m.devices = pair ? 2 : ranks;
      r.m.hosts = !pair ? hosts : hosts == 1 ? 1 : (hosts == 0 ? 0 : 2);
      set->rows.push_back(std::move(r.m));
    }
  }
};

}  // namespace

MeasurementSet parse_nccl_tests_log(const std::string& text, const std::string& file,
                                    const std::string& op_in) {
  MeasurementSet set;
  set.source = file;
  set.format = "nccl-tests";
  NcclLog log;
  log.file = file;
  log.set = &set;
  if (!op_in.empty()) {
    log.op = normalize_collective_name(op_in);
    if (log.op.empty()) {
      throw FormatError(file + ": unknown collective '" + op_in +
                        "' (expected all_reduce, all_gather, reduce_scatter, broadcast or "
                        "send_recv)");
    }
  }
  log.file_op = op_in_line(base_name(file));
  const std::vector<std::string> lines = split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) log.read_line(lines[i], static_cast<int>(i) + 1);
  if (log.rows.empty()) {
    throw FormatError(file +
                      ": no nccl-tests result rows (expected a table with size, count, "
                      "type, redop, root, time, algbw, busbw columns)");
  }
  log.name_ops();
  const auto [ranks, hosts] = log.ranks_and_hosts();
  log.write_rows(ranks, hosts);
  return set;
}

bool looks_like_nccl_tests_csv(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos || line[a] == '#') continue;
    return line.compare(a, 8, "size(B),") == 0;
  }
  return false;
}

MeasurementSet parse_nccl_tests_csv(const std::string& text, const std::string& file,
                                    const std::string& op) {
  MeasurementSet set;
  set.source = file;
  set.format = "nccl-tests-csv";
  const std::string coll = op.empty() ? std::string("all_reduce") : normalize_collective_name(op);
  if (coll.empty()) throw FormatError(file + ": '" + op + "' is not a collective");
  std::istringstream in(text);
  std::string line;
  int n = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++n;
    const size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos || line[a] == '#') continue;
    std::vector<std::string> f;
    std::string cur;
    for (char ch : line) {
      if (ch == ',') {
        f.push_back(cur);
        cur.clear();
      } else if (ch != '\r' && ch != ' ') {
        cur += ch;
      }
    }
    f.push_back(cur);
    const std::string where = file + ":" + std::to_string(n);
    if (!header) {
      if (f.size() < 5 || f[0] != "size(B)" || f[3] != "time(ns)" || f[4] != "busbw(GB/s)") {
        throw FormatError(where + ": expected the header size(B),count,type,time(ns),busbw(GB/s)"
                                  "[,time(ns),busbw(GB/s)]");
      }
      header = true;
      continue;
    }
    if (f.size() != 5 && f.size() != 7) {
      throw FormatError(where + ": " + std::to_string(f.size()) + " fields, expected 5 or 7");
    }
    static const char* const kCols[] = {"size(B)", "count", "type", "time(ns)", "busbw(GB/s)",
                                        "time(ns) (in-place)", "busbw(GB/s) (in-place)"};
    auto num = [&](size_t i) {
      double v = 0;
      if (!parse_measurement(f[i], &v) || v <= 0) {
        throw FormatError(where + ": column '" + kCols[i] + "': '" + f[i] +
                          "' is not a positive number");
      }
      return v;
    };
    Measurement m;
    m.kind = MeasureKind::kCollective;
    m.op = coll;
    m.dtype = f[2];
    m.bytes = num(0);
    m.time_s = num(3) * 1e-9;
    m.min_s = m.max_s = m.time_s;
    if (f.size() == 7) {
      const double t2 = num(5) * 1e-9;
      m.min_s = std::min(m.time_s, t2);
      m.max_s = std::max(m.time_s, t2);
    }
    // busbw / algbw = 2(p-1)/p for an all-reduce, (p-1)/p for gathers and scatters.
    const double ratio = num(4) * 1e9 / (m.bytes / m.time_s);
    const double factor = coll == "all_reduce" ? 2.0 : 1.0;
    const double p = factor / (factor - std::min(ratio, factor * 0.999));
    m.devices = std::max(2, static_cast<int>(std::lround(p)));
    m.hosts = 1;
    m.source = file;
    m.line = n;
    set.rows.push_back(m);
  }
  if (!header) throw FormatError(file + ": no header row");
  return set;
}

MeasurementSet load_measurements(const std::string& spec) {
  std::string op, path = spec;
  const size_t eq = spec.find('=');
  if (eq != std::string::npos && eq > 0 && spec.find('/') > eq) {
    const std::string maybe = spec.substr(0, eq);
    if (!normalize_collective_name(maybe).empty()) {
      op = maybe;
      path = spec.substr(eq + 1);
    }
  }
  const std::string text = read_text_file(path, "measurements");
  if (looks_like_nccl_tests_csv(text)) return parse_nccl_tests_csv(text, path, op);
  if (!op.empty() || looks_like_nccl_tests(text)) return parse_nccl_tests_log(text, path, op);
  return parse_measurements_csv(text, path);
}

}  // namespace placer
