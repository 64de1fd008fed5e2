#pragma once
// One table of a method's (or trainer's) options: key, type, default, one-line doc, how to
// parse a value into the options struct and how to print it back. The same table reads
// `--set KEY=VALUE` (and its deprecated alias `--agent-set`), lists the options for
// `placer methods` (schema()) and names the known keys, with a "did you mean", for an
// unknown one. Torch-free.
//
// Errors: ValidationError "<flag> <key> (<owner>): <why>", e.g.
//   --set groups (hdp): expected a number, got 'many'
//   --set warmup (colocrl): unknown option (known: samples, lr, ...); did you mean 'warm'?

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "agents/api/option_spec.h"

namespace placer {

/// Text-to-value parsers shared by the tables. Each throws OptionValueError(why).
struct OptionValueError {
  std::string why;
};
double parse_option_number(const std::string& v);  ///< "expected a number, got 'v'"
int parse_option_int(const std::string& v);         ///< a number that is an integer
bool parse_option_bool(const std::string& v);       ///< true/false/1/0/yes/no/on/off
/// Shortest text that reads back as the same double ("0.001", "5e-04" -> "0.0005").
std::string print_option_number(double x);
/// "(did you mean 'x'?)"-style suggestion: the known key closest to `key` (edit distance
/// < 3), or "" when none is close.
std::string closest_option(const std::string& key, const std::vector<std::string>& known);
/// Splits "KEY=VALUE" (ValidationError "<flag> 'kv': expected KEY=VALUE").
std::pair<std::string, std::string> split_option(const std::string& kv, const std::string& flag);

template <class O>
class OptionTable {
 public:
  using Parse = std::function<void(O*, const std::string&)>;
  using Print = std::function<std::string(const O&)>;

  /// `owner` names the method(s) in errors ("rainbow-pp", "rainbow-opp/adp").
  explicit OptionTable(std::string owner) : owner_(std::move(owner)) {}

  /// A key. `parse` throws OptionValueError for a bad value; `print` gives the value as text.
  OptionTable& add(std::string key, std::string type, std::string doc, Parse parse, Print print) {
    entries_.push_back({std::move(key), std::move(type), std::move(doc), std::move(parse),
                        std::move(print), ""});
    return *this;
  }
  /// Typed shorthands: `field` returns a reference to the member in the options struct.
  template <class Field>
  OptionTable& integer(std::string key, std::string doc, Field field) {
    return add(std::move(key), "int", std::move(doc),
               [field](O* o, const std::string& v) { field(*o) = parse_option_int(v); },
               [field](const O& o) { return std::to_string(field(o)); });
  }
  template <class Field>
  OptionTable& number(std::string key, std::string doc, Field field) {
    return add(std::move(key), "number", std::move(doc),
               [field](O* o, const std::string& v) { field(*o) = parse_option_number(v); },
               [field](const O& o) { return print_option_number(field(o)); });
  }
  template <class Field>
  OptionTable& flag(std::string key, std::string doc, Field field) {
    return add(std::move(key), "bool", std::move(doc),
               [field](O* o, const std::string& v) { field(*o) = parse_option_bool(v); },
               [field](const O& o) {
                 return std::string(field(o) ? "true" : "false");
               });
  }
  /// A key that is refused with a reason (not listed): e.g. "seed" -> "the seed is --seed".
  OptionTable& refuse(std::string key, std::string why) {
    entries_.push_back({std::move(key), "", "", nullptr, nullptr, std::move(why)});
    return *this;
  }

  const std::string& owner() const { return owner_; }
  /// The same options for another method (errors then name `owner`).
  OptionTable with_owner(std::string owner) const {
    OptionTable t = *this;
    t.owner_ = std::move(owner);
    return t;
  }

  /// The listed keys, in table order.
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    for (const Entry& e : entries_) {
      if (e.refused.empty()) k.push_back(e.key);
    }
    return k;
  }
  /// "a, b, c" (the listed keys).
  std::string key_list() const {
    std::string out;
    for (const std::string& k : keys()) out += (out.empty() ? "" : ", ") + k;
    return out;
  }

  /// Sets one option; `flag` ("--set", "--agent-set") is named in errors.
  void set(O* o, const std::string& key, const std::string& value, const std::string& flag) const {
    for (const Entry& e : entries_) {
      if (e.key != key) continue;
      if (!e.refused.empty()) fail(flag, key, e.refused);
      try {
        e.parse(o, value);
      } catch (const OptionValueError& bad) {
        fail(flag, key, bad.why);
      }
      return;
    }
    const std::string near = closest_option(key, keys());
    fail(flag, key, "unknown option (known: " + key_list() + ")" +
                        (near.empty() ? "" : "; did you mean '" + near + "'?"));
  }
  /// Applies "KEY=VALUE" strings in order.
  void apply(O* o, const std::vector<std::string>& key_values, const std::string& flag) const {
    for (const std::string& kv : key_values) {
      const auto [k, v] = split_option(kv, flag);
      set(o, k, v, flag);
    }
  }
  /// Every listed option with its value in `defaults`.
  std::vector<OptionSpec> schema(const O& defaults) const {
    std::vector<OptionSpec> out;
    for (const Entry& e : entries_) {
      if (e.refused.empty()) out.push_back({e.key, e.type, e.print(defaults), e.doc});
    }
    return out;
  }

 private:
  struct Entry {
    std::string key, type, doc;
    Parse parse;
    Print print;
    std::string refused;  ///< non-empty: the key is refused with this reason
  };
  [[noreturn]] void fail(const std::string& flag, const std::string& key,
                         const std::string& why) const;

  std::string owner_;
  std::vector<Entry> entries_;
};

/// Throws ValidationError "<flag> <key> (<owner>): <why>".
[[noreturn]] void throw_option_error(const std::string& flag, const std::string& key,
                                     const std::string& owner, const std::string& why);

template <class O>
void OptionTable<O>::fail(const std::string& flag, const std::string& key,
                          const std::string& why) const {
  throw_option_error(flag, key, owner_, why);
}

}  // namespace placer
