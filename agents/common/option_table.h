#pragma once
// One table of a method's (or trainer's, or agent's) options: key, type, default, one-line
// doc, how to parse a value into the options struct and how to print it back. The one
// KEY=VALUE reader of the project: the same table reads `--set KEY=VALUE` (and its
// deprecated alias `--agent-set`), the keys of a YAML section (apply_yaml) such as a training
// configuration's `rainbow:` or a policy sidecar's agent options, lists the options for
// `placer methods` (schema()) and names the known keys, with a "did you mean", for an
// unknown one. Values are read in one vocabulary (bools: src/util/option_text.h). Torch-free.
//
// Errors: ValidationError "<flag> <key> (<owner>): <why>", e.g.
//   --set groups (hdp): expected a number, got 'many'
//   --set warmup (colocrl): unknown option (known: samples, lr, ...); did you mean 'warm'?

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "agents/api/option_spec.h"
#include "src/util/option_text.h"

namespace placer {

/// Text-to-value parsers shared by the tables. Each throws OptionValueError(why).
struct OptionValueError {
  std::string why;
};
double parse_option_number(const std::string& v);  ///< "expected a number, got 'v'"
int64_t parse_option_int(const std::string& v);     ///< a number that is an integer
/// kBoolSpellings (true/false, yes/no, on/off, 1/0, any case); else "expected true/false,
/// yes/no, on/off or 1/0, got 'v'".
bool parse_option_bool(const std::string& v);
/// A list of integers: "[128, 128]", "128,128" or "128 128" (a YAML list is read as "a,b").
std::vector<int64_t> parse_option_int_list(const std::string& v);
std::string print_option_int_list(const std::vector<int64_t>& v);  ///< "[128, 128]"
/// Shortest text that reads back as the same double ("0.001", "5e-04" -> "0.0005").
std::string print_option_number(double x);
/// Splits "KEY=VALUE" (ValidationError "<flag> 'kv': expected KEY=VALUE").
std::pair<std::string, std::string> split_option(const std::string& kv, const std::string& flag);

/// The keys of a YAML mapping with their values as text, in file order (a list as "a,b").
/// FormatError "<where>: ..." on bad YAML, a non-mapping or a nested mapping value.
std::vector<std::pair<std::string, std::string>> yaml_key_values(const std::string& yaml_text,
                                                                 const std::string& where);

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
  /// An integer; values below `min` are refused ("must be >= min, got v").
  template <class Field>
  OptionTable& integer(std::string key, std::string doc, Field field,
                       int64_t min = std::numeric_limits<int64_t>::min()) {
    return add(std::move(key), "int", std::move(doc),
               [field, min](O* o, const std::string& v) {
                 const int64_t x = parse_option_int(v);
                 if (x < min) {
                   throw OptionValueError{"must be >= " + std::to_string(min) + ", got " + v};
                 }
                 using T = std::decay_t<decltype(field(*o))>;
                 field(*o) = static_cast<T>(x);
               },
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
  /// One of `choices` ("expected a, b or c, got 'v'"); listed with the type "a|b|c".
  template <class Field>
  OptionTable& choice(std::string key, std::vector<std::string> choices, std::string doc,
                      Field field) {
    std::string type, names;
    for (size_t i = 0; i < choices.size(); ++i) {
      type += (i ? "|" : "") + choices[i];
      names += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
    }
    return add(std::move(key), std::move(type), std::move(doc),
               [field, choices, names](O* o, const std::string& v) {
                 for (const std::string& c : choices) {
                   if (c == v) {
                     field(*o) = v;
                     return;
                   }
                 }
                 throw OptionValueError{"expected " + names + ", got '" + v + "'"};
               },
               [field](const O& o) { return std::string(field(o)); });
  }
  /// A file path (non-empty: "expected a file path").
  template <class Field>
  OptionTable& path(std::string key, std::string doc, Field field) {
    return add(std::move(key), "path", std::move(doc),
               [field](O* o, const std::string& v) {
                 if (v.empty()) throw OptionValueError{"expected a file path"};
                 field(*o) = v;
               },
               [field](const O& o) { return std::string(field(o)); });
  }
  /// A list of integers (parse_option_int_list).
  template <class Field>
  OptionTable& integer_list(std::string key, std::string doc, Field field) {
    return add(std::move(key), "list", std::move(doc),
               [field](O* o, const std::string& v) { field(*o) = parse_option_int_list(v); },
               [field](const O& o) { return print_option_int_list(field(o)); });
  }
  /// Every listed key of `inner`, with its type and doc, reached through `field` (the inner
  /// options struct inside O) and named `prefix` + key: e.g. a trainer's table holding the
  /// agent's keys.
  template <class I, class Field>
  OptionTable& nest(const OptionTable<I>& inner, Field field, const std::string& prefix = "") {
    for (const std::string& key : inner.keys()) {
      const auto* e = inner.find(key);
      add(prefix + key, e->type, e->doc,
          [&inner, field, key](O* o, const std::string& v) { inner.set_value(&field(*o), key, v); },
          [&inner, field, key](const O& o) { return inner.value(field(o), key); });
    }
    return *this;
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

  /// Sets one option; `flag` ("--set", "--agent-set", a file's name) is named in errors.
  void set(O* o, const std::string& key, const std::string& value, const std::string& flag) const {
    const Entry* e = find(key);
    if (!e) {
      const std::string near = closest_name(key, keys());
      fail(flag, key, "unknown option (known: " + key_list() + ")" +
                          (near.empty() ? "" : "; did you mean '" + near + "'?"));
    }
    if (!e->refused.empty()) fail(flag, key, e->refused);
    try {
      e->parse(o, value);
    } catch (const OptionValueError& bad) {
      fail(flag, key, bad.why);
    }
  }
  /// Sets the listed option `key` (which must be one) of a table nested in another: a bad
  /// value throws OptionValueError for the outer table to name.
  void set_value(O* o, const std::string& key, const std::string& value) const {
    find(key)->parse(o, value);
  }
  /// The value of the listed option `key` as text.
  std::string value(const O& o, const std::string& key) const { return find(key)->print(o); }
  /// Applies "KEY=VALUE" strings in order.
  void apply(O* o, const std::vector<std::string>& key_values, const std::string& flag) const {
    for (const std::string& kv : key_values) {
      const auto [k, v] = split_option(kv, flag);
      set(o, k, v, flag);
    }
  }
  /// Applies the keys of a YAML mapping in file order (a list value is read as "a,b"); `where`
  /// names the source in errors. FormatError on bad YAML or a non-mapping.
  void apply_yaml(O* o, const std::string& yaml_text, const std::string& where) const {
    for (const auto& [k, v] : yaml_key_values(yaml_text, where)) set(o, k, v, where);
  }
  /// Every listed option as "key: value" lines (reads back through apply_yaml).
  std::string to_yaml(const O& o) const {
    std::string out;
    for (const Entry& e : entries_) {
      if (e.refused.empty()) out += e.key + ": " + e.print(o) + "\n";
    }
    return out;
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
  template <class>
  friend class OptionTable;
  struct Entry {
    std::string key, type, doc;
    Parse parse;
    Print print;
    std::string refused;  ///< non-empty: the key is refused with this reason
  };
  const Entry* find(const std::string& key) const {
    for (const Entry& e : entries_) {
      if (e.key == key) return &e;
    }
    return nullptr;
  }
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
