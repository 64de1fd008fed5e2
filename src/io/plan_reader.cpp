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
#include "src/util/format.h"

// Reading a plan file (docs/formats/plan.md); the writer is plan_writer.cpp.
namespace placer {

namespace {

using namespace plan_file;

// ---- Reader --------------------------------------------------------------------------

class PlanReader {
 public:
  PlanReader(const std::string& file, const Graph& g, const Cluster& c,
             std::vector<std::string>* warnings)
      : r_(file), g_(g), c_(c), warnings_(warnings) {}

  Plan read(const YAML::Node& root) {
    r_.check_format_version(root, kPlanFormatMajor, kPlanFormatMinor);
    r_.check_keys(
        root, "",
        {"format_version", "graph", "method", "description", "placement", "partitions", "pipeline",
         "data_parallel", "tensor_parallel", "recompute", "recompute_every", "precision",
         "synchronization", "predicted", "context_parallel", "expert_parallel"});
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
    if (root["context_parallel"]) {
      read_context_parallel(root["context_parallel"], &p.context_parallel);
    }
    if (root["expert_parallel"]) read_expert_parallel(root["expert_parallel"], &p.expert_parallel);
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
      r_.fail_validation(field, "unknown device " + quote_short(s) + hint + ")");
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
    r_.fail_validation(field, "unknown op " + quote_short(name) + " (graph '" + g_.name() +
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
        r_.fail(field_join(f, "schedule"),
                "unknown schedule " + quote_short(s) + " (use gpipe or 1f1b)");
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
                               "scope " + quote_short(prefixes.back()) + " matches no forward op");
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
          const std::string ef = gf + "[" + quote_short(grp) + "]";
          if (!known.count(grp)) {
            r_.fail_validation(ef, "unknown colocation group " + quote_short(grp) +
                                       " (no op of graph '" + g_.name() + "' is in it)");
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
          const std::string ef = of + "[" + quote_short(name) + "]";
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
        r_.fail(field_join(f, "sync"), "unknown sync scheme " + quote_short(s) +
                                           " (use ring, tree, hierarchical, ps or auto)");
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
      r_.fail(f, "unknown " + what + " " + quote_short(v) + " (use f32, f16 or bf16)");
    }
    return d;
  }

  Recompute read_recompute(const YAML::Node& n, const std::string& f, bool) {
    const std::string v = r_.scalar(n, f);
    Recompute r;
    if (!parse_recompute(v, &r)) {
      r_.fail(f, "unknown recomputation " + quote_short(v) +
                     " (use none, selective, selective_op or full)");
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
        r_.fail(field_join(f, "style"), "unknown style " + quote_short(st) + " (only 'megatron')");
      }
    }
    if (n["sequence_parallel"]) {
      tp->sequence_parallel =
          r_.to_bool(n["sequence_parallel"], field_join(f, "sequence_parallel"));
    }
  }

  void read_context_parallel(const YAML::Node& n, ContextParallelConfig* cp) {
    const std::string f = "context_parallel";
    r_.check_keys(n, f, {"degree", "comm"});
    cp->degree = int(r_.to_int(r_.required(n, "degree", f), field_join(f, "degree"), 1, 1 << 16));
    if (n["comm"]) {
      const std::string v = r_.scalar(n["comm"], field_join(f, "comm"));
      if (!parse_context_parallel_comm(v, &cp->comm)) {
        r_.fail(field_join(f, "comm"), "unknown exchange '" + v + "' (use p2p, a2a or allgather)");
      }
    }
  }

  void read_expert_parallel(const YAML::Node& n, ExpertParallelConfig* ep) {
    const std::string f = "expert_parallel";
    r_.check_keys(n, f, {"degree", "tensor_parallel", "dispatcher", "overlap", "layers"});
    ep->degree = int(r_.to_int(r_.required(n, "degree", f), field_join(f, "degree"), 1, 1 << 16));
    if (n["tensor_parallel"]) {
      ep->tensor_parallel =
          int(r_.to_int(n["tensor_parallel"], field_join(f, "tensor_parallel"), 1, 1 << 16));
    }
    if (n["dispatcher"]) {
      const std::string v = r_.scalar(n["dispatcher"], field_join(f, "dispatcher"));
      if (!parse_expert_dispatcher(v, &ep->dispatcher)) {
        r_.fail(field_join(f, "dispatcher"),
                "unknown dispatcher '" + v + "' (use alltoall, deepep or hybridep)");
      }
    }
    if (n["overlap"]) ep->overlap = r_.to_bool(n["overlap"], field_join(f, "overlap"));
    if (!n["layers"]) return;
    const std::string lf = field_join(f, "layers");
    r_.expect_sequence(n["layers"], lf);
    for (size_t l = 0; l < n["layers"].size(); ++l) {
      ep->layers.push_back(read_expert_layer(n["layers"][l], field_index(lf, l)));
    }
  }

  // One MoE layer: per expert its EP rank, or the list of ranks holding its replicas.
  ExpertLayerMap read_expert_layer(const YAML::Node& n, const std::string& f) {
    r_.expect_sequence(n, f);
    ExpertLayerMap layer;
    for (size_t e = 0; e < n.size(); ++e) {
      const std::string ef = field_index(f, e);
      std::vector<int> ranks;
      if (n[e].IsScalar()) {
        ranks.push_back(int(r_.to_int(n[e], ef, 0, 1 << 16)));
      } else {
        r_.expect_sequence(n[e], ef);
        for (size_t k = 0; k < n[e].size(); ++k) {
          ranks.push_back(int(r_.to_int(n[e][k], field_index(ef, k), 0, 1 << 16)));
        }
      }
      layer.replicas.push_back(std::move(ranks));
    }
    return layer;
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

}  // namespace placer
