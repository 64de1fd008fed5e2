#pragma once
// `--agent-set KEY=VALUE` for the Rainbow placers (rainbow-pp, rainbow-opp, rainbow-adp):
// placer options by name, and every RainbowConfig option (agents/rainbow_config.h) for
// rainbow-opp / rainbow-adp; also for the seq2seq placers colocrl and hdp. Torch-free. See docs/rainbow.md ("Command-line options").
#include <string>
#include <vector>

#include "agents/colocrl.h"
#include "agents/hdp.h"
#include "agents/rainbow_opp.h"
#include "agents/rainbow_pp.h"

namespace placer::cli {

/// Keys: stages, micro_batches, episodes, prune, scope_depth, prune_radius,
/// epsilon_decay_fraction, search_layout, layout_rounds, layout_top, batch_size,
/// replay_capacity, target_update, lr, hidden. ValidationError on an unknown key (listing
/// the known ones), a bad value or a missing '='.
void apply_rainbow_pp_overrides(RainbowPPOptions* o, const std::vector<std::string>& key_values);

/// Keys: degree, reward (simulator | paper), linkage, episodes, greedy_prefix, auto_support,
/// partition_reward, replicate_reward, conflict_reward, oom_penalty, then every RainbowConfig
/// option (lr, hidden, n_step, ...) for the agent.
void apply_rainbow_opp_overrides(RainbowOppOptions* o, const std::vector<std::string>& key_values);

/// The option names of the two placers (for help texts and errors).
std::string rainbow_pp_option_names();
std::string rainbow_opp_option_names();

/// `--agent-set` for the seq2seq placers (docs/colocrl_hdp.md, "Options"). Keys of both:
/// samples, lr, lr_decay, lr_decay_start, lr_decay_every, baseline_decay, entropy,
/// max_grad_norm, failing_runtime, logits_noise, noise_updates, threads (rl.*), hidden,
/// device_embedding, attention, bidirectional, tanh_constant, temperature (net.*),
/// adjacency_width, colocate, save_policy, policy; colocrl also max_steps, hdp also groups,
/// grouper_hidden, grouper_activation. ValidationError as for the Rainbow placers.
void apply_colocrl_overrides(ColocrlOptions* o, const std::vector<std::string>& key_values);
void apply_hdp_overrides(HdpOptions* o, const std::vector<std::string>& key_values);
std::string colocrl_option_names();
std::string hdp_option_names();

}  // namespace placer::cli
