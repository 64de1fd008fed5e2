// A seeded mutation fuzz of every registered reader (tests/fuzz/reader_registry.h): each
// reader's seed inputs are mutated (byte flips, numbers replaced by NaN / 1e308 / -1 / huge
// integers, lines deleted or repeated) a fixed number of times and read in-process with their
// validation. Any exception other than placer's own errors fails, and so does the YAML
// readers' last-resort "unexpected YAML structure" (a node shape no check named) and a read
// slower than 5 s. Built with -DPLACER_SANITIZE=ON (CMakeLists.txt), the same cases run under
// AddressSanitizer and UndefinedBehaviorSanitizer (signed overflow aborts).

#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <functional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "src/util/error.h"
#include "tests/fuzz/reader_registry.h"

namespace placer {
namespace {

constexpr double kMaxSecondsPerRead = 5;

/// One random mutation of `text`.
std::string mutate(const std::string& text, std::mt19937_64& rng) {
  std::string s = text;
  if (s.empty()) return s;
  static const std::vector<std::string> kNumbers = {
      "NaN", ".nan", "inf", "-1", "1e308", "9.2e18", "0", "0.5", "99999999999999999999",
      "1e-300", "2147483648", "[]", "{}", "~", "\"\""};
  std::uniform_int_distribution<size_t> pos(0, s.size() - 1);
  switch (rng() % 4) {
    case 0: {  // flip a byte
      s[pos(rng)] = static_cast<char>(rng() % 256);
      break;
    }
    case 1: {  // replace the number at or after a random position
      static const std::regex number("[-+]?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?");
      std::smatch m;
      const size_t at = pos(rng);
      const std::string tail = s.substr(at);
      if (std::regex_search(tail, m, number)) {
        s.replace(at + static_cast<size_t>(m.position(0)), static_cast<size_t>(m.length(0)),
                  kNumbers[rng() % kNumbers.size()]);
      }
      break;
    }
    case 2: {  // delete a line (a key, a list entry)
      const size_t b = s.rfind('\n', pos(rng));
      const size_t start = b == std::string::npos ? 0 : b + 1;
      const size_t e = s.find('\n', start);
      s.erase(start, e == std::string::npos ? std::string::npos : e - start + 1);
      break;
    }
    default: {  // duplicate a line (repeated keys, extra entries)
      const size_t b = s.rfind('\n', pos(rng));
      const size_t start = b == std::string::npos ? 0 : b + 1;
      const size_t e = s.find('\n', start);
      const std::string line = s.substr(start, e == std::string::npos ? std::string::npos : e - start + 1);
      s.insert(start, line);
      break;
    }
  }
  return s;
}

/// Mutates `seed` (a few mutations per case) `cases` times and reads each; stops at the first
/// failure (one reproducer is enough). Returns the cases run.
int run_cases(const std::string& name, const fuzz::Seed& seed,
              const std::function<void(const std::string&, const std::string&)>& read,
              uint64_t rng_seed, int cases) {
  std::mt19937_64 rng(rng_seed);
  auto elapsed = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  int run = 0;
  while (run < cases) {
    std::string text = seed.text;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) text = mutate(text, rng);
    ++run;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      read(text, seed.name);
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.find("unexpected YAML structure"), std::string::npos)
          << name << " case " << run << ": no field named: " << msg << "\n--- input:\n"
          << text;
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << " case " << run << ": " << e.what() << "\n--- input:\n" << text;
    }
    EXPECT_LT(elapsed(t0), kMaxSecondsPerRead) << name << " case " << run << " hangs:\n" << text;
    if (::testing::Test::HasFailure()) break;
  }
  return run;
}

class EveryReader : public ::testing::TestWithParam<size_t> {};

// Each reader's cases are split over its seeds; the generator's seed depends on the reader's
// position only, so a run is reproducible.
TEST_P(EveryReader, RefusesMutatedInputWithItsOwnErrors) {
  const fuzz::RegisteredReader& r = fuzz::registered_readers()[GetParam()];
  ASSERT_FALSE(r.seeds.empty()) << r.name;
  const int per_seed = r.cases / static_cast<int>(r.seeds.size());
  int cases = 0;
  for (size_t k = 0; k < r.seeds.size(); ++k) {
    ASSERT_FALSE(r.seeds[k].text.empty()) << r.name << ": empty seed " << r.seeds[k].name;
    cases += run_cases(r.name + " (" + r.seeds[k].name + ")", r.seeds[k], r.read,
                       17 + 100 * GetParam() + k, per_seed);
  }
  EXPECT_EQ(cases, per_seed * static_cast<int>(r.seeds.size())) << r.name;
}

std::string reader_test_name(const ::testing::TestParamInfo<size_t>& info) {
  std::string s;
  for (char ch : fuzz::registered_readers()[info.param].name)
    s += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryReader,
                         ::testing::Range<size_t>(0, fuzz::registered_readers().size()),
                         reader_test_name);

}  // namespace
}  // namespace placer
