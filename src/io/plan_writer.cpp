#include "src/io/plan_io.h"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <unordered_map>

#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/io/plan_file_rules.h"
#include "src/io/plan_sync_io.h"
#include "src/io/units.h"
#include "src/io/yaml_util.h"
#include "src/plan/plan_notes.h"
#include "src/util/error.h"

// Writing a plan file (docs/formats/plan.md); the reader is plan_reader.cpp.
namespace placer {

namespace {

using namespace plan_file;

// ---- Writer --------------------------------------------------------------------------

/// Most common value of `v` over `ids` (ties: the smallest); -1 when `ids` is empty.
template <typename Ids>
int most_common(const std::vector<int>& v, const Ids& ids, int num_devices) {
  std::vector<size_t> count(num_devices, 0);
  for (auto i : ids) {
    if (v[i] >= 0 && v[i] < num_devices) ++count[v[i]];
  }
  int best = -1;
  for (int d = 0; d < num_devices; ++d) {
    if (count[d] > 0 && (best < 0 || count[d] > count[best])) best = d;
  }
  return best;
}

/// Expert and context parallelism are format 1.2.
bool uses_format_1_2(const Plan& p) {
  return p.context_parallel.enabled() || p.context_parallel.comm != ContextParallelComm::kP2P ||
         p.expert_parallel.enabled();
}

bool uses_format_1_1(const Plan& p) {
  for (const OpPartition& q : p.partitions) {
    if (q.replicated || q.forward_collective != PartitionCollective::kAuto ||
        q.backward_collective != PartitionCollective::kAuto) {
      return true;
    }
  }
  for (const PipelineStage& s : p.pipeline.stages) {
    if (s.tensor_parallel != 1 || s.recompute != Recompute::kInherit) return true;
  }
  const PrecisionConfig& pc = p.precision;
  return p.data_parallel.zero_stage != 0 || !p.data_parallel.overlap || p.synchronization.enabled ||
         p.data_parallel.fsdp.enabled || p.recompute_every != 1 || pc.fp8 ||
         p.pipeline.virtual_stages != 1 || !p.pipeline.scatter_gather ||
         p.tensor_parallel.enabled() || p.tensor_parallel.sequence_parallel ||
         p.recompute != Recompute::kNone || pc.compute_set || pc.loss_scaling || pc.grad_clipping;
}

/// Writes a plan file's tree: one function per section, named and ordered like PlanReader's,
/// so reader and writer can be read side by side. Sections at their defaults are left out.
class PlanWriter {
 public:
  PlanWriter(const Graph& g, const Cluster& c, bool human_units)
      : g_(g), c_(c), human_units_(human_units) {}

  Json write(const Plan& p) const {
    try {
      p.validate(g_, c_);
    } catch (const ValidationError& e) {
      throw ValidationError(std::string("cannot write plan: ") + e.what());
    }
    Json root;
    // 1.0 files stay 1.0 when written back; any 1.1 field makes the file 1.1, any 1.2
    // field 1.2.
    root["format_version"] = uses_format_1_2(p) ? "1.2" : uses_format_1_1(p) ? "1.1" : "1.0";
    if (!p.graph_name.empty()) root["graph"] = p.graph_name;
    if (!p.method.empty()) root["method"] = p.method;
    // The sections in file order (the reader reads the pipeline first: placement needs it).
    root["placement"] = write_placement(p.placement, p.pipeline);
    if (!p.partitions.empty()) root["partitions"] = write_partitions(p.partitions);
    if (writes_pipeline(p.pipeline)) root["pipeline"] = write_pipeline(p.pipeline);
    if (writes_data_parallel(p.data_parallel)) {
      root["data_parallel"] = write_data_parallel(p.data_parallel);
    }
    if (p.tensor_parallel.enabled() || p.tensor_parallel.sequence_parallel) {
      root["tensor_parallel"] = write_tensor_parallel(p.tensor_parallel);
    }
    if (p.recompute != Recompute::kNone) root["recompute"] = write_recompute(p.recompute);
    if (p.recompute_every != 1) root["recompute_every"] = p.recompute_every;
    const PrecisionConfig& pc = p.precision;
    if (pc.compute_set || pc.fp8 || pc.loss_scaling || pc.grad_clipping) {
      root["precision"] = write_precision(pc);
    }
    if (p.context_parallel.enabled() || p.context_parallel.comm != ContextParallelComm::kP2P) {
      root["context_parallel"] = write_context_parallel(p.context_parallel);
    }
    if (p.expert_parallel.enabled()) {
      root["expert_parallel"] = write_expert_parallel(p.expert_parallel);
    }
    if (p.synchronization.enabled) {
      root["synchronization"] =
          synchronization_tree(p.synchronization, g_, [this](int d) { return dev(d); });
    }
    if (p.predicted.valid) root["predicted"] = write_predicted(p);
    return root;
  }

