#include "datasets/corpus.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <unordered_map>

#include "datasets/family_util.h"
#include "src/io/graph_json.h"
#include "src/io/units.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer {

namespace fs = std::filesystem;

const char* to_string(Split s) {
  switch (s) {
    case Split::kTrain:
      return "train";
    case Split::kVal:
      return "val";
    case Split::kTest:
      return "test";
  }
  return "train";
}

bool parse_split(const std::string& s, Split* out) {
  if (s == "train")
    *out = Split::kTrain;
  else if (s == "val")
    *out = Split::kVal;
  else if (s == "test")
    *out = Split::kTest;
  else
    return false;
  return true;
}

Split assign_split(const std::string& name, const SplitRatios& r) {
  const uint64_t h = mix64(fnv1a64(name) ^ mix64(r.seed));
  const double u = static_cast<double>(h >> 11) * 0x1.0p-53;
  if (u < r.train) return Split::kTrain;
  if (u < r.train + r.val) return Split::kVal;
  return Split::kTest;
}

std::string CorpusEntry::family() const {
  if (!tags.empty()) return tags[0];
  return is_generated() ? generate.family : "";
}

bool CorpusEntry::has_tag(const std::string& tag) const {
  for (const std::string& t : tags) {
    if (t == tag) return true;
  }
  return false;
}

std::string Corpus::base_dir() const { return fs::path(manifest_path).parent_path().string(); }

std::string Corpus::resolve(const CorpusEntry& e) const {
  const fs::path p(e.file);
  if (p.is_absolute() || base_dir().empty()) return p.lexically_normal().string();
  return (fs::path(base_dir()) / p).lexically_normal().string();
}

Graph Corpus::load_graph(size_t i) const {
  PLACER_CHECK(i < entries.size(), "corpus '" << name << "': entry " << i << " out of range ("
                                              << entries.size() << " entries)");
  const CorpusEntry& e = entries[i];
  const std::string where = manifest_path.empty() ? "corpus " + quote_short(name) : manifest_path;
  const std::string field = field_index("entries", i) + " (" + e.name + ")";
  Graph g;
  try {
    g = e.is_generated()
            ? make_family_graph(e.generate.family, e.generate.seed, e.generate.ranges, e.name)
            : load_graph_json(resolve(e));
  } catch (const Error& err) {
    throw ValidationError(format_context(where, field, err.what()));
  }
  const char* what =
      e.is_generated()
          ? "the family generator changed; regenerate the entry or restore the generator"
          : "the graph file changed; re-record the entry";
  if (e.ops >= 0 && static_cast<int64_t>(g.num_ops()) != e.ops) {
    throw ValidationError(format_context(where, field,
                                         "graph has " + std::to_string(g.num_ops()) +
                                             " ops, the manifest records " + std::to_string(e.ops) +
                                             " (" + what + ")"));
  }
  if (!e.fingerprint.empty()) {
    const std::string got = fingerprint_hex(graph_fingerprint(g));
    if (got != e.fingerprint) {
      throw ValidationError(format_context(where, field,
                                           "graph fingerprint " + got +
                                               " differs from the manifest's " + e.fingerprint +
                                               " (" + what + ")"));
    }
  }
  return g;
}

std::vector<size_t> Corpus::indices(Split s) const {
  std::vector<size_t> v;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].split == s) v.push_back(i);
  }
  return v;
}

std::vector<size_t> Corpus::with_tag(const std::string& tag) const {
  std::vector<size_t> v;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].has_tag(tag)) v.push_back(i);
  }
  return v;
}

int64_t Corpus::find(const std::string& n) const {
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].name == n) return static_cast<int64_t>(i);
  }
  return -1;
}

void Corpus::add(CorpusEntry e) {
  if (find(e.name) >= 0) {
    throw ValidationError("corpus " + quote_short(name) + ": entry name " + quote_short(e.name) +
                          " is already taken");
  }
  entries.push_back(std::move(e));
}

