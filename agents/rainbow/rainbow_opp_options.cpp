// The options of `rainbow-opp` and `rainbow-adp` (`placer place --method rainbow-opp --set
// KEY=VALUE`): the placer's keys, then every option of its Rainbow agent. Torch-free: built
// with or without LibTorch.
#include "agents/common/option_fields.h"
#include "agents/common/rainbow_config.h"
#include "agents/rainbow/rainbow_opp.h"

namespace placer {

const OptionTable<RainbowOppOptions>& rainbow_opp_option_table() {
  static const OptionTable<RainbowOppOptions> t = [] {
    using O = RainbowOppOptions;
    OptionTable<O> v("rainbow-opp/adp");
    v.integer(
        "degree", "devices 0 .. degree-1 (0 = every device of the problem)",
        [](auto& o) -> auto& { return o.env.degree; });
    v.add(
        "reward", "simulator|paper", "the MDP's reward",
        [](O* o, const std::string& x) {
          if (!parse_opp_reward(x, &o->env.reward)) {
            throw OptionValueError{"expected simulator or paper, got '" + x + "'"};
          }
        },
        [](const O& o) {
          return std::string(o.env.reward == OppEnvOptions::Reward::kPaper ? "paper" : "simulator");
        });
    using E = OppEnvOptions;
    add_fields(&v, &O::env, "linkage  linkage-group ordering and consequences", &E::linkage);
    add_fields(&v, R"(
      episodes       training episodes (a greedy one follows)
      greedy_prefix  explore from a greedy prefix of random length
      auto_support   set the C51 support from the reward)",
               &O::episodes, &O::greedy_prefix, &O::auto_support);
    add_fields(&v, &O::env, R"(
      partition_reward  paper reward per slot split
      replicate_reward  paper reward per slot replicated
      conflict_reward   reward of a conflict (ends the episode)
      oom_penalty       simulator reward of a step whose plan runs out of memory)",
               &E::partition_reward, &E::replicate_reward, &E::conflict_reward, &E::oom_penalty);
    const OptionTable<RainbowConfig>& agent = rainbow_config_table();
    for (const std::string& key : agent.keys()) {
      if (key == "seed") {
        v.refuse(key, "the agent's seed is --seed");
        continue;
      }
      v.add(
          key, "agent", "Rainbow agent option (agents/common/rainbow_config.h)",
          [key, &agent](O* o, const std::string& x) {
            agent.set_value(&o->agent, key, x);
            // An explicit support overrides the automatic one.
            if (key == "v_min" || key == "v_max") o->auto_support = false;
          },
          [key, &agent](const O& o) { return agent.value(o.agent, key); });
    }
    return v;
  }();
  return t;
}

}  // namespace placer
