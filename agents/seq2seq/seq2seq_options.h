#pragma once
// The option keys colocrl and hdp share (agents/seq2seq/colocrl_options.cpp,
// hdp_options.cpp). Torch-free.

#include "agents/common/option_table.h"

namespace placer {

/// The keys colocrl and hdp share (O = ColocrlOptions or HdpOptions).
template <class O>
void add_seq2seq_options(OptionTable<O>* t) {
  t->integer(
       "samples", "placements sampled (and simulated) per REINFORCE update",
       [](auto& o) -> auto& { return o.rl.samples; })
      .number(
          "lr", "Adam learning rate", [](auto& o) -> auto& { return o.rl.lr; })
      .number(
          "lr_decay", "lr *= this every lr_decay_every updates",
          [](auto& o) -> auto& { return o.rl.lr_decay; })
      .integer(
          "lr_decay_start", "updates before the decay starts",
          [](auto& o) -> auto& { return o.rl.lr_decay_start; })
      .integer(
          "lr_decay_every", "updates between decays",
          [](auto& o) -> auto& { return o.rl.lr_decay_every; })
      .number(
          "baseline_decay", "moving-average baseline decay",
          [](auto& o) -> auto& { return o.rl.baseline_decay; })
      .number(
          "entropy", "entropy bonus coefficient", [](auto& o) -> auto& { return o.rl.entropy; })
      .number(
          "max_grad_norm", "global gradient-norm clip (0 = off)",
          [](auto& o) -> auto& { return o.rl.max_grad_norm; })
      .number(
          "failing_runtime", "runtime charged to an OOM placement, in reference times",
          [](auto& o) -> auto& { return o.rl.failing_runtime; })
      .number(
          "logits_noise", "exploration noise on the logits (x their RMS)",
          [](auto& o) -> auto& { return o.rl.logits_noise; })
      .integer(
          "noise_updates", "updates with logits noise (0 = never)",
          [](auto& o) -> auto& { return o.rl.noise_updates; })
      .integer(
          "threads", "LibTorch intra-op threads during the search (0 = unchanged)",
          [](auto& o) -> auto& { return o.rl.threads; })
      .integer(
          "hidden", "LSTM width", [](auto& o) -> auto& { return o.net.hidden; })
      .integer(
          "device_embedding", "previous-device embedding width",
          [](auto& o) -> auto& { return o.net.device_embedding; });
  t->add(
      "attention", "bahdanau|luong", "attention of the decoder",
      [](O* o, const std::string& v) { o->net.attention = v; },
      [](const O& o) { return o.net.attention; });
  t->flag(
       "bidirectional", "bidirectional LSTM encoder",
       [](auto& o) -> auto& { return o.net.bidirectional; })
      .number(
          "tanh_constant", "logits squashed by C tanh(x / C) (0 = off)",
          [](auto& o) -> auto& { return o.net.tanh_constant; })
      .number(
          "temperature", "logits divided by this",
          [](auto& o) -> auto& { return o.net.temperature; })
      .integer(
          "adjacency_width", "neighbour ids hashed into this many buckets per direction",
          [](auto& o) -> auto& { return o.adjacency_width; })
      .flag(
          "colocate", "units = colocation groups (else one op per unit)",
          [](auto& o) -> auto& { return o.colocate; });
  t->path(
       "save_policy", "write the final policy (and its .meta.json) there",
       [](auto& o) -> auto& { return o.save_policy; })
      .path(
          "policy", "start from this saved policy (same method, graph and sizes)",
          [](auto& o) -> auto& { return o.policy; });
}

}  // namespace placer
