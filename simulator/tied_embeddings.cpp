// Tied input / output embeddings under a pipeline (Simulator::Impl::prepare_tied_embeddings).
//
// Megatron-LM keeps a copy of the word embedding on the last pipeline stage when the output
// layer reuses it (GPT's tied embedding): that stage holds the copy's parameters and
// optimizer state, and after the last backward the two copies' gradients are all-reduced
// between the first and the last stage (each TP rank with its peer, in parallel), before
// the optimizer step (Megatron's embedding group, in finalize_model_grads). The simulator
// charges that all-reduce to the step barrier and the copy to the last stage's memory.
#include <algorithm>
#include <string>
#include <vector>

#include "simulator/cost_model.h"
#include "simulator/simulator_impl.h"

namespace placer {

void Simulator::Impl::prepare_tied_embeddings() {
  tied_time = 0;
  tied_memory.clear();
  if (!pipelined) return;
  for (OpId o = 0; o < n_ops; ++o) {
    if (op_phase[o] != Phase::kForward) continue;
    const Op& op = g.op(o);
    const auto attr = std::find_if(op.attrs.begin(), op.attrs.end(),
                                   [](const auto& a) { return a.first == "tied_to"; });
    if (attr == op.attrs.end()) continue;
    const OpId e = g.find_op(attr->second);
    if (e == kNoOp || op_stage[e] == op_stage[o]) continue;
    // The embedding's gradient shard that each TP rank all-reduces with its peer.
    uint64_t grad = 0;
    for (uint32_t k = bwd_off[e]; k < bwd_off[e + 1]; ++k) {
      const OpId b = bwd_of[k];
      for (uint32_t q = out_off[b]; q < out_off[b + 1]; ++q) {
        if (t_grad[out_t[q]]) grad += t_sync_bytes[out_t[q]];
      }
    }
    int ne = 0, no = 0;
    const int* de = devs_of(e, &ne);
    const int* dout = devs_of(o, &no);
    if (grad > 0) {
      std::vector<int> pair = {de[0], dout[0]};
      std::sort(pair.begin(), pair.end());
      tied_time += cost.group_collective_time(CollectiveKind::kAllReduce,
                                              groups[group_index(pair)], grad, SyncScheme::kAuto);
    }
    // The output layer's devices hold the embedding's parameters and optimizer state too.
    for (int k = 0; k < no; ++k) tied_memory.emplace_back(dout[k], resident_bytes(e));
  }
}

}  // namespace placer