 private:
  std::string dev(int d) const { return c_.device(d).name; }

  Json device_list(const std::vector<int>& devices) const {
    Json out = Json::array();
    for (int d : devices) out.push_back(dev(d));
    return out;
  }

  static bool writes_pipeline(const PipelineConfig& pipe) {
    return pipe.enabled() || pipe.micro_batches != 1 || pipe.schedule != PipelineConfig{}.schedule;
  }

  Json write_pipeline(const PipelineConfig& pipe) const {
    Json pj;
    pj["micro_batches"] = pipe.micro_batches;
    pj["schedule"] = to_string(pipe.schedule);
    if (pipe.virtual_stages != 1) pj["virtual_stages"] = pipe.virtual_stages;
    if (!pipe.scatter_gather) pj["scatter_gather"] = false;
    const std::vector<OpId> fwd = forward_topo(g_);
    std::vector<uint32_t> pos(g_.num_ops(), UINT32_MAX);
    for (size_t k = 0; k < fwd.size(); ++k) pos[fwd[k]] = uint32_t(k);
    Json stages = Json::array();
    for (const PipelineStage& s : pipe.stages) stages.push_back(write_stage(s, fwd, pos));
    pj["stages"] = stages;
    return pj;
  }

  /// One stage; `pos` is each op's index in the forward topological order `fwd`.
  Json write_stage(const PipelineStage& s, const std::vector<OpId>& fwd,
                   const std::vector<uint32_t>& pos) const {
    Json sj;
    sj["devices"] = device_list(s.devices);
    if (s.tensor_parallel != 1) sj["tensor_parallel"] = s.tensor_parallel;
    if (s.recompute != Recompute::kInherit) sj["recompute"] = write_recompute(s.recompute);
    // A stage that is exactly a run of the forward topological order is a range.
    bool is_range = s.ops.size() >= 2 && pos[s.ops[0]] != UINT32_MAX;
    for (size_t k = 0; is_range && k < s.ops.size(); ++k) {
      is_range = pos[s.ops[0]] + k < fwd.size() && fwd[pos[s.ops[0]] + k] == s.ops[k];
    }
    if (is_range) {
      sj["range"] = Json{{"from", g_.op(s.ops.front()).name}, {"to", g_.op(s.ops.back()).name}};
    } else {
      Json ops = Json::array();
      for (OpId o : s.ops) ops.push_back(g_.op(o).name);
      sj["ops"] = ops;
    }
    return sj;
  }

  Json write_placement(const std::vector<int>& placement, const PipelineConfig& pipe) const {
    const PlacementRules rules = placement_rules(placement, pipe);
    Json pj;
    if (rules.default_device >= 0) pj["default"] = dev(rules.default_device);
    if (!rules.groups.empty()) {
      Json groups;
      const std::map<std::string, int> by_name(rules.groups.begin(), rules.groups.end());
      for (const auto& [grp, d] : by_name) groups[grp] = dev(d);
      pj["groups"] = groups;
    }
    Json named = Json::object();
    for (OpId i = 0; i < g_.num_ops(); ++i) {
      if (rules.named[i] >= 0) append_unique(&named, g_.op(i).name, dev(rules.named[i]));
    }
    if (!named.empty()) pj["ops"] = named;
    return pj;
  }

