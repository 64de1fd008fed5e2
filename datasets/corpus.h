#pragma once
// Graph corpora for training and evaluating placement policies: a `*.corpus.yaml` manifest
// (docs/corpus.md) lists graphs, each either a `*.graph.json` file (relative to the
// manifest) or a `generate:` spec (family, seed, parameter overrides; regenerated
// deterministically on load, so a corpus of synthetic graphs needs no big files), with tags
// (the first is the family) and a fixed train / val / test split.
//
// Splits are drawn once, by a seeded hash of the entry name (assign_split), and then
// recorded per entry: a manifest never changes an entry's split silently, even when ratios
// or other entries change. Entries may also record the graph's op count and fingerprint;
// load_graph checks them, so a change in a family generator or a graph file is an error
// rather than a silently different corpus.
//
//   Corpus c = load_corpus("datasets/corpora/default.corpus.yaml");
//   for (size_t i : c.indices(Split::kTrain)) { Graph g = c.load_graph(i); ... }

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "datasets/family_registry.h"
#include "src/graph/graph.h"

namespace placer {

inline constexpr int kCorpusFormatMajor = 1;
inline constexpr int kCorpusFormatMinor = 0;

enum class Split : uint8_t { kTrain, kVal, kTest };
const char* to_string(Split s);  ///< "train", "val", "test"
bool parse_split(const std::string& s, Split* out);

/// How splits of new entries are drawn.
struct SplitRatios {
  double train = 0.8, val = 0.1, test = 0.1;  ///< sum to 1
  uint64_t seed = 0;
  bool operator==(const SplitRatios& o) const {
    return train == o.train && val == o.val && test == o.test && seed == o.seed;
  }
};

/// The split of an entry called `name`: u = hash(seed, name) in [0, 1); train if
/// u < train, val if u < train + val, else test. Portable (FNV-1a + SplitMix64).
Split assign_split(const std::string& name, const SplitRatios& ratios);

/// A generated entry: family, seed and range overrides (see family_registry.h).
struct GenerateSpec {
  std::string family;
  uint64_t seed = 0;
  FamilyRanges ranges;
  bool operator==(const GenerateSpec& o) const {
    return family == o.family && seed == o.seed && ranges == o.ranges;
  }
};

struct CorpusEntry {
  std::string name;       ///< unique within the corpus; the graph's name when generated
  std::string file;       ///< graph file, relative to the manifest (or absolute); "" when generated
  GenerateSpec generate;  ///< used when `file` is empty
  Split split = Split::kTrain;
  std::vector<std::string> tags;  ///< tags[0] is the family ("gnmt", "real", ...)
  int64_t ops = -1;               ///< expected op count; -1 = not recorded
  std::string fingerprint;        ///< expected graph_fingerprint (16 hex digits); "" = not recorded

  bool is_generated() const { return file.empty(); }
  /// tags[0], or the generated family, or "" when neither is there.
  std::string family() const;
  bool has_tag(const std::string& tag) const;
  bool operator==(const CorpusEntry& o) const {
    return name == o.name && file == o.file && generate == o.generate && split == o.split &&
           tags == o.tags && ops == o.ops && fingerprint == o.fingerprint;
  }
};

class Corpus {
 public:
  std::string name;
  std::string description;
  SplitRatios split;
  std::vector<CorpusEntry> entries;
  /// The manifest's path: relative `file:` entries are resolved against its folder. Set by
  /// load_corpus; set it before adding file entries to a new corpus.
  std::string manifest_path;

  size_t size() const { return entries.size(); }
  /// Folder of manifest_path ("" = the current directory).
  std::string base_dir() const;
  /// Path of a file entry as seen from the current directory.
  std::string resolve(const CorpusEntry& e) const;
  /// Loads (file) or regenerates (generate) entry i and checks its recorded op count and
  /// fingerprint. Errors name the manifest and the entry.
  Graph load_graph(size_t i) const;

  /// Entry indices of one split, in manifest order.
  std::vector<size_t> indices(Split s) const;
  std::vector<size_t> train() const { return indices(Split::kTrain); }
  std::vector<size_t> val() const { return indices(Split::kVal); }
  std::vector<size_t> test() const { return indices(Split::kTest); }
  /// Entry indices carrying `tag`.
  std::vector<size_t> with_tag(const std::string& tag) const;
  /// Index of the entry called `name`; -1 when absent.
  int64_t find(const std::string& name) const;
  /// Appends an entry; ValidationError when its name is taken.
  void add(CorpusEntry e);
};

/// Reads a manifest. FileError (cannot open), FormatError naming the file and field
/// (unknown key, wrong format_version, bad split, unknown family or parameter, missing
/// `file` / `generate`), ValidationError (duplicate name, missing graph file, split ratios
/// that do not sum to 1).
Corpus load_corpus(const std::string& path);
/// Parses manifest text; `path` names it in errors and anchors relative files.
Corpus parse_corpus_yaml(const std::string& text, const std::string& path);
/// Writes a manifest at `path`: file entries are rewritten relative to the new folder.
/// Sets nothing in `corpus`.
void save_corpus(const Corpus& corpus, const std::string& path);
/// The manifest text with file entries exactly as stored.
std::string corpus_to_yaml(const Corpus& corpus);

/// 64-bit FNV-1a / SplitMix64 hash of everything a placer sees in a graph: name, batch,
/// ops (name, type, category, phase, dtype, scope, layer, FLOPs, bytes, parameters,
/// inputs, outputs) and tensors (name, dtype, shape, bytes, batch scaling).
uint64_t graph_fingerprint(const Graph& g);
/// 16 lower-case hex digits.
std::string fingerprint_hex(uint64_t f);

/// What `placer corpus generate` does.
struct CorpusGenerateOptions {
  std::vector<std::string> families;  ///< round robin over these; "all" = every family
  int count = 10;                     ///< graphs in total
  uint64_t seed = 1;                  ///< derives each entry's seed
  FamilySize size = FamilySize::kDefault;
  /// Parameter overrides for every entry (each family must have the parameter).
  std::map<std::string, ParamRange> overrides;
  bool write_files = true;            ///< false: generate: entries only (--manifest-only)
  std::string graphs_dir = "graphs";  ///< where graph files go, relative to the manifest
  bool record_checks = true;          ///< record ops and fingerprint on each entry
  /// Called after each graph with (done, total, graph); may be empty.
  std::function<void(size_t, size_t, const Graph&)> progress;
};

/// Appends options.count generated entries to `corpus` (manifest_path must be set when
/// writing files). Names "<family>_<NNN>" ("<family>_large_<NNN>" for the large preset),
/// numbered after the entries already there; tags [family] (+ "large"); the split drawn
/// with corpus->split; each seed is a hash of (seed, name prefix, k) below 10^9.
void generate_corpus_entries(Corpus* corpus, const CorpusGenerateOptions& options);

}  // namespace placer
