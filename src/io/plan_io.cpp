#include "src/io/plan_io.h"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <unordered_map>

#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/io/plan_sync_io.h"
#include "src/io/units.h"
#include "src/io/yaml_util.h"
#include "src/plan/plan_notes.h"
#include "src/util/error.h"

namespace placer {

namespace {

using Json = nlohmann::ordered_json;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The placement rules of a plan file and how an op's device follows from them. Shared by
/// the reader and the writer so that what is written is exactly what is read back.
struct PlacementRules {
  int default_device = -1;
  std::unordered_map<std::string, int> groups;
  std::vector<int> named;      ///< per op: explicit device or -1
  std::vector<int> stage_dev;  ///< per op: first device of its pipeline stage or -1

  PlacementRules(const Graph& g, const PipelineConfig& pipe)
      : named(g.num_ops(), -1), stage_dev(g.num_ops(), -1) {
    for (const PipelineStage& s : pipe.stages) {
      if (s.devices.empty()) continue;
      for (OpId op : s.ops) {
        if (op < g.num_ops() && stage_dev[op] < 0) stage_dev[op] = s.devices[0];
      }
    }
  }

  /// Device of every op (-1 where none applies): named, else the forward op's, else the
  /// group's, else the stage's first device, else the default.
  std::vector<int> resolve(const Graph& g) const {
    const size_t n = g.num_ops();
    std::vector<int> dev(n, -1);
    std::vector<uint8_t> state(n, 0);  // 0 new, 1 in progress, 2 done
    std::vector<OpId> stack;
    for (OpId root = 0; root < n; ++root) {
      if (state[root] == 2) continue;
      // Follow forward_op links iteratively (a chain, guarded against cycles).
      stack.assign(1, root);
      while (!stack.empty()) {
        const OpId i = stack.back();
        state[i] = 1;
        const OpId f = g.op(i).forward_op;
        if (named[i] < 0 && f < n && f != i && state[f] == 0) {
          stack.push_back(f);
          continue;
        }
        if (named[i] >= 0)
          dev[i] = named[i];
        else if (f < n && f != i && state[f] == 2)
          dev[i] = dev[f];
        else
          dev[i] = fallback(g, i);
        state[i] = 2;
        stack.pop_back();
      }
    }
    return dev;
  }

  /// The device an op gets from its group, stage or the default.
  int fallback(const Graph& g, OpId i) const {
    const std::string& grp = g.op(i).group;
    if (!grp.empty()) {
      auto it = groups.find(grp);
      if (it != groups.end()) return it->second;
    }
    if (stage_dev[i] >= 0) return stage_dev[i];
    return default_device;
  }
};

std::vector<OpId> forward_topo(const Graph& g) {
  std::vector<OpId> f;
  for (OpId op : g.topo_order()) {
    if (g.op(op).phase == Phase::kForward) f.push_back(op);
  }
  return f;
}

/// True when `scope` is `prefix` or lies under it ("a.b" is under "a", "a.bc" is not).
bool scope_under(const std::string& scope, const std::string& prefix) {
  if (scope.compare(0, prefix.size(), prefix) != 0) return false;
  if (scope.size() == prefix.size() || prefix.empty()) return true;
  const char next = scope[prefix.size()];
  const char last = prefix.back();
  return next == '.' || next == '/' || last == '.' || last == '/';
}


// ---- Reader --------------------------------------------------------------------------

class PlanReader {
 public:
  PlanReader(const std::string& file, const Graph& g, const Cluster& c,
             std::vector<std::string>* warnings)
      : r_(file), g_(g), c_(c), warnings_(warnings) {}

