#pragma once
// A method's registration with its options: the schema `placer methods` lists, the placer
// made from `--set` settings and the effective options `placer place` records, all from the
// method's one option table (agents/common/option_table.h). Torch-free.

#include <utility>

#include "agents/api/placer.h"
#include "agents/common/option_table.h"

namespace placer {

/// `m` with its options: `defaults` listed through `table`, and settings applied to them
/// through `table` before `make` (O -> std::unique_ptr<Placer>) builds the placer.
template <class O, class Make>
MethodInfo with_options(MethodInfo m, const OptionTable<O>& table, O defaults, Make make) {
  m.options = table.schema(defaults);
  m.make_with = [&table, defaults, make](const MethodSettings& s) {
    O o = defaults;
    table.apply(&o, s.sets, s.flag);
    return make(o);
  };
  m.effective_options = [&table, defaults](const MethodSettings& s) {
    O o = defaults;
    table.apply(&o, s.sets, s.flag);
    return table.schema(o);
  };
  return m;
}

}  // namespace placer
