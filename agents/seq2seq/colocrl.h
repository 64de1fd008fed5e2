#pragma once
// ColocRL (Mirhoseini et al. 2017, "Device Placement Optimization with Reinforcement
// Learning"): an attentional seq2seq policy (models/seq2seq.h) places the colocation groups
// of one graph, one decoder step per group, and is trained online on that graph with
// REINFORCE against the simulator; the best placement sampled is returned. The hierarchical
// placer (HDP) shares the policy and the REINFORCE loop: agents/seq2seq/hdp.h. docs/colocrl_hdp.md
// describes both.
//
// This header is torch-free (the CLI and benchmarks include it). Without LibTorch,
// seq2seq_available() is false, the searches throw placer::Error saying so and
// add_seq2seq_methods registers nothing.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "agents/common/option_table.h"

namespace placer {

/// False when the project was built without LibTorch.
bool seq2seq_available();

/// REINFORCE options shared by colocrl and hdp (agents/seq2seq/reinforce.h). Defaults follow
/// TensorFlow's hierarchical_controller.py where it has one (named "TF" below).
struct ReinforceConfig {
  int samples = 8;              ///< K placements sampled (and simulated) per update
  double lr = 0.001;            ///< Adam learning rate (TF: 0.1; see docs/colocrl_hdp.md)
  double lr_decay = 0.95;       ///< TF lr_dec: lr *= this every lr_decay_every updates ...
  int lr_decay_start = 400;     ///< ... after this many updates (TF start_decay_step)
  int lr_decay_every = 50;      ///< TF decay_steps
  double baseline_decay = 0.9;  ///< moving-average baseline B <- d B + (1 - d) mean(R) (TF bl_dec)
  double entropy = 0.0;         ///< entropy bonus coefficient (TF: none)
  double max_grad_norm = 1.0;   ///< global gradient-norm clip, 0 = off (TF grad_bound)
  /// Runtime charged to an OOM placement, in units of the reference time (TF failing_signal
  /// = 100): reward -sqrt(100) = -10, GDP's oom_penalty.
  double failing_runtime = 100;
  /// Exploration (TF logits_std_noise, 0.5 there): while sampling, Gaussian noise of std
  /// logits_noise x RMS(logits) is added to every decoder step's logits ... Off by
  /// default: at 201-1001 placements TF's 0.5 kept the policy on one device more often
  /// than no noise (docs/colocrl_hdp.md, "Exploration").
  double logits_noise = 0;
  /// ... during the first noise_updates updates (TF stop_noise_step = 750); 0 = never.
  int noise_updates = 750;
  /// LibTorch intra-op threads during the search (restored after); 0 = leave LibTorch's
  /// setting. 1 by default: the per-step tensors are small, and on this project's shared
  /// 2-core machine two threads made a colocrl update ~8x slower (docs/colocrl_hdp.md).
  int threads = 1;
};

/// The seq2seq policy's sizes (models/seq2seq.h).
struct Seq2SeqConfig {
  int hidden = 512;                  ///< LSTM width (TF hidden_size; colocrl uses 256)
  int device_embedding = 32;         ///< previous-device embedding width
  std::string attention = "bahdanau";  ///< or "luong"
  bool bidirectional = true;         ///< TF bi_lstm
  double tanh_constant = 0;          ///< > 0: logits squashed (TF 1.0; 0 = off, see docs)
  double temperature = 1;            ///< logits divided by this (TF temperature 1.0)
};

struct ColocrlOptions {
  /// hidden 256 (HDP's 512 costs 4x per decoder step; one step per colocation group here)
  Seq2SeqConfig net = [] {
    Seq2SeqConfig n;
    n.hidden = 256;
    return n;
  }();
  ReinforceConfig rl;
  /// Decoder steps at most: with more colocation groups, consecutive groups in topological
  /// order are merged into max_steps blocks (a seq2seq cannot unroll thousands of steps).
  int max_steps = 256;
  int adjacency_width = 16;  ///< neighbour ids hashed into this many buckets per direction
  bool colocate = true;      ///< units = colocation groups (else one op per unit)
  int64_t default_evaluations = 1000;  ///< when the budget gives neither limit
  /// Non-empty: the final policy is written there (LibTorch archive) with a
  /// "<path>.meta.json" sidecar (sizes, graph), each atomically (temp file + rename).
  std::string save_policy;
  /// Non-empty: the search starts from this saved policy instead of a fresh one; it must
  /// have been saved by the same method for the same graph (units, steps) and net sizes
  /// (FormatError naming the mismatching field, FileError when missing).
  std::string policy;
};

/// What one online search did (colocrl_search / hdp_search).
struct LearnedSearchResult {
  Plan plan;                     ///< best placement seen, method set, predicted filled in
  double best_time = 0;          ///< its step time (s)
  bool best_oom = false;
  double reference_time = 0;     ///< best single-device time (rewards are relative to it)
  int64_t evaluations = 0;       ///< simulated placements
  int64_t best_evaluation = 0;   ///< 1-based index of the evaluation that found the best
  int64_t updates = 0;           ///< REINFORCE updates
  double seconds = 0;            ///< wall time
  int num_units = 0;             ///< colocation units of the problem
  int num_steps = 0;             ///< decoder steps (groups / blocks)
  std::vector<double> mean_reward;  ///< per update, over its K samples
  double greedy_time = 0;        ///< the final policy's argmax placement (0 when no budget left)
  std::vector<int> greedy_placement;  ///< that placement (device per op)
};

/// Online ColocRL on one problem. Budget: max_evaluations (simulated placements) and/or
/// max_seconds; neither: options.default_evaluations. seed drives parameter init and
/// sampling (same seed + evaluation budget = same plan). progress once per update.
/// ValidationError on bad options.
LearnedSearchResult colocrl_search(const Problem& problem, const ColocrlOptions& options,
                                   const SearchBudget& budget);

std::unique_ptr<Placer> make_colocrl_placer(ColocrlOptions options = {});
/// The options of colocrl (agents/seq2seq/colocrl_options.cpp).
const OptionTable<ColocrlOptions>& colocrl_option_table();

/// The Placer interface's view of an online search (colocrl / hdp).
SearchOutcome learned_search_outcome(LearnedSearchResult r);

/// Registers "colocrl" and "hdp" (not fast). Without LibTorch: nothing.
void add_seq2seq_methods(std::vector<MethodInfo>* out);

}  // namespace placer