  Plan read(const YAML::Node& root) {
    r_.check_format_version(root, kPlanFormatMajor, kPlanFormatMinor);
    r_.check_keys(root, "",
                  {"format_version", "graph", "method", "description", "placement", "partitions",
                   "pipeline", "data_parallel", "tensor_parallel", "recompute", "recompute_every",
                   "precision", "synchronization", "predicted"});
    Plan p;
    if (root["graph"]) {
      p.graph_name = r_.scalar(root["graph"], "graph");
      if (p.graph_name != g_.name()) {
        warn("graph: the plan was made for graph '" + p.graph_name + "', not '" + g_.name() + "'");
      }
    }
    if (root["method"]) p.method = r_.scalar(root["method"], "method");
    if (root["pipeline"]) read_pipeline(root["pipeline"], &p.pipeline);
    read_placement(root["placement"], p.pipeline, &p.placement);
    if (root["partitions"]) read_partitions(root["partitions"], &p.partitions);
    if (root["data_parallel"]) read_data_parallel(root["data_parallel"], &p.data_parallel);
    if (root["tensor_parallel"]) read_tensor_parallel(root["tensor_parallel"], &p.tensor_parallel);
    if (root["recompute"]) p.recompute = read_recompute(root["recompute"], "recompute", false);
    if (root["recompute_every"]) {
      p.recompute_every = int(r_.to_int(root["recompute_every"], "recompute_every", 1, 1 << 20));
    }
    if (root["precision"]) read_precision(root["precision"], &p.precision);
    if (root["synchronization"]) {
      read_synchronization(
          r_, root["synchronization"],
          [this](const YAML::Node& n, const std::string& f) { return device_list(n, f); },
          &p.synchronization);
    }
    if (root["predicted"]) read_predicted(root["predicted"], &p.predicted);
    for (const std::string& w : plan_warnings(p, g_)) warn(w);
    try {
      p.validate(g_, c_);
    } catch (const ValidationError& e) {
      throw ValidationError(format_context(r_.file(), "", e.what()));
    }
    return p;
  }

 private:
  void warn(const std::string& msg) {
    const std::string line = format_context(r_.file(), "", msg);
    if (warnings_)
      warnings_->push_back(line);
    else
      std::cerr << "warning: " << line << "\n";
  }

  int device(const YAML::Node& n, const std::string& field) const {
    const std::string s = r_.scalar(n, field);
    const int nd = c_.num_devices();
    const bool numeric = !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char ch) {
      return std::isdigit(ch);
    });
    if (numeric) {
      const long long v = s.size() > 9 ? (1ll << 40) : std::stoll(s);
      if (v >= nd) {
        r_.fail_validation(field, "device index " + s + " is out of range (cluster '" + c_.name +
                                      "' has " + std::to_string(nd) + " devices: 0.." +
                                      std::to_string(nd - 1) + ")");
      }
      return static_cast<int>(v);
    }
    const int d = c_.find_device(s);
    if (d < 0) {
      std::string hint = " (cluster '" + c_.name + "' has ";
      if (nd <= 8) {
        for (int i = 0; i < nd; ++i) hint += (i ? ", " : "") + c_.device(i).name;
      } else {
        hint += c_.device(0).name + " .. " + c_.device(nd - 1).name;
      }
      r_.fail_validation(field, "unknown device '" + s + "'" + hint + ")");
    }
    return d;
  }

  std::vector<int> device_list(const YAML::Node& n, const std::string& field) const {
    std::vector<int> out;
    if (n.IsScalar()) {
      out.push_back(device(n, field));
      return out;
    }
    r_.expect_sequence(n, field);
    for (size_t i = 0; i < n.size(); ++i) out.push_back(device(n[i], field_index(field, i)));
    return out;
  }

  OpId op(const YAML::Node& n, const std::string& field) const {
    return op_by_name(r_.scalar(n, field), field);
  }

