#pragma once
// The option keys colocrl and hdp share (agents/seq2seq/colocrl_options.cpp,
// hdp_options.cpp). Torch-free.

#include "agents/common/option_fields.h"
#include "agents/common/option_table.h"
#include "agents/seq2seq/colocrl.h"

namespace placer {

/// The keys colocrl and hdp share (O = ColocrlOptions or HdpOptions).
template <class O>
void add_seq2seq_options(OptionTable<O>* t) {
  add_fields(t, &O::rl, R"(
    samples          placements sampled (and simulated) per REINFORCE update
    lr               Adam learning rate
    lr_decay         lr *= this every lr_decay_every updates
    lr_decay_start   updates before the decay starts
    lr_decay_every   updates between decays
    baseline_decay   moving-average baseline decay
    entropy          entropy bonus coefficient
    max_grad_norm    global gradient-norm clip (0 = off)
    failing_runtime  runtime charged to an OOM placement, in reference times
    logits_noise     exploration noise on the logits (x their RMS)
    noise_updates    updates with logits noise (0 = never)
    threads          LibTorch intra-op threads during the search (0 = unchanged))",
             &ReinforceConfig::samples, &ReinforceConfig::lr, &ReinforceConfig::lr_decay,
             &ReinforceConfig::lr_decay_start, &ReinforceConfig::lr_decay_every,
             &ReinforceConfig::baseline_decay, &ReinforceConfig::entropy,
             &ReinforceConfig::max_grad_norm, &ReinforceConfig::failing_runtime,
             &ReinforceConfig::logits_noise, &ReinforceConfig::noise_updates,
             &ReinforceConfig::threads);
  add_fields(t, &O::net, R"(
    hidden            LSTM width
    device_embedding  previous-device embedding width)",
             &Seq2SeqConfig::hidden, &Seq2SeqConfig::device_embedding);
  t->add(
      "attention", "bahdanau|luong", "attention of the decoder",
      [](O* o, const std::string& v) { o->net.attention = v; },
      [](const O& o) { return o.net.attention; });
  add_fields(t, &O::net, R"(
    bidirectional  bidirectional LSTM encoder
    tanh_constant  logits squashed by C tanh(x / C) (0 = off)
    temperature    logits divided by this)",
             &Seq2SeqConfig::bidirectional, &Seq2SeqConfig::tanh_constant,
             &Seq2SeqConfig::temperature);
  add_fields(t, R"(
    adjacency_width  neighbour ids hashed into this many buckets per direction
    colocate         units = colocation groups (else one op per unit))",
             &O::adjacency_width, &O::colocate);
  t->path(
       "save_policy", "write the final policy (and its .meta.json) there",
       [](auto& o) -> auto& { return o.save_policy; })
      .path(
          "policy", "start from this saved policy (same method, graph and sizes)",
          [](auto& o) -> auto& { return o.policy; });
}

}  // namespace placer
