// `placer corpus`: generate graph corpora, add graph files to them, print their statistics.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "cli/command_options.h"
#include "cli/common.h"
#include "datasets/corpus.h"
#include "src/io/graph_json.h"
#include "src/io/units.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

SplitRatios parse_ratios(const std::string& s, uint64_t seed) {
  const std::vector<std::string> parts = split_list(s);
  double v[3] = {0, 0, 0};
  bool ok = parts.size() == 3;
  for (size_t i = 0; ok && i < 3; ++i) ok = parse_double(parts[i], &v[i]) && v[i] >= 0;
  if (!ok || std::abs(v[0] + v[1] + v[2] - 1) > 1e-9) {
    throw Error(
        "--split: expected three ratios TRAIN,VAL,TEST summing to 1 (e.g. 0.8,0.1,0.1), got '" + s +
        "'");
  }
  SplitRatios r;
  r.train = v[0];
  r.val = v[1];
  r.test = v[2];
  r.seed = seed;
  return r;
}

// Periodic progress lines on stderr: every 2 seconds and at the end.
class Progress {
 public:
  explicit Progress(std::string what) : what_(std::move(what)), t0_(Clock::now()), last_(t0_) {}
  void update(size_t done, size_t total) {
    const auto now = Clock::now();
    if (done != total && std::chrono::duration<double>(now - last_).count() < 2) return;
    last_ = now;
    const double s = seconds_since(t0_);
    std::cerr << "placer: " << what_ << " " << done << "/" << total << " graphs, " << fixed(s, 1)
              << " s";
    if (s > 0) std::cerr << " (" << fixed(double(done) / s, 1) << " graphs/s)";
    std::cerr << "\n";
  }
  double elapsed() const { return seconds_since(t0_); }

 private:
  std::string what_;
  Clock::time_point t0_, last_;
};

// ---- generate ------------------------------------------------------------------------

// "--set layers=8" (fixed) or "--set layers=2:8" (uniform range).
std::pair<std::string, ParamRange> parse_set(const std::string& kv) {
  const size_t eq = kv.find('=');
  const std::string key = kv.substr(0, eq == std::string::npos ? 0 : eq);
  const std::string val = eq == std::string::npos ? "" : kv.substr(eq + 1);
  const size_t colon = val.find(':');
  double lo = 0, hi = 0;
  const bool ok =
      !key.empty() && (colon == std::string::npos ? parse_double(val, &lo) && (hi = lo, true)
                                                  : parse_double(val.substr(0, colon), &lo) &&
                                                        parse_double(val.substr(colon + 1), &hi));
  if (!ok || lo != std::floor(lo) || hi != std::floor(hi)) {
    throw Error("--set: expected NAME=VALUE or NAME=LO:HI with integers, got '" + kv + "'");
  }
  return {key, ParamRange::uniform(int64_t(lo), int64_t(hi))};
}

struct GenerateArgs {
  std::string families, output, name, description, size = "default", split = "0.8,0.1,0.1";
  std::vector<std::string> set;
  int count = 0;
  uint64_t seed = 1;
  int64_t split_seed = -1;
  bool manifest_only = false, append = false, no_checks = false;
};