// ---- Reading ---------------------------------------------------------------------------

namespace {

// The preset range of a parameter: what a [lo, hi] override inherits its step and scale from.
const ParamRange* preset_range(const std::string& family, const std::string& param,
                               FamilySize size) {
  const FamilyInfo* f = find_family(family);
  if (f == nullptr) return nullptr;
  for (const FamilyParam& p : f->params) {
    if (p.name == param) return size == FamilySize::kLarge ? &p.large : &p.normal;
  }
  return nullptr;
}

ParamRange inherited(const ParamRange* preset, int64_t lo, int64_t hi) {
  ParamRange r = ParamRange::uniform(lo, hi);
  if (preset != nullptr && preset->one_of.empty()) {
    r.step = preset->step;
    r.log_scale = preset->log_scale;
  }
  return r;
}

ParamRange read_range(const YamlReader& r, const YAML::Node& n, const std::string& field,
                      const ParamRange* preset) {
  const int64_t kMax = std::numeric_limits<int64_t>::max(),
                kMin = std::numeric_limits<int64_t>::min();
  if (n.IsScalar()) return ParamRange::fixed(r.to_int(n, field, kMin, kMax));
  if (n.IsSequence()) {
    if (n.size() != 2)
      r.fail(field,
             "a range is [lo, hi] (two integers), got " + std::to_string(n.size()) + " values");
    return inherited(preset, r.to_int(n[0], field_index(field, 0), kMin, kMax),
                     r.to_int(n[1], field_index(field, 1), kMin, kMax));
  }
  r.check_keys(n, field, {"lo", "hi", "step", "log", "one_of"});
  ParamRange out;
  if (n["one_of"]) {
    const YAML::Node list = n["one_of"];
    r.expect_sequence(list, field_join(field, "one_of"));
    if (list.size() == 0) r.fail(field_join(field, "one_of"), "needs at least one value");
    for (size_t i = 0; i < list.size(); ++i) {
      out.one_of.push_back(
          r.to_int(list[i], field_index(field_join(field, "one_of"), i), kMin, kMax));
    }
    return out;
  }
  out = inherited(preset, r.to_int(r.required(n, "lo", field), field_join(field, "lo"), kMin, kMax),
                  r.to_int(r.required(n, "hi", field), field_join(field, "hi"), kMin, kMax));
  if (n["step"]) out.step = r.to_int(n["step"], field_join(field, "step"), 1, kMax);
  if (n["log"]) out.log_scale = r.to_bool(n["log"], field_join(field, "log"));
  return out;
}

GenerateSpec read_generate(const YamlReader& r, const YAML::Node& n, const std::string& field) {
  r.expect_map(n, field);
  GenerateSpec g;
  const std::string ff = field_join(field, "family");
  g.family = r.scalar(r.required(n, "family", field), ff);
  const FamilyInfo* info = find_family(g.family);
  if (info == nullptr) {
    std::string known;
    for (const std::string& f : family_names()) known += (known.empty() ? "" : ", ") + f;
    r.fail(ff, "unknown family " + quote_short(g.family) + " (known: " + known + ")");
  }
  g.seed = static_cast<uint64_t>(r.to_int(r.required(n, "seed", field), field_join(field, "seed"),
                                          0, std::numeric_limits<int64_t>::max()));
  if (n["size"]) {
    const std::string s = r.scalar(n["size"], field_join(field, "size"));
    if (!parse_family_size(s, &g.ranges.size)) {
      r.fail(field_join(field, "size"), "expected default or large, got " + quote_short(s));
    }
  }
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (key == "family" || key == "seed" || key == "size") continue;
    const ParamRange* preset = preset_range(g.family, key, g.ranges.size);
    if (preset == nullptr) {
      std::string names;
      for (const FamilyParam& p : info->params) names += (names.empty() ? "" : ", ") + p.name;
      r.fail(field, "unknown parameter " + quote_short(key) + " of family '" + g.family +
                        "' (parameters: family, seed, size, " + names + ")");
    }
    if (g.ranges.overrides.count(key)) r.fail(field_join(field, key), "key given twice");
    const ParamRange range = read_range(r, it->second, field_join(field, key), preset);
    const std::string bad = range.check();
    if (!bad.empty()) r.fail(field_join(field, key), bad);
    g.ranges.overrides[key] = range;
  }
  return g;
}

