#pragma once
// Small GPT / LLaMA options, an op lookup and a graph rebuilt with edited ops, shared by the
// generator tests.

#include <stdexcept>
#include <string>
#include <utility>

#include "datasets/gpt.h"

namespace placer::testing {

/// h = 64, a = 4, kv = 2 (d_head 16), 2 layers, s = 16, b = 2, vocab 1000 (padded 1024),
/// bf16, flash attention (LLaMA's defaults otherwise).
inline LlamaOptions small_llama_options() {
  LlamaOptions o;
  o.layers = 2;
  o.hidden = 64;
  o.heads = 4;
  o.kv_heads = 2;
  o.seq_len = 16;
  o.batch = 2;
  o.vocab = 1000;
  return o;
}

/// The op named `name`; throws when there is none.
inline const Op& op_named(const Graph& g, const std::string& name) {
  const OpId id = g.find_op(name);
  if (id == kNoOp) throw std::runtime_error("no op " + name);
  return g.op(id);
}

/// `g` rebuilt with `edit(op)` applied to each of its ops (to garble an attribute, say).
template <class Edit>
Graph with_edited_ops(const Graph& g, Edit edit) {
  GraphBuilder b(g.name());
  b.set_batch_size(g.batch_size());
  b.set_attrs(g.attrs());
  for (Tensor t : g.tensors()) {
    t.producer = kNoOp;
    b.add_tensor(std::move(t));
  }
  for (Op op : g.ops()) {
    edit(op);
    b.add_op(std::move(op));
  }
  return b.build();
}

}  // namespace placer::testing
