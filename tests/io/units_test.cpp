#include "src/io/units.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "src/util/error.h"

namespace placer {
namespace {

TEST(Units, Bytes) {
  EXPECT_EQ(parse_bytes("16 GiB"), 16ull << 30);
  EXPECT_EQ(parse_bytes("32GB"), 32000000000ull);
  EXPECT_EQ(parse_bytes("512 MiB"), 512ull << 20);
  EXPECT_EQ(parse_bytes("1.5 KiB"), 1536u);
  EXPECT_EQ(parse_bytes("4096"), 4096u);
  EXPECT_EQ(parse_bytes("  7 B "), 7u);
  EXPECT_EQ(parse_bytes("2 kB"), 2000u);
  EXPECT_EQ(parse_bytes("1e3"), 1000u);
  EXPECT_EQ(parse_bytes("80 GiB"), 85899345920ull);
  // Bits are not bytes.
  EXPECT_THROW(parse_bytes("16 Gb"), FormatError);
}

TEST(Units, BandwidthBytesAndBits) {
  EXPECT_EQ(parse_bandwidth("300 GB/s"), 300e9);
  EXPECT_EQ(parse_bandwidth("25 Gbit/s"), 25e9 / 8);
  EXPECT_EQ(parse_bandwidth("25 Gbps"), 3.125e9);
  EXPECT_EQ(parse_bandwidth("25 Gb/s"), 3.125e9);
  EXPECT_EQ(parse_bandwidth("400 Gbit/s"), 50e9);
  EXPECT_EQ(parse_bandwidth("12.5 GiB/s"), 12.5 * 1073741824.0);
  EXPECT_EQ(parse_bandwidth("3.1 GBps"), 3.1e9);
  EXPECT_EQ(parse_bandwidth("1e9"), 1e9);
  EXPECT_EQ(parse_bandwidth("3.35 TB/s"), 3.35e12);
}

TEST(Units, Time) {
  EXPECT_EQ(parse_time("5 us"), 5e-6);  // the nearest double, like the literal
  EXPECT_EQ(parse_time("5us"), 5e-6);
  EXPECT_EQ(parse_time("5 \xC2\xB5s"), 5e-6);
  EXPECT_EQ(parse_time("1.5 ms"), 1.5e-3);
  EXPECT_EQ(parse_time("2e-6 s"), 2e-6);
  EXPECT_EQ(parse_time("2e-6"), 2e-6);
  EXPECT_EQ(parse_time("20 ns"), 20e-9);
  EXPECT_EQ(parse_time("0"), 0.0);
}

TEST(Units, Flops) {
  EXPECT_EQ(parse_flops("15.7 TFLOPS"), 15.7e12);
  EXPECT_EQ(parse_flops("125 TFLOP/s"), 125e12);
  EXPECT_EQ(parse_flops("900 GFlops"), 900e9);
  EXPECT_EQ(parse_flops("1e12"), 1e12);
  EXPECT_EQ(parse_flops("1 PFLOPS"), 1e15);
}

TEST(Units, ErrorsNameFileFieldAndHint) {
  try {
    parse_bandwidth("25 Gbq", "cluster.yaml", "links.inter_host.bandwidth");
    FAIL() << "no exception";
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(),
                 "cluster.yaml: links.inter_host.bandwidth: cannot read '25 Gbq' as a bandwidth "
                 "(use e.g. '25 Gbit/s' or '3.1 GB/s')");
  }
  try {
    parse_time("fast", "c.yaml", "links.intra_host.latency");
    FAIL() << "no exception";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read 'fast' as a time (use e.g. '5 us'"),
              std::string::npos);
  }
  try {
    parse_bytes("-3 GiB", "c.yaml", "memory");
    FAIL() << "no exception";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("c.yaml: memory: '-3 GiB' is negative"),
              std::string::npos);
  }
  double v = 0;
  EXPECT_FALSE(try_parse_quantity("", QuantityKind::kTime, &v));
  EXPECT_FALSE(try_parse_quantity("GB/s", QuantityKind::kBandwidth, &v));
  EXPECT_FALSE(try_parse_quantity("5 GB/s", QuantityKind::kTime, &v));
  EXPECT_FALSE(try_parse_quantity("nan", QuantityKind::kTime, &v));
  EXPECT_FALSE(try_parse_quantity("1e400", QuantityKind::kFlops, &v));
  EXPECT_THROW(parse_bytes("1e30 B"), FormatError);  // does not fit 64 bits
}

/// The FormatError message of `f`, or a note that it threw none.
template <typename F>
std::string format_error_of(F f) {
  try {
    f();
  } catch (const FormatError& e) {
    return e.what();
  }
  return "no FormatError";
}

