#include "csv.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <stdexcept>

namespace placer::calibrate {

Stats summarize(std::vector<double> seconds) {
  if (seconds.empty()) throw std::invalid_argument("summarize: no timed iterations");
  std::sort(seconds.begin(), seconds.end());
  Stats s;
  s.count = static_cast<int>(seconds.size());
  s.min = seconds.front();
  s.max = seconds.back();
  const std::size_t mid = seconds.size() / 2;
  s.median = seconds.size() % 2 ? seconds[mid] : 0.5 * (seconds[mid - 1] + seconds[mid]);
  return s;
}

namespace {
// Header values are single-line; a newline would start a data row.
std::string one_line(std::string s) {
  for (auto& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s.empty() ? std::string("unknown") : s;
}
void check_field(const std::string& field, const char* column) {
  if (field.empty() || field.find_first_of(",\n\r\"") != std::string::npos)
    throw std::invalid_argument(std::string("measurement CSV: bad ") + column + " '" + field + "'");
}
std::string seconds(double s) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6e", s);
  return buf;
}
}  // namespace

void write_header(std::ostream& out, const RunInfo& info) {
  out << "# placer-calibrate measurements, format 1\n"
      << "# tool: placer-calibrate 0.1\n"
      << "# host: " << one_line(info.host) << "\n"
      << "# device: " << one_line(info.device) << "\n"
      << "# device_count: " << info.device_count << "\n"
      << "# compute_capability: " << one_line(info.compute_capability) << "\n"
      << "# driver: " << one_line(info.driver) << "\n"
      << "# cuda_runtime: " << one_line(info.cuda_runtime) << "\n"
      << "# cublas: " << one_line(info.cublas) << "\n"
      << "# cudnn: " << one_line(info.cudnn) << "\n"
      << "# nccl: " << one_line(info.nccl) << "\n"
      << "# hosts: " << info.hosts << "\n"
      << "# world_size: " << info.world_size << "\n"
      << "# date: " << one_line(info.date) << "\n"
      << "# command: " << one_line(info.command) << "\n"
      << kCsvColumns << "\n";
}

std::string format_row(const Measurement& m) {
  check_field(m.kind, "kind");
  check_field(m.op, "op");
  check_field(m.dtype, "dtype");
  check_field(m.shape, "shape");
  if (m.time.count <= 0) throw std::invalid_argument("measurement CSV: row without timed iterations");
  return m.kind + "," + m.op + "," + m.dtype + "," + m.shape + "," + std::to_string(m.flops) +
         "," + std::to_string(m.bytes) + "," + std::to_string(m.devices) + "," +
         std::to_string(m.hosts) + "," + seconds(m.time.median) + "," + seconds(m.time.min) +
         "," + seconds(m.time.max) + "," + std::to_string(m.time.count);
}

void CsvSink::write(std::ostream& out, const RunInfo& info) const {
  write_header(out, info);
  for (const auto& r : rows_) out << format_row(r) << "\n";
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace placer::calibrate
