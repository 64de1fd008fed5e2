#pragma once
// Quantities with units, as written in YAML files: byte sizes, bandwidths, times, FLOP/s.
//
//   bytes      "16 GiB", "32GB", "512 MiB", "1.5 KiB", "4096" (plain number = bytes)
//   bandwidth  "300 GB/s", "12.5 GiB/s", "25 Gbit/s" = "25 Gb/s" = "25 Gbps" (bits!),
//              "3.1 GBps" (bytes), "1e9" (plain number = bytes per second)
//   time       "5 us" (also "µs"), "1.5 ms", "20 ns", "2e-6 s", "2e-6" (plain = seconds)
//   FLOP/s     "15.7 TFLOPS", "125 TFLOP/s", "900 GFLOPS", "1e12" (plain = FLOP/s)
//
// Decimal prefixes (k/K, M, G, T, P) are powers of 1000, binary ones (Ki, Mi, Gi, Ti, Pi)
// powers of 1024. Upper-case B is a byte, lower-case b (or "bit") a bit. The space between
// number and unit is optional. Numbers are read locale-independently.
//
// The formatters pick a readable unit and write the shortest number that reads back to
// exactly the same value (parse_x(format_x(v)) == v for every finite v >= 0).

#include <cstdint>
#include <string>

namespace placer {

/// What a quantity measures; selects the accepted units and the error hint.
enum class QuantityKind { kBytes, kBandwidth, kTime, kFlops };
/// "a byte size", "a bandwidth", "a time", "a FLOP/s rate".
const char* quantity_description(QuantityKind k);

/// Parses `text` as a quantity of kind `k` in base units (bytes, B/s, s, FLOP/s).
/// Returns false when the number or the unit cannot be read, or the value is negative or
/// not finite.
bool try_parse_quantity(const std::string& text, QuantityKind k, double* out);

/// As try_parse_quantity, but throws FormatError
///   "<file>: <field>: cannot read '25 Gbq' as a bandwidth (use e.g. '25 Gbit/s' or '3.1 GB/s')"
/// naming `file` and `field` (either may be empty).
double parse_quantity(const std::string& text, QuantityKind k, const std::string& file = "",
                      const std::string& field = "");

/// Byte count: parse_quantity(kBytes) rounded to the nearest integer; throws FormatError
/// when it does not fit in 64 bits.
uint64_t parse_bytes(const std::string& text, const std::string& file = "",
                     const std::string& field = "");
double parse_bandwidth(const std::string& text, const std::string& file = "",
                       const std::string& field = "");
double parse_time(const std::string& text, const std::string& file = "",
                  const std::string& field = "");
double parse_flops(const std::string& text, const std::string& file = "",
                   const std::string& field = "");

/// "16 GiB", "80 GB", "1.5 MiB", "123 B": the largest binary or decimal unit that writes
/// the value exactly (binary preferred), else plain bytes.
std::string format_bytes(uint64_t bytes);
/// "300 GB/s", "3.125 GB/s" (decimal byte units; round-trips exactly).
std::string format_bandwidth(double bytes_per_second);
/// "5 us", "1.5 ms", "2 s", "20 ns".
std::string format_time(double seconds);
/// "15.7 TFLOPS", "125 TFLOPS", "900 GFLOPS".
std::string format_flops(double flops_per_second);
/// Dispatches on `k` (bytes are rounded to an integer first).
std::string format_quantity(double value, QuantityKind k);

/// A unit a list of numbers can share (e.g. the "unit:" of a bandwidth matrix).
/// unit_value("GB/s", kBandwidth, &v) sets v to the value of "1 GB/s"; false if unknown.
bool unit_value(const std::string& unit, QuantityKind k, double* out);
/// number * unit exactly as the parsers compute it ("3.125" with "GB/s" -> 3.125e9).
double apply_unit(double number, const std::string& unit, QuantityKind k);

/// Shortest decimal text of `v` that reads back to the same double ("0.1", "3.125e+09").
std::string format_double(double v);
/// Locale-independent strict parse of a whole string as a double (no unit).
bool parse_double(const std::string& text, double* out);

}  // namespace placer
