#pragma once
// Human-readable numbers for reports on stdout ("12.3 ms", "1.50 GiB", "3.2 TFLOP").

#include <cstdint>
#include <string>

namespace placer {

std::string human_time(double seconds);       ///< "850 ns", "12.3 us", "4.56 ms", "1.23 s"
std::string human_bytes(double bytes);        ///< "512 B", "1.50 KiB", "2.00 GiB"
std::string human_count(double n, const char* unit);  ///< "3.20 G" + unit, "12.0 M" + unit
std::string fixed(double v, int decimals);    ///< printf("%.*f")
std::string pad_right(const std::string& s, size_t width);
std::string pad_left(const std::string& s, size_t width);

/// A value read from user input, as error messages show it: in quotes, cut after 40
/// characters so that no message echoes a whole (possibly huge) value: "'abc'",
/// "'aaaa...' (5000 characters)". Every reader's messages quote values with it.
std::string quote_short(const std::string& text);

}  // namespace placer