  OpId op_by_name(const std::string& name, const std::string& field) const {
    const OpId id = g_.find_op(name);
    if (id != kNoOp) return id;
    std::string best;
    size_t best_d = 3;
    for (const Op& o : g_.ops()) {
      const size_t d = edit_distance(name, o.name, 2);
      if (d < best_d) best_d = d, best = o.name;
    }
    r_.fail_validation(field, "unknown op '" + name + "' (graph '" + g_.name() +
                                  "' has no op of that name" +
                                  (best.empty() ? ")" : "; did you mean '" + best + "'?)"));
  }

  OpId forward_op_named(const YAML::Node& n, const std::string& field) const {
    const OpId id = op(n, field);
    if (g_.op(id).phase != Phase::kForward) {
      r_.fail_validation(field, "op '" + g_.op(id).name + "' is a " + to_string(g_.op(id).phase) +
                                    " op; ranges run over forward ops");
    }
    return id;
  }

  void read_pipeline(const YAML::Node& n, PipelineConfig* pipe) {
    const std::string f = "pipeline";
    r_.check_keys(n, f,
                  {"micro_batches", "schedule", "virtual_stages", "scatter_gather", "stages"});
    if (n["micro_batches"]) {
      pipe->micro_batches =
          int(r_.to_int(n["micro_batches"], field_join(f, "micro_batches"), 1, 1 << 24));
    }
    if (n["schedule"]) {
      const std::string s = r_.scalar(n["schedule"], field_join(f, "schedule"));
      if (!parse_pipeline_schedule(s, &pipe->schedule)) {
        r_.fail(field_join(f, "schedule"), "unknown schedule '" + s + "' (use gpipe or 1f1b)");
      }
    }
    if (n["virtual_stages"]) {
      pipe->virtual_stages =
          int(r_.to_int(n["virtual_stages"], field_join(f, "virtual_stages"), 1, 1 << 16));
    }
    if (n["scatter_gather"]) {
      pipe->scatter_gather = r_.to_bool(n["scatter_gather"], field_join(f, "scatter_gather"));
    }
    const YAML::Node stages = r_.required(n, "stages", f);
    const std::string sf = field_join(f, "stages");
    r_.expect_sequence(stages, sf);
    std::vector<OpId> fwd;
    std::vector<uint32_t> pos;
    for (size_t s = 0; s < stages.size(); ++s) {
      const std::string stf = field_index(sf, s);
      const YAML::Node st = stages[s];
      r_.check_keys(st, stf, {"devices", "ops", "range", "scopes", "tensor_parallel", "recompute"});
      PipelineStage stage;
      stage.devices = device_list(r_.required(st, "devices", stf), field_join(stf, "devices"));
      if (st["tensor_parallel"]) {
        stage.tensor_parallel = int(r_.to_int(st["tensor_parallel"],
                                              field_join(stf, "tensor_parallel"), 1, 1 << 16));
      }
      if (st["recompute"]) {
        stage.recompute = read_recompute(st["recompute"], field_join(stf, "recompute"), false);
      }
      const int forms = int(bool(st["ops"])) + int(bool(st["range"])) + int(bool(st["scopes"]));
      if (forms != 1) {
        r_.fail(stf, "give exactly one of 'ops', 'range' or 'scopes' (found " +
                         std::to_string(forms) + ")");
      }
      if (fwd.empty() && (st["range"] || st["scopes"])) {
        fwd = forward_topo(g_);
        pos.assign(g_.num_ops(), UINT32_MAX);
        for (size_t k = 0; k < fwd.size(); ++k) pos[fwd[k]] = uint32_t(k);
      }
      if (st["ops"]) {
        const std::string of = field_join(stf, "ops");
        r_.expect_sequence(st["ops"], of);
        for (size_t k = 0; k < st["ops"].size(); ++k) {
          stage.ops.push_back(op(st["ops"][k], field_index(of, k)));
        }
      } else if (st["range"]) {
        const std::string rf = field_join(stf, "range");
        const YAML::Node rg = st["range"];
        r_.check_keys(rg, rf, {"from", "to"});
        const OpId a = forward_op_named(r_.required(rg, "from", rf), field_join(rf, "from"));
        const OpId b = forward_op_named(r_.required(rg, "to", rf), field_join(rf, "to"));
        if (pos[a] > pos[b]) {
          r_.fail_validation(rf, "'to' op '" + g_.op(b).name + "' comes before 'from' op '" +
                                     g_.op(a).name + "' in topological order");
        }
        stage.ops.assign(fwd.begin() + pos[a], fwd.begin() + pos[b] + 1);
      } else {
        const std::string pf = field_join(stf, "scopes");
        const YAML::Node sc = st["scopes"];
        r_.expect_sequence(sc, pf);
        std::vector<std::string> prefixes;
        for (size_t k = 0; k < sc.size(); ++k) {
          prefixes.push_back(r_.scalar(sc[k], field_index(pf, k)));
          bool any = false;
          for (OpId o : fwd) any = any || scope_under(g_.op(o).scope, prefixes.back());
          if (!any) {
            r_.fail_validation(field_index(pf, k),
                               "scope '" + prefixes.back() + "' matches no forward op");
          }
        }
        for (OpId o : fwd) {
          for (const std::string& pre : prefixes) {
            if (scope_under(g_.op(o).scope, pre)) {
              stage.ops.push_back(o);
              break;
            }
          }
        }
      }
      pipe->stages.push_back(std::move(stage));
    }
  }