TEST(Units, NonFiniteAndNonPhysicalNumbersAreErrors) {
  double v = 0;
  for (const char* text : {"NaN", "nan", "inf", "-inf", "1e400", "NaN GB/s"}) {
    EXPECT_FALSE(try_parse_quantity(text, QuantityKind::kBandwidth, &v)) << text;
  }
  EXPECT_EQ(format_error_of([] { parse_bandwidth("1e308", "c.yaml", "links.x.bandwidth"); }),
            "c.yaml: links.x.bandwidth: '1e308' is out of physical bounds: a bandwidth must be 0 "
            "or between 1 B/s and 100 TB/s");
  EXPECT_EQ(format_error_of([] { parse_bandwidth("9.2e18", "c.yaml", "b"); }),
            "c.yaml: b: '9.2e18' is out of physical bounds: a bandwidth must be 0 or between "
            "1 B/s and 100 TB/s");
  EXPECT_EQ(format_error_of([] { parse_bandwidth("1e-300", "c.yaml", "b"); }),
            "c.yaml: b: '1e-300' is out of physical bounds: a bandwidth must be 0 or between "
            "1 B/s and 100 TB/s");
  EXPECT_EQ(format_error_of([] { parse_flops("1e308", "c.yaml", "peak_flops"); }),
            "c.yaml: peak_flops: '1e308' is out of physical bounds: a FLOP/s rate must be 0 or "
            "between 1 FLOP/s and 1 EFLOP/s");
  EXPECT_EQ(format_error_of([] { parse_time("1e308", "c.yaml", "latency"); }),
            "c.yaml: latency: '1e308' is out of physical bounds: a time must be 0 or at most "
            "1e9 s (about 32 years)");
  // The bounds themselves are accepted, and so is 0 (checked where it matters).
  EXPECT_EQ(parse_bandwidth("100 TB/s"), 1e14);
  EXPECT_EQ(parse_flops("1 EFLOPS"), 1e18);
  EXPECT_EQ(parse_bandwidth("0"), 0.0);
}

TEST(Units, ByteSizesAreWholeAndBounded) {
  EXPECT_EQ(format_error_of([] { parse_bytes("0.5 B", "p.yaml", "data_parallel.bucket_size"); }),
            "p.yaml: data_parallel.bucket_size: '0.5 B' is not a whole number of bytes");
  EXPECT_EQ(format_error_of([] { parse_bytes("1.5", "p.yaml", "m"); }),
            "p.yaml: m: '1.5' is not a whole number of bytes");
  EXPECT_EQ(format_error_of([] { parse_bytes("2 EiB", "p.yaml", "m"); }),
            "p.yaml: m: cannot read '2 EiB' as a byte size (use e.g. '16 GiB' or '512 MB')");
  EXPECT_EQ(format_error_of([] { parse_bytes("18446744073709551615", "p.yaml", "m"); }),
            "p.yaml: m: '18446744073709551615' is out of physical bounds: a byte size must be 0 "
            "or between 1 B and 1 EiB");
  // Fractions of larger units round to a byte, as format_bytes writes them.
  EXPECT_EQ(parse_bytes("10.5 GiB"), 11274289152ull);
  EXPECT_EQ(parse_bytes(format_bytes(1234567)), 1234567u);
  EXPECT_EQ(parse_bytes("1024 PiB"), 1ull << 60);
}

TEST(Units, FormattersAreReadable) {
  EXPECT_EQ(format_bytes(16ull << 30), "16 GiB");
  EXPECT_EQ(format_bytes(80000000000ull), "80 GB");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(123), "123 B");
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(12345678901ull), "12345678901 B");
  EXPECT_EQ(format_bandwidth(300e9), "300 GB/s");
  EXPECT_EQ(format_bandwidth(25e9 / 8), "3.125 GB/s");
  EXPECT_EQ(format_bandwidth(0), "0 B/s");
  EXPECT_EQ(format_time(5e-6), "5 us");
  EXPECT_EQ(format_time(1.5e-3), "1.5 ms");
  EXPECT_EQ(format_time(2), "2 s");
  EXPECT_EQ(format_time(20e-9), "20 ns");
  EXPECT_EQ(format_time(0), "0 s");
  EXPECT_EQ(format_flops(15.7e12), "15.7 TFLOPS");
  EXPECT_EQ(format_flops(900e9), "900 GFLOPS");
}

TEST(Units, FormatParseRoundTripIsExact) {
  std::mt19937_64 rng(42);
  // Within the physical bounds: times up to 1e9 s, rates 1 .. 1e14, bytes up to 2^60.
  std::uniform_real_distribution<double> mant(1.0, 10.0);
  std::uniform_int_distribution<int> expo(-12, 8);
  std::uniform_int_distribution<int> rate_expo(0, 13);
  for (int i = 0; i < 20000; ++i) {
    const double v = mant(rng) * std::pow(10.0, expo(rng));
    EXPECT_EQ(parse_time(format_time(v)), v) << format_time(v);
    const double r = mant(rng) * std::pow(10.0, rate_expo(rng));
    EXPECT_EQ(parse_bandwidth(format_bandwidth(r)), r) << format_bandwidth(r);
    EXPECT_EQ(parse_flops(format_flops(r)), r) << format_flops(r);
    const uint64_t b = (rng() >> 4) >> (rng() % 60);
    EXPECT_EQ(parse_bytes(format_bytes(b)), b) << format_bytes(b);
  }
  // Values that are not short in any unit still round trip.
  const double third = 1.0 / 3.0;
  EXPECT_EQ(parse_time(format_time(third * 1e-3)), third * 1e-3);
  EXPECT_EQ(parse_bandwidth(format_bandwidth(third * 1e10)), third * 1e10);
}

TEST(Units, SharedUnit) {
  double v = 0;
  ASSERT_TRUE(unit_value("GB/s", QuantityKind::kBandwidth, &v));
  EXPECT_EQ(v, 1e9);
  EXPECT_EQ(apply_unit(3.125, "GB/s", QuantityKind::kBandwidth), 3.125e9);
  EXPECT_EQ(apply_unit(5, "us", QuantityKind::kTime), 5e-6);
  EXPECT_FALSE(unit_value("GB", QuantityKind::kBandwidth, &v));
  EXPECT_THROW(apply_unit(1, "parsec", QuantityKind::kTime), FormatError);
}

}  // namespace
}  // namespace placer