void run_generate(const GenerateArgs& a) {
  CorpusGenerateOptions o;
  o.families = split_list(a.families);
  if (o.families.empty()) throw Error("--family: give at least one family (or 'all')");
  o.count = a.count;
  o.seed = a.seed;
  o.write_files = !a.manifest_only;
  o.record_checks = !a.no_checks;
  if (!parse_family_size(a.size, &o.size)) {
    throw Error("--size: expected default or large, got '" + a.size + "'");
  }
  for (const std::string& kv : a.set) {
    auto [key, range] = parse_set(kv);
    o.overrides[key] = range;
  }
  std::string name = a.name;
  if (name.empty()) name = fs::path(a.output).lexically_normal().filename().string();
  if (name.empty() || name == "." || name == "..") name = "corpus";
  const std::string manifest = (fs::path(a.output) / (name + ".corpus.yaml")).string();
  // Check everything before creating anything.
  const SplitRatios ratios =
      parse_ratios(a.split, a.split_seed >= 0 ? uint64_t(a.split_seed) : a.seed);
  for (const std::string& f : o.families) {
    FamilyRanges r;
    r.overrides = o.overrides;
    if (f != "all") check_family_ranges(f, r);
  }
  Corpus c;
  if (a.append && fs::exists(manifest)) {
    c = load_corpus(manifest);
    std::cerr << "placer: appending to " << manifest << " (" << c.size() << " entries)\n";
  } else {
    c.name = name;
    c.description = a.description;
    c.split = ratios;
  }
  ensure_parent_dir(manifest);
  c.manifest_path = manifest;
  const size_t before = c.size();
  Progress progress("corpus generate:");
  double ops = 0;
  o.progress = [&](size_t done, size_t total, const Graph& g) {
    ops += double(g.num_ops());
    progress.update(done, total);
  };
  generate_corpus_entries(&c, o);
  save_corpus(c, manifest);
  size_t per_split[3] = {0, 0, 0};
  for (size_t i = before; i < c.size(); ++i) ++per_split[static_cast<int>(c.entries[i].split)];
  std::cout << manifest << ": " << c.size() - before << " graphs ("
            << (a.manifest_only ? "generate: entries" : "files under " + o.graphs_dir + "/") << ", "
            << human_count(ops, "ops") << ") in " << fixed(progress.elapsed(), 2)
            << " s; split train " << per_split[0] << ", val " << per_split[1] << ", test "
            << per_split[2] << "\n";
}

// ---- add -------------------------------------------------------------------------------

struct AddArgs {
  std::string corpus, tags;
  std::vector<std::string> files;
  bool record = false;
};

void run_add(const AddArgs& a) {
  Corpus c = load_corpus(a.corpus);
  const std::vector<std::string> tags = split_list(a.tags);
  for (const std::string& f : a.files) {
    CorpusEntry e;
    std::string base = fs::path(f).filename().string();
    if (ends_with(base, ".graph.json")) base = base.substr(0, base.size() - 11);
    e.name = base;
    const fs::path rel = fs::absolute(f).lexically_normal().lexically_relative(
        fs::absolute(c.base_dir().empty() ? "." : c.base_dir()).lexically_normal());
    e.file = rel.empty() ? fs::absolute(f).string() : rel.string();
    e.split = assign_split(e.name, c.split);
    e.tags = tags;
    const Graph g = load_graph_json(f);  // must load
    if (a.record) {
      e.ops = static_cast<int64_t>(g.num_ops());
      e.fingerprint = fingerprint_hex(graph_fingerprint(g));
    }
    std::cout << a.corpus << ": + " << e.name << " (" << e.file << ", " << g.num_ops() << " ops, "
              << to_string(e.split) << ")\n";
    c.add(std::move(e));
  }
  save_corpus(c, a.corpus);
}

// ---- stats -----------------------------------------------------------------------------

struct StatsArgs {
  std::string corpus, split, tag;
  int top = 10;
};

struct Dist {
  std::vector<double> v;
  void add(double x) { v.push_back(x); }
  std::string describe(const std::function<std::string(double)>& f) {
    if (v.empty()) return "-";
    std::sort(v.begin(), v.end());
    const double med = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    return f(v.front()) + " / " + f(med) + " / " + f(v.back());
  }
};

