#include "agents/common/method_option_tables.h"

#include "agents/rainbow/rainbow_config.h"

namespace placer {
namespace {

/// A path option: non-empty.
template <class O, class Field>
void add_path(OptionTable<O>* t, const std::string& key, const std::string& doc, Field field) {
  t->add(key, "path", doc,
         [field](O* o, const std::string& v) {
           if (v.empty()) throw OptionValueError{"expected a file path"};
           field(*o) = v;
         },
         [field](const O& o) { return std::string(field(o)); });
}

/// The keys colocrl and hdp share (O = ColocrlOptions or HdpOptions).
template <class O>
void add_seq2seq_options(OptionTable<O>* t) {
  t->integer("samples", "placements sampled (and simulated) per REINFORCE update",
             [](auto& o) -> auto& { return o.rl.samples; })
      .number("lr", "Adam learning rate", [](auto& o) -> auto& { return o.rl.lr; })
      .number("lr_decay", "lr *= this every lr_decay_every updates",
              [](auto& o) -> auto& { return o.rl.lr_decay; })
      .integer("lr_decay_start", "updates before the decay starts",
               [](auto& o) -> auto& { return o.rl.lr_decay_start; })
      .integer("lr_decay_every", "updates between decays",
               [](auto& o) -> auto& { return o.rl.lr_decay_every; })
      .number("baseline_decay", "moving-average baseline decay",
              [](auto& o) -> auto& { return o.rl.baseline_decay; })
      .number("entropy", "entropy bonus coefficient", [](auto& o) -> auto& { return o.rl.entropy; })
      .number("max_grad_norm", "global gradient-norm clip (0 = off)",
              [](auto& o) -> auto& { return o.rl.max_grad_norm; })
      .number("failing_runtime", "runtime charged to an OOM placement, in reference times",
              [](auto& o) -> auto& { return o.rl.failing_runtime; })
      .number("logits_noise", "exploration noise on the logits (x their RMS)",
              [](auto& o) -> auto& { return o.rl.logits_noise; })
      .integer("noise_updates", "updates with logits noise (0 = never)",
               [](auto& o) -> auto& { return o.rl.noise_updates; })
      .integer("threads", "LibTorch intra-op threads during the search (0 = unchanged)",
               [](auto& o) -> auto& { return o.rl.threads; })
      .integer("hidden", "LSTM width", [](auto& o) -> auto& { return o.net.hidden; })
      .integer("device_embedding", "previous-device embedding width",
               [](auto& o) -> auto& { return o.net.device_embedding; });
  t->add("attention", "bahdanau|luong", "attention of the decoder",
         [](O* o, const std::string& v) { o->net.attention = v; },
         [](const O& o) { return o.net.attention; });
  t->flag("bidirectional", "bidirectional LSTM encoder",
          [](auto& o) -> auto& { return o.net.bidirectional; })
      .number("tanh_constant", "logits squashed by C tanh(x / C) (0 = off)",
              [](auto& o) -> auto& { return o.net.tanh_constant; })
      .number("temperature", "logits divided by this",
              [](auto& o) -> auto& { return o.net.temperature; })
      .integer("adjacency_width", "neighbour ids hashed into this many buckets per direction",
               [](auto& o) -> auto& { return o.adjacency_width; })
      .flag("colocate", "units = colocation groups (else one op per unit)",
            [](auto& o) -> auto& { return o.colocate; });
  add_path(t, "save_policy", "write the final policy (and its .meta.json) there",
           [](auto& o) -> auto& { return o.save_policy; });
  add_path(t, "policy", "start from this saved policy (same method, graph and sizes)",
           [](auto& o) -> auto& { return o.policy; });
}

}  // namespace

const OptionTable<RainbowPPOptions>& rainbow_pp_option_table() {
  static const OptionTable<RainbowPPOptions> t = [] {
    OptionTable<RainbowPPOptions> v("rainbow-pp");
    v.integer("stages", "pipeline stages (0 = min(4, devices))",
              [](auto& o) -> auto& { return o.stages; })
        .integer("micro_batches", "micro-batches (0 = 4 x stages, capped by the batch)",
                 [](auto& o) -> auto& { return o.micro_batches; })
        .integer("episodes", "distinct cut sets to simulate (budget runs override it)",
                 [](auto& o) -> auto& { return o.episodes; })
        .flag("prune", "only pivots near the balanced cuts", [](auto& o) -> auto& { return o.prune; })
        .integer("scope_depth", "pivot granularity (-1 = auto)",
                 [](auto& o) -> auto& { return o.scope_depth; })
        .integer("prune_radius", "pivots kept either side of a balanced cut",
                 [](auto& o) -> auto& { return o.prune_radius; })
        .number("epsilon_decay_fraction", "epsilon 1 -> 0.1 over this fraction of the steps",
                [](auto& o) -> auto& { return o.epsilon_decay_fraction; })
        .flag("search_layout", "also search device groups and micro-batch counts",
              [](auto& o) -> auto& { return o.search_layout; })
        .integer("layout_rounds", "rounds of episodes with a layout search after each",
                 [](auto& o) -> auto& { return o.layout_rounds; })
        .integer("layout_top", "cut sets per layout search",
                 [](auto& o) -> auto& { return o.layout_top; })
        .integer("batch_size", "replay batch", [](auto& o) -> auto& { return o.batch_size; })
        .integer("replay_capacity", "replay transitions",
                 [](auto& o) -> auto& { return o.replay_capacity; })
        .integer("target_update", "learn() updates between target syncs",
                 [](auto& o) -> auto& { return o.target_update; })
        .number("lr", "Adam learning rate", [](auto& o) -> auto& { return o.lr; });
    v.integer_list("hidden", "MLP torso widths, e.g. [128, 128]",
                   [](auto& o) -> auto& { return o.hidden; });
    return v;
  }();
  return t;
}

const OptionTable<RainbowOppOptions>& rainbow_opp_option_table() {
  static const OptionTable<RainbowOppOptions> t = [] {
    using O = RainbowOppOptions;
    OptionTable<O> v("rainbow-opp/adp");
    v.integer("degree", "devices 0 .. degree-1 (0 = every device of the problem)",
              [](auto& o) -> auto& { return o.env.degree; });
    v.add("reward", "simulator|paper", "the MDP's reward",
          [](O* o, const std::string& x) {
            if (!parse_opp_reward(x, &o->env.reward)) {
              throw OptionValueError{"expected simulator or paper, got '" + x + "'"};
            }
          },
          [](const O& o) {
            return std::string(o.env.reward == OppEnvOptions::Reward::kPaper ? "paper"
                                                                             : "simulator");
          });
    v.flag("linkage", "linkage-group ordering and consequences",
           [](auto& o) -> auto& { return o.env.linkage; })
        .integer("episodes", "training episodes (a greedy one follows)",
                 [](auto& o) -> auto& { return o.episodes; })
        .flag("greedy_prefix", "explore from a greedy prefix of random length",
              [](auto& o) -> auto& { return o.greedy_prefix; })
        .flag("auto_support", "set the C51 support from the reward",
              [](auto& o) -> auto& { return o.auto_support; })
        .number("partition_reward", "paper reward per slot split",
                [](auto& o) -> auto& { return o.env.partition_reward; })
        .number("replicate_reward", "paper reward per slot replicated",
                [](auto& o) -> auto& { return o.env.replicate_reward; })
        .number("conflict_reward", "reward of a conflict (ends the episode)",
                [](auto& o) -> auto& { return o.env.conflict_reward; })
        .number("oom_penalty", "simulator reward of a step whose plan runs out of memory",
                [](auto& o) -> auto& { return o.env.oom_penalty; });
    const OptionTable<RainbowConfig>& agent = rainbow_config_table();
    for (const std::string& key : agent.keys()) {
      if (key == "seed") {
        v.refuse(key, "the agent's seed is --seed");
        continue;
      }
      v.add(key, "agent", "Rainbow agent option (agents/rainbow/rainbow_config.h)",
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

const OptionTable<ColocrlOptions>& colocrl_option_table() {
  static const OptionTable<ColocrlOptions> t = [] {
    OptionTable<ColocrlOptions> v("colocrl");
    add_seq2seq_options(&v);
    v.integer("max_steps", "decoder steps at most (groups merged into blocks beyond)",
              [](auto& o) -> auto& { return o.max_steps; });
    return v;
  }();
  return t;
}

const OptionTable<HdpOptions>& hdp_option_table() {
  static const OptionTable<HdpOptions> t = [] {
    using O = HdpOptions;
    OptionTable<O> v("hdp");
    add_seq2seq_options(&v);
    v.integer("groups", "groups of the grouper (0 = min(256, 20 x devices))",
              [](auto& o) -> auto& { return o.groups; })
        .integer("grouper_hidden", "grouper hidden width",
                 [](auto& o) -> auto& { return o.grouper_hidden; });
    v.add("grouper_activation", "none|relu|tanh", "grouper activation",
          [](O* o, const std::string& x) { o->grouper_activation = x; },
          [](const O& o) { return o.grouper_activation; });
    return v;
  }();
  return t;
}

const OptionTable<GdpMethodOptions>& gdp_option_table() {
  static const OptionTable<GdpMethodOptions> t = [] {
    using O = GdpMethodOptions;
    OptionTable<O> v("gdp");
    v.add("policy", "path", "policy file (default: the method's shipped policy in models/pretrained/)",
          [](O* o, const std::string& x) { o->policy = x; },
          [](const O& o) { return o.policy.empty() ? std::string("default") : o.policy; });
    v.integer("samples", "sampled placements scored besides the greedy one",
              [](auto& o) -> auto& { return o.place.samples; })
        .integer("finetune", "PPO updates on this graph after zero-shot (0 = zero-shot; "
                             "--budget-seconds / --budget-evals stop them early)",
                 [](auto& o) -> auto& { return o.place.finetune_updates; })
        .number("lr", "fine-tuning Adam learning rate", [](auto& o) -> auto& { return o.place.ppo.lr; })
        .integer("ppo_samples", "sampled placements per fine-tuning update",
                 [](auto& o) -> auto& { return o.place.ppo.samples; })
        .number("entropy", "fine-tuning entropy bonus", [](auto& o) -> auto& { return o.place.ppo.entropy; })
        .integer("epochs", "PPO epochs per fine-tuning update",
                 [](auto& o) -> auto& { return o.place.ppo.epochs; })
        .flag("colocate", "act on colocation units", [](auto& o) -> auto& { return o.place.colocate; });
    return v;
  }();
  return t;
}

}  // namespace placer
