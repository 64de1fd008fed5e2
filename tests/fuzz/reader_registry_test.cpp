// The readers of user input are enumerated next to them, in one list per layer
// (src/readers.txt, simulator/, datasets/, env/, agents/): every function a header declares
// as parse_* / import_* / load_* / read_*(const std::string& ...) is listed there with its
// kind, and every `reader` of those lists is in the fuzz registry (tests/fuzz/reader_registry.h).
// A reader that lands without a list entry, or listed without a registry entry, fails here.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/fuzz/reader_registry.h"

namespace placer {
namespace {

const std::vector<std::string> kLayers = {"src", "simulator", "datasets", "env", "agents"};

/// One line of a readers.txt: NAME KIND [-> NAME ...].
struct ListedFunction {
  std::string layer, kind;
  std::vector<std::string> hands_to;  ///< a `file` entry's readers
};

std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Every list, by function name; a name listed twice is an error.
std::map<std::string, ListedFunction> listed_functions() {
  std::map<std::string, ListedFunction> out;
  for (const std::string& layer : kLayers) {
    std::istringstream in(file_text(fuzz::source_path(layer + "/readers.txt")));
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream words(line);
      std::string name, arrow, target;
      ListedFunction f{layer, "", {}};
      words >> name >> f.kind >> arrow;
      while (words >> target) f.hands_to.push_back(target);
      EXPECT_TRUE(arrow.empty() || arrow == "->") << layer << "/readers.txt: " << line;
      EXPECT_FALSE(out.count(name)) << name << " is listed twice";
      out[name] = f;
    }
  }
  return out;
}

/// Names declared as `parse_x(const std::string& ...` (also import_ / load_ / read_) in the
/// headers under `layer`.
std::set<std::string> declared_functions(const std::string& layer) {
  static const std::regex decl(R"(\b((?:parse|import|load|read)_\w+)\(const std::string&)");
  std::set<std::string> names;
  for (const auto& e : std::filesystem::recursive_directory_iterator(fuzz::source_path(layer))) {
    if (e.path().extension() != ".h") continue;
    const std::string text = file_text(e.path());
    for (std::sregex_iterator it(text.begin(), text.end(), decl), end; it != end; ++it)
      names.insert((*it)[1]);
  }
  return names;
}

std::set<std::string> registered_entry_points() {
  std::set<std::string> out;
  for (const fuzz::RegisteredReader& r : fuzz::registered_readers())
    out.insert(r.entry_points.begin(), r.entry_points.end());
  return out;
}

TEST(ReaderRegistry, EveryDeclaredReaderIsListedNextToIt) {
  const std::map<std::string, ListedFunction> listed = listed_functions();
  for (const std::string& layer : kLayers) {
    const std::set<std::string> declared = declared_functions(layer);
    for (const std::string& n : declared) {
      const auto it = listed.find(n);
      EXPECT_TRUE(it != listed.end() && it->second.layer == layer)
          << n << " (declared under " << layer << "/) is not in " << layer
          << "/readers.txt: list it with its kind (a reader must also be registered in "
             "tests/fuzz/reader_registry.h)";
    }
    for (const auto& [name, f] : listed) {
      if (f.layer != layer) continue;
      EXPECT_TRUE(declared.count(name))
          << name << ": listed in " << layer << "/readers.txt but declared nowhere there";
    }
  }
  // The scan finds what it should (a broken pattern would pass vacuously).
  EXPECT_TRUE(declared_functions("src").count("parse_deepspeed_config"));
  EXPECT_TRUE(declared_functions("agents").count("parse_train_config"));
  EXPECT_TRUE(declared_functions("datasets").count("load_hf_config"));
}

TEST(ReaderRegistry, EveryListedReaderIsRegisteredAndNothingElse) {
  const std::map<std::string, ListedFunction> listed = listed_functions();
  const std::set<std::string> registered = registered_entry_points();
  const std::set<std::string> kinds = {"reader", "file", "value", "torch"};
  for (const auto& [name, f] : listed) {
    EXPECT_TRUE(kinds.count(f.kind)) << name << ": unknown kind '" << f.kind << "'";
    if (f.kind == "reader") {
      EXPECT_TRUE(registered.count(name))
          << name
          << " reads user input but is not in tests/fuzz/reader_registry.h (register it "
             "with seed inputs)";
    }
    EXPECT_EQ(f.kind == "file", !f.hands_to.empty()) << name << ": a file entry names its readers";
    for (const std::string& target : f.hands_to) {
      const auto it = listed.find(target);
      EXPECT_TRUE(it != listed.end() && it->second.kind == "reader")
          << name << " -> " << target << ": not a listed reader";
    }
  }
  for (const std::string& n : registered) {
    const auto it = listed.find(n);
    EXPECT_TRUE(it != listed.end() && it->second.kind == "reader")
        << n << " is registered but listed as no reader";
  }
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