SplitRatios read_ratios(const YamlReader& r, const YAML::Node& n) {
  r.check_keys(n, "split", {"seed", "train", "val", "test"});
  SplitRatios s;
  if (n["seed"]) {
    s.seed = static_cast<uint64_t>(
        r.to_int(n["seed"], "split.seed", 0, std::numeric_limits<int64_t>::max()));
  }
  double* fields[] = {&s.train, &s.val, &s.test};
  const char* names[] = {"train", "val", "test"};
  for (int k = 0; k < 3; ++k) {
    if (!n[names[k]]) continue;
    const std::string f = std::string("split.") + names[k];
    *fields[k] = r.to_double(n[names[k]], f);
    if (!(*fields[k] >= 0 && *fields[k] <= 1)) r.fail(f, "must be between 0 and 1");
  }
  const double sum = s.train + s.val + s.test;
  if (std::fabs(sum - 1) > 1e-9) {
    r.fail_validation("split", "train + val + test must be 1, got " + format_double(sum));
  }
  return s;
}

}  // namespace

namespace {
Corpus read_corpus(const std::string& text, const std::string& path);
}  // namespace

Corpus parse_corpus_yaml(const std::string& text, const std::string& path) {
  // yaml-cpp exceptions that escape the reader become errors naming the file.
  return with_yaml_errors(path, [&] { return read_corpus(text, path); });
}

namespace {

Corpus read_corpus(const std::string& text, const std::string& path) {
  YamlReader r(path);
  const YAML::Node root = parse_yaml_text(text, path);
  r.check_format_version(root, kCorpusFormatMajor, kCorpusFormatMinor);
  r.check_keys(root, "", {"format_version", "name", "description", "split", "entries"});
  Corpus c;
  c.manifest_path = path;
  c.name = r.scalar(r.required(root, "name", ""), "name");
  if (root["description"]) c.description = r.scalar(root["description"], "description");
  if (root["split"]) c.split = read_ratios(r, root["split"]);
  const YAML::Node entries = r.required(root, "entries", "");
  r.expect_sequence(entries, "entries");
  std::unordered_map<std::string, size_t> names;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string field = field_index("entries", i);
    const YAML::Node n = entries[i];
    r.check_keys(n, field, {"name", "file", "generate", "split", "tags", "ops", "fingerprint"});
    CorpusEntry e;
    e.name = r.scalar(r.required(n, "name", field), field_join(field, "name"));
    if (e.name.empty()) r.fail(field_join(field, "name"), "must not be empty");
    auto [it, fresh] = names.emplace(e.name, i);
    if (!fresh) {
      r.fail_validation(field_join(field, "name"), "duplicate entry name '" + e.name +
                                                       "' (also entries[" +
                                                       std::to_string(it->second) + "])");
    }
    const bool has_file = n["file"].IsDefined(), has_gen = n["generate"].IsDefined();
    if (has_file == has_gen) {
      r.fail(field, has_file ? "give either 'file' or 'generate', not both"
                             : "missing 'file' (a *.graph.json) or 'generate' (family and seed)");
    }
    if (has_file) {
      e.file = r.scalar(n["file"], field_join(field, "file"));
      if (e.file.empty()) r.fail(field_join(field, "file"), "must not be empty");
      const std::string resolved = c.resolve(e);
      std::error_code ec;
      if (!fs::is_regular_file(resolved, ec)) {
        r.fail_validation(field_join(field, "file"), "graph file " + quote_short(e.file) +
                                                         " not found (looked for " +
                                                         quote_short(resolved) + ")");
      }
    } else {
      e.generate = read_generate(r, n["generate"], field_join(field, "generate"));
    }
    const std::string sf = field_join(field, "split");
    const std::string s = r.scalar(r.required(n, "split", field), sf);
    if (!parse_split(s, &e.split)) r.fail(sf, "expected train, val or test, got " + quote_short(s));
    if (n["tags"]) {
      const std::string tf = field_join(field, "tags");
      r.expect_sequence(n["tags"], tf);
      for (size_t k = 0; k < n["tags"].size(); ++k) {
        e.tags.push_back(r.scalar(n["tags"][k], field_index(tf, k)));
      }
    } else if (e.is_generated()) {
      e.tags = {e.generate.family};
    }
    if (n["ops"]) {
      e.ops = r.to_int(n["ops"], field_join(field, "ops"), 0, std::numeric_limits<int64_t>::max());
    }
    if (n["fingerprint"]) {
      const std::string ff = field_join(field, "fingerprint");
      e.fingerprint = r.scalar(n["fingerprint"], ff);
      bool hex = e.fingerprint.size() == 16;
      for (char ch : e.fingerprint) hex = hex && std::strchr("0123456789abcdef", ch) != nullptr;
      if (!hex) r.fail(ff, "expected 16 lower-case hex digits, got " + quote_short(e.fingerprint));
    }
    c.entries.push_back(std::move(e));
  }
  return c;
}

}  // namespace