  void read_placement(const YAML::Node& n, const PipelineConfig& pipe, std::vector<int>* out) {
    const std::string f = "placement";
    PlacementRules rules(g_, pipe);
    if (n.IsDefined() && !n.IsNull()) {
      r_.check_keys(n, f, {"default", "groups", "ops"});
      if (n["default"]) rules.default_device = device(n["default"], field_join(f, "default"));
      if (n["groups"]) {
        const std::string gf = field_join(f, "groups");
        r_.expect_map(n["groups"], gf);
        std::unordered_map<std::string, int> known;
        for (const Op& o : g_.ops()) {
          if (!o.group.empty()) known.emplace(o.group, 0);
        }
        for (auto it = n["groups"].begin(); it != n["groups"].end(); ++it) {
          const std::string grp = r_.scalar(it->first, gf);
          const std::string ef = gf + "['" + grp + "']";
          if (!known.count(grp)) {
            r_.fail_validation(ef, "unknown colocation group '" + grp + "' (no op of graph '" +
                                       g_.name() + "' is in it)");
          }
          if (rules.groups.count(grp)) r_.fail(ef, "group given twice");
          rules.groups[grp] = device(it->second, ef);
        }
      }
      if (n["ops"]) {
        const std::string of = field_join(f, "ops");
        r_.expect_map(n["ops"], of);
        for (auto it = n["ops"].begin(); it != n["ops"].end(); ++it) {
          const std::string name = r_.scalar(it->first, of);
          const std::string ef = of + "['" + name + "']";
          const OpId id = op_by_name(name, ef);
          if (rules.named[id] >= 0) r_.fail(ef, "op given twice");
          rules.named[id] = device(it->second, ef);
        }
      }
    }
    *out = rules.resolve(g_);
    for (OpId i = 0; i < out->size(); ++i) {
      if ((*out)[i] < 0) {
        // Under a pipeline the real problem is usually a forward op left out of the stages.
        if (pipe.enabled() && g_.op(i).phase == Phase::kForward && rules.stage_dev[i] < 0) {
          r_.fail_validation("pipeline.stages",
                             "forward op '" + g_.op(i).name + "' is in no stage");
        }
        r_.fail_validation(f, "op '" + g_.op(i).name +
                                  "' has no device: name it under placement.ops, its group "
                                  "under placement.groups, or set placement.default");
      }
    }
  }

