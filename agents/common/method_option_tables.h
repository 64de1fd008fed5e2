#pragma once
// The option tables (agents/common/option_table.h) of the placers that take `--set`
// options: rainbow-pp, rainbow-opp / rainbow-adp, colocrl, hdp. Each method's registration
// lists its table's schema; `placer place --set` applies it. Torch-free.

#include "agents/seq2seq/colocrl.h"
#include "agents/common/option_table.h"
#include "agents/gdp/gdp.h"
#include "agents/seq2seq/hdp.h"
#include "agents/api/placer.h"
#include "agents/rainbow/rainbow_opp.h"
#include "agents/rainbow/rainbow_pp.h"

namespace placer {

const OptionTable<RainbowPPOptions>& rainbow_pp_option_table();
/// The placer's keys, then every RainbowConfig option of its agent (seed refused: --seed).
const OptionTable<RainbowOppOptions>& rainbow_opp_option_table();
const OptionTable<ColocrlOptions>& colocrl_option_table();
const OptionTable<HdpOptions>& hdp_option_table();
const OptionTable<GdpMethodOptions>& gdp_option_table();

/// MethodInfo::make_with of a method: `defaults` with the settings applied through `table`,
/// handed to `make` (O -> std::unique_ptr<Placer>).
template <class O, class Make>
std::function<std::unique_ptr<Placer>(const MethodSettings&)> configured_factory(
    const OptionTable<O>& table, O defaults, Make make) {
  return [&table, defaults, make](const MethodSettings& s) {
    O o = defaults;
    table.apply(&o, s.sets, s.flag);
    return make(o);
  };
}

}  // namespace placer