Corpus load_corpus(const std::string& path) {
  return parse_corpus_yaml(read_text_file(path, "corpus manifest"), path);
}

// ---- Writing ---------------------------------------------------------------------------

namespace {

void emit_range(YAML::Emitter& out, const ParamRange& r, const ParamRange* preset) {
  if (!r.one_of.empty()) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "one_of" << YAML::Value << YAML::Flow
        << YAML::BeginSeq;
    for (int64_t v : r.one_of) out << v;
    out << YAML::EndSeq << YAML::EndMap;
    return;
  }
  if (r == ParamRange::fixed(r.lo)) {
    out << r.lo;
    return;
  }
  if (r == inherited(preset, r.lo, r.hi)) {
    out << YAML::Flow << YAML::BeginSeq << r.lo << r.hi << YAML::EndSeq;
    return;
  }
  out << YAML::Flow << YAML::BeginMap << YAML::Key << "lo" << YAML::Value << r.lo << YAML::Key
      << "hi" << YAML::Value << r.hi << YAML::Key << "step" << YAML::Value << r.step << YAML::Key
      << "log" << YAML::Value << (r.log_scale ? "true" : "false") << YAML::EndMap;
}

std::string emit_corpus(const Corpus& c,
                        const std::function<std::string(const CorpusEntry&)>& file_of) {
  YAML::Emitter out;
  out.SetIndent(2);
  out << YAML::BeginMap;
  out << YAML::Key << "format_version" << YAML::Value << YAML::DoubleQuoted
      << (std::to_string(kCorpusFormatMajor) + "." + std::to_string(kCorpusFormatMinor));
  out << YAML::Key << "name" << YAML::Value << c.name;
  if (!c.description.empty()) out << YAML::Key << "description" << YAML::Value << c.description;
  out << YAML::Key << "split" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "seed" << YAML::Value << c.split.seed;
  out << YAML::Key << "train" << YAML::Value << format_double(c.split.train);
  out << YAML::Key << "val" << YAML::Value << format_double(c.split.val);
  out << YAML::Key << "test" << YAML::Value << format_double(c.split.test);
  out << YAML::EndMap;
  out << YAML::Key << "entries" << YAML::Value << YAML::BeginSeq;
  for (const CorpusEntry& e : c.entries) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << e.name;
    if (e.is_generated()) {
      const GenerateSpec& g = e.generate;
      out << YAML::Key << "generate" << YAML::Value << YAML::Flow << YAML::BeginMap;
      out << YAML::Key << "family" << YAML::Value << g.family;
      out << YAML::Key << "seed" << YAML::Value << g.seed;
      if (g.ranges.size != FamilySize::kDefault) {
        out << YAML::Key << "size" << YAML::Value << to_string(g.ranges.size);
      }
      for (const auto& [key, range] : g.ranges.overrides) {
        out << YAML::Key << key << YAML::Value;
        emit_range(out, range, preset_range(g.family, key, g.ranges.size));
      }
      out << YAML::EndMap;
    } else {
      out << YAML::Key << "file" << YAML::Value << file_of(e);
    }
    out << YAML::Key << "split" << YAML::Value << to_string(e.split);
    // Tags are left out when they are the default ([family] of a generated entry).
    if (!(e.is_generated() && e.tags == std::vector<std::string>{e.generate.family})) {
      out << YAML::Key << "tags" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const std::string& t : e.tags) out << t;
      out << YAML::EndSeq;
    }
    if (e.ops >= 0) out << YAML::Key << "ops" << YAML::Value << e.ops;
    if (!e.fingerprint.empty()) {
      out << YAML::Key << "fingerprint" << YAML::Value << YAML::DoubleQuoted << e.fingerprint;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  PLACER_CHECK(out.good(), "corpus '" << c.name << "': cannot write YAML: " << out.GetLastError());
  return std::string(
             "# Graph corpus manifest (docs/corpus.md). Each entry is a graph file (relative to\n"
             "# this file) or a generate: spec rebuilt deterministically on load. Splits are\n"
             "# recorded per entry and never re-drawn; ops / fingerprint are checked on load.\n") +
         out.c_str() + "\n";
}

}  // namespace