  int read_dim(const YAML::Node& dim, const std::string& f) {
    if (dim.IsScalar() && dim.Scalar() == "reduce") return OpPartition::kReduceDim;
    if (dim.IsScalar() && !dim.Scalar().empty() &&
        std::isdigit(static_cast<unsigned char>(dim.Scalar()[0]))) {
      return int(r_.to_int(dim, f, 0, 64));
    }
    r_.fail(f, "expected a dimension index (0, 1, ...) or 'reduce', got '" +
                   (dim.IsScalar() ? dim.Scalar() : std::string("?")) + "'");
    return 0;
  }

  void read_partitions(const YAML::Node& n, std::vector<OpPartition>* out) {
    const std::string f = "partitions";
    r_.expect_sequence(n, f);
    for (size_t k = 0; k < n.size(); ++k) {
      const std::string pf = field_index(f, k);
      r_.check_keys(n[k], pf, {"op", "dim", "levels", "devices", "sharded_output", "sharded_input",
                               "replicated", "forward_collective", "backward_collective"});
      OpPartition part;
      part.op = op(r_.required(n[k], "op", pf), field_join(pf, "op"));
      if (n[k]["replicated"]) {
        part.replicated = r_.to_bool(n[k]["replicated"], field_join(pf, "replicated"));
      }
      for (const char* key : {"forward_collective", "backward_collective"}) {
        if (!n[k][key]) continue;
        const std::string cf = field_join(pf, key);
        const std::string v = r_.scalar(n[k][key], cf);
        PartitionCollective pc;
        if (!parse_partition_collective(v, &pc)) {
          r_.fail(cf, "unknown collective '" + v +
                          "' (use auto, none, all_reduce, all_gather or reduce_scatter)");
        }
        (std::string(key) == "forward_collective" ? part.forward_collective
                                                  : part.backward_collective) = pc;
      }
      // Exactly one of `dim` (one split) and `levels` (recursive halving); neither for a
      // replicated op.
      if (part.replicated) {
        if (n[k]["dim"] || n[k]["levels"]) {
          r_.fail(pf, "a replicated op is not split: give no 'dim' or 'levels'");
        }
        part.dim = 0;
      } else if (n[k]["levels"]) {
        if (n[k]["dim"]) r_.fail(pf, "give either 'dim' or 'levels', not both");
        const YAML::Node lv = n[k]["levels"];
        const std::string lf = field_join(pf, "levels");
        r_.expect_sequence(lv, lf);
        if (lv.size() == 0) r_.fail(lf, "needs at least one level");
        for (size_t l = 0; l < lv.size(); ++l) {
          part.levels.push_back(read_dim(lv[l], field_index(lf, l)));
        }
        part.dim = part.levels[0];
      } else {
        part.dim = read_dim(r_.required(n[k], "dim", pf), field_join(pf, "dim"));
      }
      part.devices = device_list(r_.required(n[k], "devices", pf), field_join(pf, "devices"));
      if (n[k]["sharded_output"]) {
        part.sharded_output = r_.to_bool(n[k]["sharded_output"], field_join(pf, "sharded_output"));
      }
      if (n[k]["sharded_input"]) {
        part.sharded_input = r_.to_bool(n[k]["sharded_input"], field_join(pf, "sharded_input"));
      }
      out->push_back(std::move(part));
    }
  }

