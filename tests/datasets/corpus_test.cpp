#include "datasets/corpus.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "datasets/synthetic.h"
#include "src/io/graph_json.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"

namespace placer {
namespace {

namespace fs = std::filesystem;

// A fresh temporary folder per test, removed afterwards.
class CorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("placer_corpus_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "models");
    MlpOptions o;
    o.layers = 2;
    save_graph_json(make_mlp(o), (dir_ / "models" / "mlp.graph.json").string());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& rel) const { return (dir_ / rel).string(); }
  std::string write(const std::string& rel, const std::string& text) const {
    write_text_file(path(rel), text);
    return path(rel);
  }
  // The message of the Error that load_corpus throws for `text` ("" if none).
  std::string load_error(const std::string& text) const {
    const std::string p = write("bad.corpus.yaml", text);
    try {
      load_corpus(p);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

const char* kHeader = "format_version: \"1.0\"\nname: t\nentries:\n";

TEST_F(CorpusTest, RoundTripKeepsEverything) {
  Corpus c;
  c.name = "round trip";
  c.description = "all entry kinds";
  c.split = {0.7, 0.2, 0.1, 42};
  c.manifest_path = path("a/first.corpus.yaml");
  CorpusEntry file;
  file.name = "mlp";
  file.file = "../models/mlp.graph.json";
  file.split = Split::kTest;
  file.tags = {"real", "mlp"};
  file.ops = 4;
  c.add(file);
  CorpusEntry gen;
  gen.name = "gnmt_a";
  gen.generate.family = "gnmt";
  gen.generate.seed = 123456789;
  gen.generate.ranges.size = FamilySize::kLarge;
  gen.generate.ranges.overrides["layers"] = ParamRange::fixed(8);                   // scalar
  gen.generate.ranges.overrides["hidden"] = ParamRange::log_uniform(512, 640, 64);  // [lo, hi]
  gen.generate.ranges.overrides["batch"] = ParamRange::choice({16, 32});            // one_of
  gen.generate.ranges.overrides["vocab"] = ParamRange::uniform(8000, 9000, 500);    // full map
  gen.split = Split::kVal;
  gen.tags = {"gnmt", "large"};
  c.add(gen);
  CorpusEntry plain;
  plain.name = "wavenet_0";
  plain.generate.family = "wavenet";
  plain.generate.seed = 7;
  plain.tags = {"wavenet"};
  const Graph g = make_family_graph("wavenet", 7, {}, "wavenet_0");
  plain.ops = static_cast<int64_t>(g.num_ops());
  plain.fingerprint = fingerprint_hex(graph_fingerprint(g));
  c.add(plain);
  fs::create_directories(dir_ / "a");
  save_corpus(c, c.manifest_path);

  const Corpus back = load_corpus(c.manifest_path);
  EXPECT_EQ(back.name, c.name);
  EXPECT_EQ(back.description, c.description);
  EXPECT_EQ(back.split, c.split);
  ASSERT_EQ(back.entries.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(back.entries[i], c.entries[i]) << i;
  EXPECT_EQ(back.load_graph(0).num_ops(), 4u);
  EXPECT_EQ(back.load_graph(2).num_ops(), g.num_ops());
  EXPECT_EQ(back.entries[1].family(), "gnmt");
  EXPECT_EQ(back.with_tag("large"), (std::vector<size_t>{1}));
  EXPECT_EQ(back.test(), (std::vector<size_t>{0}));
  EXPECT_EQ(back.val(), (std::vector<size_t>{1}));
  EXPECT_EQ(back.train(), (std::vector<size_t>{2}));
  EXPECT_EQ(back.find("wavenet_0"), 2);
  EXPECT_EQ(back.find("nope"), -1);
  EXPECT_THROW(c.add(plain), ValidationError);

  // Saved elsewhere, the file entry is rewritten relative to the new folder.
  fs::create_directories(dir_ / "b" / "c");
  save_corpus(back, path("b/c/moved.corpus.yaml"));
  const Corpus moved = load_corpus(path("b/c/moved.corpus.yaml"));
  EXPECT_EQ(moved.entries[0].file, "../../models/mlp.graph.json");
  EXPECT_EQ(moved.load_graph(0).num_ops(), 4u);
  EXPECT_EQ(moved.entries[1], c.entries[1]);
  // The text is stable: saving what was loaded gives the same file.
  save_corpus(back, path("a/second.corpus.yaml"));
  EXPECT_EQ(read_text_file(path("a/second.corpus.yaml"), "x"),
            read_text_file(c.manifest_path, "x"));
}

TEST_F(CorpusTest, SplitsAreHashedOnceAndStayRecorded) {
  // The hash split follows the ratios over many names.
  std::map<Split, int> n;
  SplitRatios r;
  for (int i = 0; i < 10000; ++i) ++n[assign_split("g" + std::to_string(i), r)];
  EXPECT_NEAR(n[Split::kTrain], 8000, 150);
  EXPECT_NEAR(n[Split::kVal], 1000, 100);
  EXPECT_NEAR(n[Split::kTest], 1000, 100);
  EXPECT_EQ(assign_split("gnmt_007", r), assign_split("gnmt_007", r));
  SplitRatios all_train{1, 0, 0, 0};
  EXPECT_EQ(assign_split("x", all_train), Split::kTrain);

  Corpus c;
  c.name = "s";
  c.manifest_path = path("s.corpus.yaml");
  CorpusGenerateOptions o;
  o.families = {"wavenet", "transformer_xl"};
  o.count = 30;
  o.seed = 5;
  o.write_files = false;
  generate_corpus_entries(&c, o);
  save_corpus(c, c.manifest_path);
  // Appending with other ratios: new entries use them, old entries keep their split.
  Corpus d = load_corpus(c.manifest_path);
  d.split = {0, 0, 1, 0};
  generate_corpus_entries(&d, o);
  ASSERT_EQ(d.size(), 60u);
  for (size_t i = 0; i < 30; ++i) {
    EXPECT_EQ(d.entries[i], c.entries[i]);
    EXPECT_EQ(c.entries[i].split, assign_split(c.entries[i].name, c.split));
  }
  for (size_t i = 30; i < 60; ++i) EXPECT_EQ(d.entries[i].split, Split::kTest);
  EXPECT_EQ(d.entries[29].name, "transformer_xl_014");
  EXPECT_EQ(d.entries[30].name, "wavenet_015");  // numbering continues
  EXPECT_NE(d.entries[30].generate.seed, d.entries[0].generate.seed);
  // A recorded split is read as written, even if the hash would say otherwise.
  std::string text = read_text_file(c.manifest_path, "x");
  const Split s0 = c.entries[0].split;
  const std::string other = s0 == Split::kTest ? "train" : "test";
  const std::string from = std::string("split: ") + to_string(s0);
  text.replace(text.find(from, text.find("wavenet_000")), from.size(), "split: " + other);
  EXPECT_EQ(to_string(parse_corpus_yaml(text, c.manifest_path).entries[0].split), other);
}

TEST_F(CorpusTest, GenerateWritesFilesThatLoad) {
  Corpus c;
  c.name = "files";
  c.manifest_path = path("out/files.corpus.yaml");
  CorpusGenerateOptions o;
  o.families = {"all"};
  o.count = 17;
  size_t calls = 0;
  o.progress = [&](size_t done, size_t total, const Graph&) {
    ++calls;
    EXPECT_EQ(total, 17u);
    EXPECT_EQ(done, calls);
  };
  generate_corpus_entries(&c, o);
  save_corpus(c, c.manifest_path);
  EXPECT_EQ(calls, 17u);
  const Corpus back = load_corpus(c.manifest_path);
  ASSERT_EQ(back.size(), 17u);
  EXPECT_EQ(back.entries[0].file, "graphs/enas_cnn_000.graph.json");
  EXPECT_EQ(back.entries[16].name, "enas_cnn_001");  // after one of each of the 16 families
  EXPECT_TRUE(fs::exists(path("out/graphs/layered_random_000.graph.json")));
  for (size_t i = 0; i < back.size(); ++i) {
    const Graph g = back.load_graph(i);
    EXPECT_EQ(static_cast<int64_t>(g.num_ops()), back.entries[i].ops);
    EXPECT_EQ(g.name(), back.entries[i].name);
  }
  // Same options, same graphs (file entries record the fingerprint of the generated graph).
  Corpus again;
  again.manifest_path = path("again/x.corpus.yaml");
  o.progress = nullptr;
  o.write_files = false;
  generate_corpus_entries(&again, o);
  for (size_t i = 0; i < 17; ++i)
    EXPECT_EQ(again.entries[i].fingerprint, back.entries[i].fingerprint);
  o.families = {"nope"};
  EXPECT_THROW(generate_corpus_entries(&again, o), Error);
}

TEST_F(CorpusTest, ChangedGraphsAreDetected) {
  const std::string p =
      write("c.corpus.yaml",
            std::string(kHeader) +
                "  - {name: w, generate: {family: wavenet, seed: 3}, split: train, ops: 12}\n"
                "  - {name: m, file: models/mlp.graph.json, split: val, fingerprint: "
                "\"0123456789abcdef\"}\n");
  const Corpus c = load_corpus(p);
  try {
    c.load_graph(0);
    FAIL();
  } catch (const ValidationError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("c.corpus.yaml: entries[0] (w): graph has "), std::string::npos) << m;
    EXPECT_NE(m.find("ops, the manifest records 12 (the family generator changed"),
              std::string::npos)
        << m;
  }
  try {
    c.load_graph(1);
    FAIL();
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("entries[1] (m): graph fingerprint "), std::string::npos)
        << e.what();
  }
}

TEST_F(CorpusTest, BadManifestsNameFileAndField) {
  struct Case {
    std::string text;
    std::vector<std::string> needles;
  };
  const std::string e0 = "  - {name: a, generate: {family: gnmt, seed: 1}, split: train}\n";
  const std::vector<Case> cases = {
      {"format_version: \"2.0\"\nname: t\nentries: []\n",
       {"bad.corpus.yaml", "unsupported format_version '2.0' (this build reads 1.x)"}},
      {"name: t\nentries: []\n", {"bad.corpus.yaml: format_version: missing"}},
      {std::string(kHeader) + "  - {name: a, generate: {family: gnmtt, seed: 1}, split: train}\n",
       {"bad.corpus.yaml: entries[0].generate.family: unknown family 'gnmtt' (known: enas_cnn"}},
      {std::string(kHeader) +
           "  - {name: a, generate: {family: gnmt, seed: 1, layer: 3}, split: train}\n",
       {"bad.corpus.yaml: entries[0].generate: unknown parameter 'layer' of family 'gnmt'"}},
      {std::string(kHeader) +
           "  - {name: a, generate: {family: gnmt, seed: 1, layers: [8, 2]}, split: train}\n",
       {"entries[0].generate.layers: lower bound 8 above upper bound 2"}},
      {std::string(kHeader) + "  - {name: a, generate: {family: gnmt}, split: train}\n",
       {"entries[0].generate: missing required key 'seed'"}},
      {std::string(kHeader) + "  - {name: a, file: models/missing.graph.json, split: train}\n",
       {"bad.corpus.yaml: entries[0].file: graph file 'models/missing.graph.json' not found"}},
      {std::string(kHeader) + "  - {name: a, split: train}\n",
       {"entries[0]: missing 'file' (a *.graph.json) or 'generate'"}},
      {std::string(kHeader) + "  - {name: a, file: models/mlp.graph.json, generate: {family: gnmt, "
                              "seed: 1}, split: train}\n",
       {"entries[0]: give either 'file' or 'generate', not both"}},
      {std::string(kHeader) + "  - {name: a, generate: {family: gnmt, seed: 1}, split: training}\n",
       {"entries[0].split: expected train, val or test, got 'training'"}},
      {std::string(kHeader) + "  - {name: a, generate: {family: gnmt, seed: 1}}\n",
       {"entries[0]: missing required key 'split'"}},
      {std::string(kHeader) + e0 + e0,
       {"entries[1].name: duplicate entry name 'a' (also entries[0])"}},
      {std::string(kHeader) +
           "  - {name: a, generate: {family: gnmt, seed: 1}, split: train, tag: [x]}\n",
       {"entries[0]: unknown key 'tag' (did you mean 'tags'?)"}},
      {std::string(kHeader) +
           "  - {name: a, generate: {family: gnmt, seed: 1}, split: train, fingerprint: xyz}\n",
       {"entries[0].fingerprint: expected 16 lower-case hex digits"}},
      {"format_version: \"1.0\"\nname: t\nsplit: {train: 0.8, val: 0.3, test: 0.1}\nentries: []\n",
       {"bad.corpus.yaml: split: train + val + test must be 1, got 1.2"}},
      {"format_version: \"1.0\"\nentries: []\n", {"bad.corpus.yaml: missing required key 'name'"}},
  };
  for (const Case& c : cases) {
    const std::string m = load_error(c.text);
    EXPECT_FALSE(m.empty()) << c.text;
    for (const std::string& s : c.needles) EXPECT_NE(m.find(s), std::string::npos) << m;
  }
  EXPECT_THROW(load_corpus(path("no/such.corpus.yaml")), FileError);
  // A newer minor version may carry keys this build does not know.
  EXPECT_EQ(load_error("format_version: \"1.3\"\nname: t\nfuture: 1\nentries: []\n"), "");
}

// The shipped default corpus: split counts are pinned, recorded splits are the hash splits,
// and every entry loads (generated ones are regenerated and checked against their recorded
// op count and fingerprint).
TEST(DefaultCorpus, CountsAndEveryEntryLoads) {
  const std::string p = std::string(PLACER_SOURCE_DIR) + "/datasets/corpora/default.corpus.yaml";
  const Corpus c = load_corpus(p);
  EXPECT_EQ(c.name, "default");
  // Synthetic entries per split (real models come on top, as datasets/models grows).
  size_t gen_split[3] = {0, 0, 0};
  for (const CorpusEntry& e : c.entries) gen_split[static_cast<int>(e.split)] += e.is_generated();
  EXPECT_EQ(gen_split[0], 253u);
  EXPECT_EQ(gen_split[1], 28u);
  EXPECT_EQ(gen_split[2], 30u);
  EXPECT_EQ(c.with_tag("large").size(), 11u);
  EXPECT_GE(c.with_tag("real").size(), 1u);
  EXPECT_GE(c.find("transformer_small"), 0);
  std::map<std::string, size_t> per_family;
  for (const CorpusEntry& e : c.entries) {
    ++per_family[e.family()];
    EXPECT_EQ(e.split, assign_split(e.name, c.split)) << e.name;
    EXPECT_EQ(e.is_generated(), !e.has_tag("real")) << e.name;
  }
  for (const std::string& f : family_names()) {  // 30 + 1 large (+ GNMT-8 over 256 steps)
    // Added after the shipped corpus was generated.
    if (f == "rec" || f == "resnet" || f == "vit" || f == "encdec" || f == "gnn" || f == "swin")
      continue;
    EXPECT_EQ(per_family[f], f == "gnmt" ? 32u : 31u) << f;
  }
  const auto t0 = std::chrono::steady_clock::now();
  size_t ops = 0, over_50k = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const Graph g = c.load_graph(i);
    ops += g.num_ops();
    over_50k += g.num_ops() >= 50000;
    if (!c.entries[i].has_tag("large") && c.entries[i].is_generated()) {
      EXPECT_LE(g.num_ops(), 8000u) << c.entries[i].name;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("default corpus: %zu graphs, %zu ops, loaded in %.2f s\n", c.size(), ops, secs);
  EXPECT_GE(over_50k, 1u);
}

// The shipped by-family corpus: each family in one split (swin among the test families),
// 12 graphs each, and every entry regenerates to its recorded op count and fingerprint.
TEST(ByFamilyCorpus, EveryFamilyInOneSplitAndEveryEntryLoads) {
  const Corpus c =
      load_corpus(std::string(PLACER_SOURCE_DIR) + "/datasets/corpora/by_family.corpus.yaml");
  std::map<std::string, std::set<std::string>> splits;
  std::map<std::string, size_t> count;
  for (size_t i = 0; i < c.size(); ++i) {
    const CorpusEntry& e = c.entries[i];
    splits[e.family()].insert(to_string(e.split));
    ++count[e.family()];
    EXPECT_NO_THROW(c.load_graph(i)) << e.name;
  }
  EXPECT_EQ(c.size(), 192u);
  EXPECT_EQ(splits.size(), 16u);
  for (const auto& [family, s] : splits) {
    EXPECT_EQ(s.size(), 1u) << family;
    EXPECT_EQ(count[family], 12u) << family;
  }
  EXPECT_EQ(*splits["swin"].begin(), "test");
  EXPECT_EQ(*splits["gnn"].begin(), "val");
  EXPECT_EQ(*splits["resnet"].begin(), "train");
}

}  // namespace
}  // namespace placer