std::string corpus_to_yaml(const Corpus& c) {
  return emit_corpus(c, [](const CorpusEntry& e) { return e.file; });
}

void save_corpus(const Corpus& c, const std::string& path) {
  const fs::path new_base = fs::absolute(fs::path(path)).parent_path();
  const std::string text = emit_corpus(c, [&](const CorpusEntry& e) {
    const fs::path abs = fs::absolute(fs::path(c.resolve(e))).lexically_normal();
    const fs::path rel = abs.lexically_relative(new_base.lexically_normal());
    return rel.empty() ? abs.string() : rel.string();
  });
  write_text_file(path, text);
}

// ---- Fingerprint -----------------------------------------------------------------------

namespace {

class Hasher {
 public:
  void add(uint64_t v) { h_ = mix64(h_ ^ v); }
  void add(const std::string& s) { add(fnv1a64(s) ^ s.size()); }
  void add(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    add(bits);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0x6A09E667F3BCC908ull;
};

}  // namespace

uint64_t graph_fingerprint(const Graph& g) {
  Hasher h;
  h.add(g.name());
  h.add(static_cast<uint64_t>(g.batch_size()));
  h.add(static_cast<uint64_t>(g.is_training_step()));
  h.add(static_cast<uint64_t>(g.num_tensors()));
  for (const Tensor& t : g.tensors()) {
    h.add(t.name);
    h.add(static_cast<uint64_t>(t.dtype) | (uint64_t{t.batch_scaled} << 8) |
          (uint64_t{t.is_param_grad} << 9));
    h.add(t.bytes);
    h.add(static_cast<uint64_t>(t.shape.size()));
    for (int64_t d : t.shape) h.add(static_cast<uint64_t>(d));
  }
  h.add(static_cast<uint64_t>(g.num_ops()));
  for (const Op& o : g.ops()) {
    h.add(o.name);
    h.add(o.type);
    h.add(o.scope);
    h.add(static_cast<uint64_t>(o.category) | (static_cast<uint64_t>(o.phase) << 8) |
          (static_cast<uint64_t>(o.dtype) << 16) | (uint64_t{o.batch_scaled} << 24));
    h.add(static_cast<uint64_t>(static_cast<int64_t>(o.layer)));
    h.add(o.flops);
    h.add(o.bytes_accessed);
    h.add(o.param_bytes);
    h.add(o.state_bytes);
    h.add(o.workspace_bytes);
    h.add(static_cast<uint64_t>(o.inputs.size()));
    for (TensorId t : o.inputs) h.add(static_cast<uint64_t>(t));
    h.add(static_cast<uint64_t>(o.outputs.size()));
    for (TensorId t : o.outputs) h.add(static_cast<uint64_t>(t));
  }
  return h.value();
}

std::string fingerprint_hex(uint64_t f) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(f));
  return buf;
}