  void read_data_parallel(const YAML::Node& n, DataParallelConfig* dp) {
    const std::string f = "data_parallel";
    r_.check_keys(
        n, f,
        {"replicas", "sync", "bucket_size", "replica_devices", "zero_stage", "overlap", "fsdp"});
    if (n["fsdp"]) read_fsdp(n["fsdp"], field_join(f, "fsdp"), &dp->fsdp);
    if (n["zero_stage"]) {
      dp->zero_stage = int(r_.to_int(n["zero_stage"], field_join(f, "zero_stage"), 0, 3));
    }
    if (n["overlap"]) dp->overlap = r_.to_bool(n["overlap"], field_join(f, "overlap"));
    // replicas defaults to 1: a pipeline plan uses this section for sync and bucket size only.
    if (n["replicas"]) {
      dp->replicas = int(r_.to_int(n["replicas"], field_join(f, "replicas"), 1, 1 << 20));
    }
    if (n["sync"]) {
      const std::string s = r_.scalar(n["sync"], field_join(f, "sync"));
      if (!parse_sync_scheme(s, &dp->sync)) {
        r_.fail(field_join(f, "sync"),
                "unknown sync scheme '" + s + "' (use ring, tree, hierarchical, ps or auto)");
      }
    }
    if (n["bucket_size"])
      dp->bucket_bytes = r_.to_bytes(n["bucket_size"], field_join(f, "bucket_size"));
    if (n["replica_devices"]) {
      const std::string rf = field_join(f, "replica_devices");
      r_.expect_sequence(n["replica_devices"], rf);
      for (size_t k = 0; k < n["replica_devices"].size(); ++k) {
        const std::string ef = field_index(rf, k);
        r_.expect_sequence(n["replica_devices"][k], ef);
        dp->replica_devices.push_back(device_list(n["replica_devices"][k], ef));
      }
    }
  }

  // Present = on; every field optional (docs/formats/plan.md).
  void read_fsdp(const YAML::Node& n, const std::string& f, FsdpConfig* fs) {
    r_.check_keys(n, f,
                  {"forward_prefetch", "backward_prefetch", "reshard_after_forward", "shard_group",
                   "param_dtype", "reduce_dtype"});
    fs->enabled = true;
    if (n["forward_prefetch"]) {
      fs->forward_prefetch =
          int(r_.to_int(n["forward_prefetch"], field_join(f, "forward_prefetch"), 0, 1 << 20));
    }
    if (n["backward_prefetch"]) {
      fs->backward_prefetch =
          int(r_.to_int(n["backward_prefetch"], field_join(f, "backward_prefetch"), 0, 1 << 20));
    }
    if (n["reshard_after_forward"]) {
      fs->reshard_after_forward =
          r_.to_bool(n["reshard_after_forward"], field_join(f, "reshard_after_forward"));
    }
    if (n["shard_group"]) {
      fs->shard_group = int(r_.to_int(n["shard_group"], field_join(f, "shard_group"), 0, 1 << 20));
    }
    if (n["param_dtype"]) {
      fs->param_dtype_set = true;
      fs->param_dtype = float_dtype(n["param_dtype"], field_join(f, "param_dtype"));
    }
    if (n["reduce_dtype"]) {
      fs->reduce_dtype_set = true;
      fs->reduce_dtype = float_dtype(n["reduce_dtype"], field_join(f, "reduce_dtype"));
    }
  }

  // f32, f16 or bf16; `what` names it in the error ("compute dtype").
  DType float_dtype(const YAML::Node& n, const std::string& f, const std::string& what = "dtype") {
    const std::string v = r_.scalar(n, f);
    DType d;
    if (!parse_dtype(v, &d) || !(d == DType::kF32 || d == DType::kF16 || d == DType::kBF16)) {
      r_.fail(f, "unknown " + what + " '" + v + "' (use f32, f16 or bf16)");
    }
    return d;
  }

  Recompute read_recompute(const YAML::Node& n, const std::string& f, bool) {
    const std::string v = r_.scalar(n, f);
    Recompute r;
    if (!parse_recompute(v, &r)) {
      r_.fail(f, "unknown recomputation '" + v + "' (use none, selective, selective_op or full)");
    }
    return r;
  }

  void read_tensor_parallel(const YAML::Node& n, TensorParallelConfig* tp) {
    const std::string f = "tensor_parallel";
    r_.check_keys(n, f, {"degree", "style", "sequence_parallel"});
    tp->degree = int(r_.to_int(r_.required(n, "degree", f), field_join(f, "degree"), 1, 1 << 16));
    if (n["style"]) {
      const std::string st = r_.scalar(n["style"], field_join(f, "style"));
      if (st != "megatron") {
        r_.fail(field_join(f, "style"), "unknown style '" + st + "' (only 'megatron')");
      }
    }
    if (n["sequence_parallel"]) {
      tp->sequence_parallel =
          r_.to_bool(n["sequence_parallel"], field_join(f, "sequence_parallel"));
    }
  }

