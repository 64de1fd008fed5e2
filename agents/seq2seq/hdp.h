#pragma once
// The hierarchical placer (Mirhoseini et al. 2018, "A Hierarchical Model for Device
// Placement"): a feed-forward grouper (models/grouper.h) draws a group for every colocation
// unit, the group embeddings (mean of the members' features + the group adjacency) feed the
// attentional seq2seq placer (models/seq2seq.h), which draws a device per group; both are
// trained jointly online on the given graph with REINFORCE:
//   grad = 1/K sum_k (R_k - B) grad [log p(g_k; w_g) + log p(d_k | g_k; w_d)]
// Torch-free header; docs/colocrl_hdp.md.
#include <cstdint>
#include <memory>
#include <string>

#include "agents/seq2seq/colocrl.h"

namespace placer {

struct HdpOptions {
  Seq2SeqConfig net;        ///< hidden 512 as TF (smaller allowed)
  ReinforceConfig rl;
  int groups = 0;           ///< 0 = min(256, 20 x devices) (TF num_groups = None)
  int grouper_hidden = 64;  ///< TF grouping_hidden_size
  std::string grouper_activation = "none";  ///< TF: none (linear); or relu, tanh
  int adjacency_width = 20; ///< TF adj_embed_dim
  bool colocate = true;     ///< the grouper groups colocation units (else single ops)
  int64_t default_evaluations = 1000;  ///< when the budget gives neither limit
  std::string save_policy;  ///< as ColocrlOptions::save_policy (grouper + placer)
  std::string policy;       ///< as ColocrlOptions::policy
};

/// Number of groups HDP uses for `num_devices` devices: options.groups, or min(256, 20 x d).
int hdp_num_groups(const HdpOptions& options, int num_devices);

/// Online HDP on one problem; budget and result as colocrl_search.
LearnedSearchResult hdp_search(const Problem& problem, const HdpOptions& options,
                               const SearchBudget& budget);

std::unique_ptr<Placer> make_hdp_placer(HdpOptions options = {});
/// The options of hdp (agents/seq2seq/hdp_options.cpp).
const OptionTable<HdpOptions>& hdp_option_table();

}  // namespace placer
