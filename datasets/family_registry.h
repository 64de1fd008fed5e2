#pragma once
// The registry of synthetic graph families: a name per family, the parameters it draws
// (layers, widths, sequence length, batch...) and their documented ranges, and
// make_family_graph(family, seed), which draws the parameters with the seed and builds the
// forward graph. Two presets: the default ranges give graphs of about 30 to 7k ops (most
// 100 to 5k, for training on small machines), the large ranges about 300 to 60k (GNMT-8
// unrolled over >= 224 steps passes 50k ops, like GDP's largest graphs).
//
//   Graph g = make_family_graph("gnmt", 42);                       // default ranges
//   FamilyRanges r;
//   r.size = FamilySize::kLarge;
//   r.overrides["layers"] = ParamRange::fixed(8);
//   Graph big = make_family_graph("gnmt", 42, r);                   // GNMT-8, long unroll
//
// Determinism: one std::mt19937_64 seeded with the seed draws one uniform number per
// parameter, in the order of FamilyInfo::params, whether or not the parameter is
// overridden (so fixing one parameter leaves the others as they were); the generator's
// own randomness (cell DAGs, branches) is seeded by the next draw. Values come from
// hand-written mappings of the engine's raw output, so a seed gives the same graph with any
// standard library.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "src/graph/graph.h"

namespace placer {

/// Range an integer parameter is drawn from: `one_of` when it is non-empty (uniform over
/// the list), else the grid lo, lo + step, ... <= hi, uniform or log-uniform.
struct ParamRange {
  int64_t lo = 0, hi = 0;
  int64_t step = 1;
  bool log_scale = false;
  std::vector<int64_t> one_of;

  static ParamRange fixed(int64_t v) { return uniform(v, v); }
  static ParamRange uniform(int64_t lo, int64_t hi, int64_t step = 1) {
    return ParamRange{lo, hi, step, false, {}};
  }
  static ParamRange log_uniform(int64_t lo, int64_t hi, int64_t step = 1) {
    return ParamRange{lo, hi, step, true, {}};
  }
  static ParamRange choice(std::vector<int64_t> values) {
    return ParamRange{0, 0, 1, false, std::move(values)};
  }
  /// The value for a uniform number u in [0, 1).
  int64_t draw(double u) const;
  /// "" when well-formed, else what is wrong ("lo > hi", ...).
  std::string check() const;
  /// "[2, 8]", "[256, 2048] log, step 64", "{2, 4, 8}", "8".
  std::string to_string() const;
  bool operator==(const ParamRange& o) const {
    return lo == o.lo && hi == o.hi && step == o.step && log_scale == o.log_scale &&
           one_of == o.one_of;
  }
};

enum class FamilySize : uint8_t { kDefault, kLarge };
const char* to_string(FamilySize s);
bool parse_family_size(const std::string& s, FamilySize* out);

/// Which ranges make_family_graph draws from: a preset and per-parameter overrides
/// (a fixed value is a range with lo == hi).
struct FamilyRanges {
  FamilySize size = FamilySize::kDefault;
  std::map<std::string, ParamRange> overrides;  ///< by parameter name
  bool operator==(const FamilyRanges& o) const {
    return size == o.size && overrides == o.overrides;
  }
};

/// One drawn parameter of a family.
struct FamilyParam {
  std::string name;
  ParamRange normal;  ///< default preset
  ParamRange large;   ///< large preset
  std::string doc;
};

/// A family: what it models, where it comes from, its parameters.
struct FamilyInfo {
  std::string name;
  std::string models;    ///< one line: what the graphs are
  std::string citation;  ///< the benchmark / architecture it follows
  std::vector<FamilyParam> params;
};

/// All families, in registry order.
const std::vector<FamilyInfo>& family_infos();
/// Family names: enas_cnn, amoebanet, inception, enas_rnn, rnnlm, gnmt, transformer_xl,
/// wavenet, transformer, rec, layered_random.
std::vector<std::string> family_names();
/// The family called `name`; nullptr when there is none.
const FamilyInfo* find_family(const std::string& name);

/// Throws Error naming the family and parameter when `ranges` overrides a parameter the
/// family does not have or gives an ill-formed range; and for an unknown family.
void check_family_ranges(const std::string& family, const FamilyRanges& ranges);

/// The parameter values make_family_graph uses for (family, seed, ranges), in
/// FamilyInfo::params order.
std::vector<std::pair<std::string, int64_t>> draw_family_params(const std::string& family,
                                                                uint64_t seed,
                                                                const FamilyRanges& ranges = {});

/// Builds the forward graph of `family` for `seed`. The graph is called `name`, or
/// "<family>_<seed>" when `name` is empty. Throws Error for an unknown family / parameter.
Graph make_family_graph(const std::string& family, uint64_t seed, const FamilyRanges& ranges = {},
                        const std::string& name = "");

}  // namespace placer