void run_stats(const StatsArgs& a) {
  const Corpus c = load_corpus(a.corpus);
  Split only = Split::kTrain;
  if (!a.split.empty() && !parse_split(a.split, &only)) {
    throw Error("--split: expected train, val or test, got '" + a.split + "'");
  }
  std::vector<size_t> sel;
  for (size_t i = 0; i < c.size(); ++i) {
    if (!a.split.empty() && c.entries[i].split != only) continue;
    if (!a.tag.empty() && !c.entries[i].has_tag(a.tag)) continue;
    sel.push_back(i);
  }
  struct FamilyStats {
    size_t n[3] = {0, 0, 0};
    Dist ops, flops, params;
  };
  std::map<std::string, FamilyStats> fam;
  FamilyStats all;
  std::map<std::string, size_t> types;
  size_t total_ops = 0;
  Progress progress("corpus stats:");
  for (size_t k = 0; k < sel.size(); ++k) {
    const CorpusEntry& e = c.entries[sel[k]];
    const Graph g = c.load_graph(sel[k]);
    const std::string f = e.family().empty() ? "(untagged)" : e.family();
    for (FamilyStats* s : {&fam[f], &all}) {
      ++s->n[static_cast<int>(e.split)];
      s->ops.add(double(g.num_ops()));
      s->flops.add(g.total_flops());
      s->params.add(double(g.total_param_bytes()));
    }
    for (const Op& o : g.ops()) ++types[o.type];
    total_ops += g.num_ops();
    progress.update(k + 1, sel.size());
  }

  std::ostream& out = std::cout;
  out << "corpus  " << c.name << " (" << a.corpus << "): " << sel.size() << " graphs";
  if (sel.size() != c.size()) out << " selected of " << c.size();
  out << ", " << fam.size() << " families, " << total_ops << " ops\n";
  out << "split   train " << all.n[0] << ", val " << all.n[1] << ", test " << all.n[2] << "\n\n";
  auto count = [](double x) {
    return x < 10000 ? std::to_string(int64_t(x)) : fixed(x / 1000, 1) + "k";
  };
  auto gflop = [](double x) { return human_count(x, "FLOP"); };
  auto bytes = [](double x) { return human_bytes(x); };
  size_t w = 8;
  for (const auto& [f, s] : fam) w = std::max(w, f.size() + 2);
  out << pad_right("family", w) << pad_left("graphs", 7) << pad_left("train", 7)
      << pad_left("val", 5) << pad_left("test", 6) << "   "
      << pad_right("ops min / median / max", 24) << pad_right("FLOPs min / median / max", 41)
      << "params min / median / max\n";
  auto row = [&](const std::string& f, FamilyStats& s) {
    out << pad_right(f, w) << pad_left(std::to_string(s.n[0] + s.n[1] + s.n[2]), 7)
        << pad_left(std::to_string(s.n[0]), 7) << pad_left(std::to_string(s.n[1]), 5)
        << pad_left(std::to_string(s.n[2]), 6) << "   " << pad_right(s.ops.describe(count), 24)
        << pad_right(s.flops.describe(gflop), 41) << s.params.describe(bytes) << "\n";
  };
  for (auto& [f, s] : fam) row(f, s);
  row("all", all);

  std::vector<std::pair<size_t, std::string>> hist;
  for (const auto& [t, n] : types) hist.emplace_back(n, t);
  std::sort(hist.begin(), hist.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first > y.first : x.second < y.second;
  });
  out << "\nop types (top " << std::min<size_t>(size_t(a.top), hist.size()) << " of " << hist.size()
      << ")\n";
  for (size_t i = 0; i < hist.size() && i < size_t(a.top); ++i) {
    out << "  " << pad_right(hist[i].second, 22) << pad_left(std::to_string(hist[i].first), 10)
        << pad_left(
               fixed(100.0 * double(hist[i].first) / double(std::max<size_t>(1, total_ops)), 1) +
                   "%",
               8)
        << "\n";
  }
}

// ---- families --------------------------------------------------------------------------

