#pragma once
// Option-table keys declared as data: a block of "key  doc" lines and, in the same order, the
// fields they set; each key's type follows from its field's C++ type (bool: a flag,
// floating point: a number, integral: an integer, std::vector<int64_t>: a list). The
// tables of the methods with many plain keys read this way (agents/<family>/*_options.cpp);
// keys with a minimum, a choice or a custom reader stay OptionTable calls. Torch-free.
//
//   add_fields(&table, R"(
//     atoms   C51 atoms
//     noisy   NoisyLinear layers)",
//              &RainbowConfig::atoms, &RainbowConfig::noisy);

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "agents/common/option_table.h"

namespace placer {

/// The (key, doc) of each non-blank line of `block`: the key is the line's first word, the
/// doc the rest of it.
std::vector<std::pair<std::string, std::string>> option_key_docs(const char* block);

namespace option_fields_detail {

template <class>
inline constexpr bool kUnsupported = false;

/// One key of the type its field has.
template <class O, class Field>
void add_typed(OptionTable<O>* t, const std::pair<std::string, std::string>& key_doc, Field field) {
  using T = std::decay_t<decltype(field(std::declval<O&>()))>;
  const auto& [key, doc] = key_doc;
  if constexpr (std::is_same_v<T, bool>) {
    t->flag(key, doc, field);
  } else if constexpr (std::is_floating_point_v<T>) {
    t->number(key, doc, field);
  } else if constexpr (std::is_integral_v<T>) {
    t->integer(key, doc, field);
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    t->integer_list(key, doc, field);
  } else {
    static_assert(kUnsupported<T>, "add_fields: a bool, number, integer or integer list field");
  }
}

template <class O, class... Fields>
OptionTable<O>& add(OptionTable<O>* t, const char* block, Fields... fields) {
  const std::vector<std::pair<std::string, std::string>> key_docs = option_key_docs(block);
  if (key_docs.size() != sizeof...(fields)) {
    throw std::logic_error("add_fields (" + t->owner() + "): " + std::to_string(key_docs.size()) +
                           " keys for " + std::to_string(sizeof...(fields)) + " fields");
  }
  size_t i = 0;
  ((add_typed(t, key_docs[i], fields), ++i), ...);
  return *t;
}

}  // namespace option_fields_detail

/// The keys of `block` setting the members `fields` of O, in order.
template <class O, class... T>
OptionTable<O>& add_fields(OptionTable<O>* t, const char* block, T O::*... fields) {
  return option_fields_detail::add(
      t, block, [fields](auto& o) -> auto& { return o.*fields; }...);
}

/// The keys of `block` setting the members `fields` of the part `part` of O (o.*part).
template <class O, class P, class... T>
OptionTable<O>& add_fields(OptionTable<O>* t, P O::*part, const char* block, T P::*... fields) {
  const auto in_part = [part](auto field) {
    const std::pair<P O::*, decltype(field)> path{part, field};
    return [path](auto& o) -> auto& { return (o.*path.first).*path.second; };
  };
  return option_fields_detail::add(t, block, in_part(fields)...);
}

}  // namespace placer