// ---- Generation ------------------------------------------------------------------------

void generate_corpus_entries(Corpus* corpus, const CorpusGenerateOptions& o) {
  PLACER_CHECK(o.count >= 0, "corpus generate: --count must be >= 0, got " << o.count);
  std::vector<std::string> families;
  for (const std::string& f : o.families) {
    if (f == "all") {
      for (const std::string& n : family_names()) families.push_back(n);
    } else {
      families.push_back(f);
    }
  }
  for (const std::string& f : families) {
    FamilyRanges r;
    r.overrides = o.overrides;
    check_family_ranges(f, r);  // throws for an unknown family or parameter
  }
  PLACER_CHECK(!families.empty(), "corpus generate: no family given");
  const bool large = o.size == FamilySize::kLarge;
  const std::string infix = large ? "_large_" : "_";
  // Continue the numbering of each family's entries already in the corpus.
  std::vector<int> next(families.size(), 0);
  for (size_t f = 0; f < families.size(); ++f) {
    const std::string prefix = families[f] + infix;
    for (const CorpusEntry& e : corpus->entries) {
      if (e.name.rfind(prefix, 0) != 0) continue;
      const std::string num = e.name.substr(prefix.size());
      if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos) continue;
      next[f] = std::max(next[f], std::stoi(num) + 1);
    }
  }
  if (o.write_files) {
    std::error_code ec;
    fs::create_directories(fs::path(corpus->base_dir()) / o.graphs_dir, ec);
    if (ec) {
      throw FileError((fs::path(corpus->base_dir()) / o.graphs_dir).string() +
                      ": cannot create directory: " + ec.message());
    }
  }
  for (int i = 0; i < o.count; ++i) {
    const size_t f = static_cast<size_t>(i) % families.size();
    const std::string& family = families[f];
    const int k = next[f]++;
    char num[16];
    std::snprintf(num, sizeof num, "%03d", k);
    CorpusEntry e;
    e.name = family + infix + num;
    e.generate.family = family;
    e.generate.seed =
        mix64(fnv1a64(family + infix, mix64(o.seed)) + static_cast<uint64_t>(k)) % 1000000000ull;
    e.generate.ranges.size = o.size;
    e.generate.ranges.overrides = o.overrides;
    e.split = assign_split(e.name, corpus->split);
    e.tags = {family};
    if (large) e.tags.push_back("large");
    const Graph g = make_family_graph(family, e.generate.seed, e.generate.ranges, e.name);
    if (o.record_checks) {
      e.ops = static_cast<int64_t>(g.num_ops());
      e.fingerprint = fingerprint_hex(graph_fingerprint(g));
    }
    if (o.write_files) {
      e.file = (fs::path(o.graphs_dir) / (e.name + ".graph.json")).string();
      save_graph_json(g, corpus->resolve(e));
      e.generate = {};  // a file entry: the file is the graph
    }
    corpus->add(std::move(e));
    if (o.progress) o.progress(static_cast<size_t>(i) + 1, static_cast<size_t>(o.count), g);
  }
}

}  // namespace placer
