// Every reader entry point declared in the torch-free layers (src/, simulator/, datasets/)
// is in the fuzz registry (tests/fuzz/reader_registry.h) or named below as a helper that
// the registered readers call. A new reader that lands without a registry entry fails here.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/fuzz/reader_registry.h"

namespace placer {
namespace {

/// Functions that read text but are no file or argument reader of their own: the value
/// parsers and tree parsers every registered reader calls (each has its own unit tests),
/// and the command line of placer-calibrate.
const std::set<std::string> kHelpers = {
    "parse_bool_text", "parse_quantity",  "parse_bytes",        "parse_bandwidth",
    "parse_time",      "parse_flops",     "parse_double",       "parse_measurement",
    "parse_json_text", "parse_yaml_text", "parse_json_as_yaml", "parse_size",
};

/// Names declared as `parse_x(const std::string& text...` / `import_x(const std::string& bytes...`
/// in the headers under `folder`.
std::set<std::string> declared_readers(const std::string& folder) {
  static const std::regex decl(
      R"(\b((?:parse|import)_\w+)\(const std::string& *\w*(?:text|json|yaml|args|bytes|data|csv)\w*)");
  std::set<std::string> names;
  for (const auto& e : std::filesystem::recursive_directory_iterator(fuzz::source_path(folder))) {
    if (e.path().extension() != ".h") continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    for (std::sregex_iterator it(text.begin(), text.end(), decl), end; it != end; ++it)
      names.insert((*it)[1]);
  }
  return names;
}

TEST(ReaderRegistry, EveryDeclaredReaderIsRegistered) {
  std::set<std::string> registered;
  for (const fuzz::RegisteredReader& r : fuzz::registered_readers()) {
    registered.insert(r.entry_points.begin(), r.entry_points.end());
  }
  std::set<std::string> declared;
  for (const char* folder : {"src", "simulator", "datasets"}) {
    for (const std::string& n : declared_readers(folder)) declared.insert(n);
  }
  // The scan finds the readers it should (a broken pattern would pass vacuously).
  for (const char* known : {"parse_graph_json", "parse_deepspeed_config", "parse_nccl_tests_log",
                            "import_onnx_bytes"}) {
    EXPECT_TRUE(declared.count(known)) << known;
  }
  for (const std::string& n : declared) {
    EXPECT_TRUE(registered.count(n) || kHelpers.count(n))
        << n
        << " reads user input but is not in tests/fuzz/reader_registry.h (register it with seed "
           "inputs)";
  }
  // And nothing registered is stale.
  for (const std::string& n : registered)
    EXPECT_TRUE(declared.count(n)) << n << " is registered but declared nowhere";
}

TEST(ReaderRegistry, EveryReaderHasSeedsAndCases) {
  for (const fuzz::RegisteredReader& r : fuzz::registered_readers()) {
    EXPECT_FALSE(r.seeds.empty()) << r.name;
    EXPECT_GE(r.cases, 1000) << r.name;
    for (const fuzz::Seed& s : r.seeds) EXPECT_FALSE(s.text.empty()) << r.name << ": " << s.name;
  }
}

}  // namespace
}  // namespace placer