  /// Rules that reproduce `placement` in few lines: default = the most common device; a
  /// group entry where it saves lines; per-op entries for whatever still differs.
  PlacementRules placement_rules(const std::vector<int>& placement,
                                 const PipelineConfig& pipe) const {
    const size_t n = g_.num_ops();
    PlacementRules rules(g_, pipe);
    std::vector<OpId> all(n);
    for (OpId i = 0; i < n; ++i) all[i] = i;
    rules.default_device = most_common(placement, all, c_.num_devices());
    std::map<std::string, std::vector<OpId>> members;  // ops that fall back to their group
    for (OpId i = 0; i < n; ++i) {
      const Op& o = g_.op(i);
      if (!o.group.empty() && !(o.forward_op < n && o.forward_op != i)) {
        members[o.group].push_back(i);
      }
    }
    for (const auto& [grp, ops] : members) {
      const int d = most_common(placement, ops, c_.num_devices());
      size_t with = 0, without = 0;
      for (OpId i : ops) {
        with += placement[i] != d;
        without += placement[i] != rules.fallback(g_, i);
      }
      if (with + 1 < without) rules.groups[grp] = d;  // only when it saves lines
    }
    name_differing_ops(placement, &rules);
    return rules;
  }

  /// Names ops until the rules reproduce `placement` exactly (repeated, since named ops
  /// change what their backward ops inherit).
  void name_differing_ops(const std::vector<int>& placement, PlacementRules* rules) const {
    const size_t n = g_.num_ops();
    for (;;) {
      const std::vector<int> got = rules->resolve(g_);
      // Name the ops that are wrong on their own account; one whose forward op is wrong
      // may be fixed by naming the forward op. (All of them if that makes no progress, which
      // only a forward_op cycle can cause.)
      std::vector<OpId> wrong, roots;
      for (OpId i = 0; i < n; ++i) {
        if (got[i] == placement[i]) continue;
        wrong.push_back(i);
        const OpId f = g_.op(i).forward_op;
        if (!(f < n && f != i && got[f] != placement[f])) roots.push_back(i);
      }
      if (wrong.empty()) return;
      for (OpId i : roots.empty() ? wrong : roots) rules->named[i] = placement[i];
    }
  }

  static Json write_dim(int d) { return d == OpPartition::kReduceDim ? Json("reduce") : Json(d); }

  Json write_partitions(const std::vector<OpPartition>& partitions) const {
    Json parts = Json::array();
    for (const OpPartition& part : partitions) {
      Json e;
      e["op"] = g_.op(part.op).name;
      if (part.replicated) {
        e["replicated"] = true;
      } else if (part.levels.empty()) {
        e["dim"] = write_dim(part.dim);
      } else {
        Json lv = Json::array();
        for (int d : part.levels) lv.push_back(write_dim(d));
        e["levels"] = lv;
      }
      e["devices"] = device_list(part.devices);
      if (part.sharded_output) e["sharded_output"] = true;
      if (part.sharded_input) e["sharded_input"] = true;
      if (part.forward_collective != PartitionCollective::kAuto) {
        e["forward_collective"] = to_string(part.forward_collective);
      }
      if (part.backward_collective != PartitionCollective::kAuto) {
        e["backward_collective"] = to_string(part.backward_collective);
      }
      parts.push_back(e);
    }
    return parts;
  }

  static bool writes_data_parallel(const DataParallelConfig& dp) {
    const DataParallelConfig dflt;
    return dp.replicas != 1 || dp.sync != dflt.sync || dp.bucket_bytes != dflt.bucket_bytes ||
           !dp.replica_devices.empty() || dp.zero_stage != 0 || dp.overlap != dflt.overlap ||
           dp.fsdp.enabled;
  }

  Json write_data_parallel(const DataParallelConfig& dp) const {
    Json dj;
    dj["replicas"] = dp.replicas;
    dj["sync"] = to_string(dp.sync);
    if (human_units_)
      dj["bucket_size"] = format_bytes(dp.bucket_bytes);
    else
      dj["bucket_size"] = dp.bucket_bytes;
    if (!dp.replica_devices.empty()) dj["replica_devices"] = dp.replica_devices;
    if (dp.zero_stage != 0) dj["zero_stage"] = dp.zero_stage;
    if (dp.overlap != DataParallelConfig{}.overlap) dj["overlap"] = dp.overlap;
    if (dp.fsdp.enabled) dj["fsdp"] = write_fsdp(dp.fsdp);
    return dj;
  }

  static Json write_fsdp(const FsdpConfig& fs) {
    Json fj;
    fj["forward_prefetch"] = fs.forward_prefetch;
    fj["backward_prefetch"] = fs.backward_prefetch;
    fj["reshard_after_forward"] = fs.reshard_after_forward;
    fj["shard_group"] = fs.shard_group;
    if (fs.param_dtype_set) fj["param_dtype"] = to_string(fs.param_dtype);
    if (fs.reduce_dtype_set) fj["reduce_dtype"] = to_string(fs.reduce_dtype);
    return fj;
  }