void run_families() {
  std::ostream& out = std::cout;
  for (const FamilyInfo& f : family_infos()) {
    out << f.name << ": " << f.models << "\n  after " << f.citation << "\n";
    size_t w = 6;
    for (const FamilyParam& p : f.params) w = std::max(w, p.name.size() + 2);
    out << "  " << pad_right("param", w) << pad_right("default", 31) << pad_right("large", 31)
        << "meaning\n";
    for (const FamilyParam& p : f.params) {
      out << "  " << pad_right(p.name, w) << pad_right(p.normal.to_string(), 31)
          << pad_right(p.large.to_string(), 31) << p.doc << "\n";
    }
    out << "\n";
  }
}

void generate_options(CLI::App* gen, GenerateArgs& g) {
  gen->add_option("--family", g.families, "Families, comma-separated, or 'all'")->required();
  gen->add_option("--count", g.count, "Number of graphs in total")
      ->required()
      ->check(CLI::NonNegativeNumber);
  add_seed_option(gen, g.seed, "Seed of the corpus (derives every entry's seed)");
  add_output_option(gen, g.output, "Output folder")->required();
  gen->add_option("--name", g.name, "Corpus name (default: the folder's name)");
  gen->add_option("--set", g.set,
                  "Fix a parameter for every entry: NAME=VALUE or NAME=LO:HI (repeatable)");
  gen->add_option("--description", g.description, "Description of a new corpus");
  gen->add_option("--size", g.size, "Parameter ranges: default (~100-5k ops) or large (~5k-60k)")
      ->capture_default_str();
  gen->add_option("--split", g.split, "Ratios TRAIN,VAL,TEST of a new corpus")
      ->capture_default_str();
  gen->add_option("--split-seed", g.split_seed, "Seed of the split hash (default: --seed)");
  gen->add_flag("--manifest-only", g.manifest_only,
                "Write only the manifest with generate: entries (regenerated on load)");
  gen->add_flag("--append", g.append, "Add to DIR/<name>.corpus.yaml if it exists");
  gen->add_flag("--no-checks", g.no_checks, "Do not record op counts and fingerprints");
}

void add_options(CLI::App* add, AddArgs& a) {
  add_input_file(add, "corpus", a.corpus, "Corpus manifest (*.corpus.yaml)");
  add->add_option("files", a.files, "Graph files")->required()->check(CLI::ExistingFile);
  add->add_option("--tags", a.tags,
                  "Tags, comma-separated; the first is the family (e.g. real,cnn)");
  add->add_flag("--record", a.record, "Record op count and fingerprint (load checks them)");
}

void stats_options(CLI::App* stats, StatsArgs& a) {
  add_input_file(stats, "corpus", a.corpus, "Corpus manifest (*.corpus.yaml)");
  stats->add_option("--split", a.split, "Only this split: train, val or test");
  stats->add_option("--tag", a.tag, "Only entries with this tag");
  stats->add_option("--top", a.top, "Op types to list")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

void register_corpus(CLI::App& app) {
  CLI::App* corpus = app.add_subcommand(
      "corpus",
      "Graph corpora (*.corpus.yaml) for training placers: generate, add, stats, families.");
  corpus->require_subcommand(1);

  std::string families;
  for (const std::string& f : family_names()) families += (families.empty() ? "" : ", ") + f;
  add_command<GenerateArgs>(
      *corpus, "generate",
      "Generate N seeded synthetic graphs (round robin over the families) and a manifest\n"
      "DIR/<name>.corpus.yaml with a fixed train/val/test split. Families: " +
          families + ".",
      generate_options, run_generate);
  add_command<AddArgs>(
      *corpus, "add",
      "Add graph files (*.graph.json) to a corpus; their split is drawn by name hash.",
      add_options, run_add);
  CLI::App* fams = corpus->add_subcommand(
      "families", "List the graph families and the ranges their parameters are drawn from.");
  fams->callback([]() { run_families(); });
  add_command<StatsArgs>(
      *corpus, "stats",
      "Counts per family and split; op, FLOP and parameter distributions; op types.",
      stats_options, run_stats);
}

}  // namespace

static CommandRegistrar corpus_registrar(60, "corpus", register_corpus);

}  // namespace placer::cli