  void read_precision(const YAML::Node& n, PrecisionConfig* pr) {
    const std::string f = "precision";
    r_.check_keys(n, f, {"compute", "fp8", "loss_scaling", "grad_clipping"});
    if (n["compute"]) {
      const std::string cf = field_join(f, "compute");
      DType d;
      if (parse_dtype(r_.scalar(n["compute"], cf), &d) && d == DType::kF8) {
        r_.fail(cf, "fp8 runs the GEMMs only: write 'fp8: true' with a 16-bit compute dtype");
      }
      pr->compute_set = true;
      pr->compute = float_dtype(n["compute"], cf, "compute dtype");
    }
    if (n["fp8"]) pr->fp8 = r_.to_bool(n["fp8"], field_join(f, "fp8"));
    if (n["loss_scaling"]) {
      pr->loss_scaling = r_.to_bool(n["loss_scaling"], field_join(f, "loss_scaling"));
    }
    if (n["grad_clipping"]) {
      pr->grad_clipping = r_.to_bool(n["grad_clipping"], field_join(f, "grad_clipping"));
    }
  }

  void read_predicted(const YAML::Node& n, PlanPrediction* pred) {
    const std::string f = "predicted";
    // notes: derived from the plan (plan_notes) and written again on save; not read.
    r_.check_keys(n, f, {"step_time", "peak_memory", "oom", "notes"});
    pred->valid = true;
    pred->step_time = r_.to_quantity(r_.required(n, "step_time", f), QuantityKind::kTime,
                                     field_join(f, "step_time"));
    if (n["oom"]) pred->oom = r_.to_bool(n["oom"], field_join(f, "oom"));
    if (n["peak_memory"]) {
      const std::string mf = field_join(f, "peak_memory");
      r_.expect_map(n["peak_memory"], mf);
      pred->peak_memory.assign(c_.num_devices(), 0);
      for (auto it = n["peak_memory"].begin(); it != n["peak_memory"].end(); ++it) {
        const std::string ef = mf + "['" + r_.scalar(it->first, mf) + "']";
        pred->peak_memory[device(it->first, ef)] = r_.to_bytes(it->second, ef);
      }
    }
  }

  YamlReader r_;
  const Graph& g_;
  const Cluster& c_;
  std::vector<std::string>* warnings_;
};

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
    // 1.0 files stay 1.0 when written back; any 1.1 field makes the file 1.1.
    root["format_version"] = uses_format_1_1(p) ? "1.1" : "1.0";
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

Plan parse_plan_yaml(const std::string& text, const std::string& filename, const Graph& g,
                     const Cluster& c, std::vector<std::string>* warnings) {
  const YAML::Node root = parse_yaml_text(text, filename);
  return with_yaml_errors(filename,
                          [&] { return PlanReader(filename, g, c, warnings).read(root); });
}

Plan parse_plan_json(const std::string& text, const std::string& filename, const Graph& g,
                     const Cluster& c, std::vector<std::string>* warnings) {
  const YAML::Node root = parse_json_as_yaml(text, filename);
  return with_yaml_errors(filename,
                          [&] { return PlanReader(filename, g, c, warnings).read(root); });
}

Plan load_plan(const std::string& path, const Graph& g, const Cluster& c,
               std::vector<std::string>* warnings) {
  const std::string text = read_text_file(path, "plan file");
  if (ends_with(path, ".json")) return parse_plan_json(text, path, g, c, warnings);
  return parse_plan_yaml(text, path, g, c, warnings);
}

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
