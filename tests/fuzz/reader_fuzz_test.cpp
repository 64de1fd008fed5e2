// A seeded, time-boxed mutation fuzz of the file readers: the shipped cluster,
// profile, plan and graph files and two ONNX fixtures (a fixed 3000 cases each) are mutated (byte flips, numbers replaced by NaN / 1e308 /
// -1 / huge integers, lines deleted) and read in-process with their validation. Any
// exception other than placer's own errors fails, and so does the reader's last-resort
// "unexpected YAML structure" (a node shape no check named) and a read slower than 5 s.

#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <fstream>
#include <functional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/onnx_import.h"
#include "simulator/cost_profile.h"
#include "src/io/cluster_yaml.h"
#include "src/io/graph_json.h"
#include "src/io/plan_io.h"
#include "src/util/error.h"

namespace placer {
namespace {

const std::string kSource = PLACER_SOURCE_DIR;
const std::string kData = PLACER_TEST_DATA_DIR;
constexpr double kSecondsPerFormat = 6;  // four formats: ~25 s of CI
constexpr double kMaxSecondsPerRead = 5;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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

/// Mutates `seed_text` repeatedly (a few mutations per case) for `seconds` and runs `read` on
/// each; returns the number of cases.
int fuzz(const std::string& name, const std::string& seed_text,
         const std::function<void(const std::string&)>& read, uint64_t seed,
         double seconds = kSecondsPerFormat, int max_cases = INT_MAX) {
  std::mt19937_64 rng(seed);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  int cases = 0;
  while (elapsed(start) < seconds && cases < max_cases) {
    std::string text = seed_text;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) text = mutate(text, rng);
    ++cases;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      read(text);
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.find("unexpected YAML structure"), std::string::npos)
          << name << " case " << cases << ": no field named: " << msg << "\n--- input:\n" << text;
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << " case " << cases << ": " << e.what() << "\n--- input:\n" << text;
    }
    EXPECT_LT(elapsed(t0), kMaxSecondsPerRead) << name << " case " << cases << " hangs:\n" << text;
    if (::testing::Test::HasFailure()) break;  // one reproducer is enough
  }
  return cases;
}

TEST(ReaderFuzz, Clusters) {
  int cases = 0;
  for (const char* f : {"dgx1_p100", "h100_ib_4node", "automap_config_c"}) {
    const std::string path = kSource + "/datasets/clusters/" + f + ".cluster.yaml";
    cases += fuzz(path, read_text(path), [&](const std::string& t) { parse_cluster_yaml(t, path); },
                  /*seed=*/17, kSecondsPerFormat / 3);
  }
  EXPECT_GT(cases, 100);
}

TEST(ReaderFuzz, Profiles) {
  const std::string path = kSource + "/datasets/clusters/dgx_a100.profile.yaml";
  EXPECT_GT(fuzz(path, read_text(path), [&](const std::string& t) { parse_cost_profile(t, path); },
                 /*seed=*/18),
            100);
}

TEST(ReaderFuzz, Graphs) {
  const std::string path = kData + "/mlp2.graph.json";
  EXPECT_GT(fuzz(path, read_text(path), [&](const std::string& t) { parse_graph_json(t, path); },
                 /*seed=*/19),
            100);
}

TEST(ReaderFuzz, Plans) {
  const Graph g = load_graph_json(kData + "/mlp2.graph.json");
  const Cluster c = load_cluster_yaml(kData + "/two_gpus.cluster.yaml");
  int cases = 0;
  for (const char* f : {"mlp2_pipeline", "mlp2_two_gpus"}) {
    const std::string path = kData + "/" + f + ".plan.yaml";
    std::vector<std::string> warnings;
    cases += fuzz(path, read_text(path),
                  [&](const std::string& t) {
                    warnings.clear();
                    parse_plan_yaml(t, path, g, c, &warnings);
                  },
                  /*seed=*/20, kSecondsPerFormat / 2);
  }
  EXPECT_GT(cases, 100);
}

// ONNX models go through protobuf parsing, libonnx's shape inference and version converter
// (the opset-6 fixture is upgraded to 7): a fixed number of cases, not a time box, so that
// CI runs exactly the cases that were run here (a crash inside libonnx would abort the
// test binary rather than fail one case).
TEST(ReaderFuzz, OnnxModels) {
  for (const char* f : {"opset6_conv_net", "pass_through"}) {
    const std::string path = kData + "/onnx/" + f + ".onnx";
    ImportOptions options;
    options.batch_size = 2;
    EXPECT_EQ(fuzz(path, read_text(path),
                   [&](const std::string& t) { import_onnx_bytes(t, path, options); },
                   /*seed=*/21, /*seconds=*/60, /*max_cases=*/3000),
              3000);
  }
}

}  // namespace
}  // namespace placer