  static Json write_recompute(Recompute r) { return to_string(r); }

  static Json write_tensor_parallel(const TensorParallelConfig& tp) {
    Json tj;
    tj["degree"] = tp.degree;
    tj["style"] = "megatron";
    if (tp.sequence_parallel) tj["sequence_parallel"] = true;
    return tj;
  }

  static Json write_precision(const PrecisionConfig& pc) {
    Json pj;
    if (pc.compute_set) pj["compute"] = to_string(pc.compute);
    if (pc.fp8) pj["fp8"] = true;
    if (pc.loss_scaling) pj["loss_scaling"] = true;
    if (pc.grad_clipping) pj["grad_clipping"] = true;
    return pj;
  }

  static Json write_context_parallel(const ContextParallelConfig& cp) {
    Json cj;
    cj["degree"] = cp.degree;
    cj["comm"] = to_string(cp.comm);
    return cj;
  }

  // An expert on one rank is written as that rank, a replicated one as its list of ranks.
  static Json write_expert_parallel(const ExpertParallelConfig& ep) {
    Json ej;
    ej["degree"] = ep.degree;
    if (ep.tensor_parallel != 1) ej["tensor_parallel"] = ep.tensor_parallel;
    if (ep.dispatcher != ExpertDispatcher::kAllToAll) ej["dispatcher"] = to_string(ep.dispatcher);
    if (ep.overlap) ej["overlap"] = true;
    if (ep.layers.empty()) return ej;
    Json layers = Json::array();
    for (const ExpertLayerMap& layer : ep.layers) {
      Json experts = Json::array();
      for (const std::vector<int>& ranks : layer.replicas) {
        experts.push_back(ranks.size() == 1 ? Json(ranks[0]) : Json(ranks));
      }
      layers.push_back(experts);
    }
    ej["layers"] = layers;
    return ej;
  }

  /// The prediction, and the notes derived from the plan (the reader skips them).
  Json write_predicted(const Plan& p) const {
    const PlanPrediction& pred = p.predicted;
    Json pr;
    if (human_units_)
      pr["step_time"] = format_time(pred.step_time);
    else
      pr["step_time"] = pred.step_time;
    pr["oom"] = pred.oom;
    if (!pred.peak_memory.empty()) {
      Json mem = Json::object();
      for (size_t d = 0; d < pred.peak_memory.size() && d < size_t(c_.num_devices()); ++d) {
        const uint64_t b = pred.peak_memory[d];
        if (b == 0) continue;
        append_unique(&mem, dev(int(d)), human_units_ ? Json(format_bytes(b)) : Json(b));
      }
      pr["peak_memory"] = mem;
    }
    const std::vector<std::string> notes = plan_notes(p);
    if (!notes.empty()) pr["notes"] = notes;
    return pr;
  }

  const Graph& g_;
  const Cluster& c_;
  bool human_units_;
};

Json plan_tree(const Plan& p, const Graph& g, const Cluster& c, bool human_units) {
  return PlanWriter(g, c, human_units).write(p);
}

}  // namespace

std::string plan_to_yaml(const Plan& p, const Graph& g, const Cluster& c) {
  return emit_yaml(plan_tree(p, g, c, true),
                   "Plan for graph '" + g.name() + "' on cluster '" + c.name +
                       "', written by placer.\nFormat: docs/formats/plan.md");
}

std::string plan_to_json(const Plan& p, const Graph& g, const Cluster& c) {
  return plan_tree(p, g, c, false).dump(2) + "\n";
}

void save_plan_yaml(const Plan& p, const Graph& g, const Cluster& c, const std::string& path) {
  write_text_file(path, plan_to_yaml(p, g, c));
}

void save_plan_json(const Plan& p, const Graph& g, const Cluster& c, const std::string& path) {
  write_text_file(path, plan_to_json(p, g, c));
}

void save_plan(const Plan& p, const Graph& g, const Cluster& c, const std::string& path) {
  if (ends_with(path, ".json"))
    save_plan_json(p, g, c, path);
  else
    save_plan_yaml(p, g, c, path);
}

}  // namespace placer
