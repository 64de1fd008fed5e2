// Auto-MAP's expected operator partitionings: rainbow-opp
// (agents/rainbow/rainbow_opp.h) on imported transformer and VGG graphs, with the simulator reward
// and with the paper's fixed +0.4 / +0.1 reward, and whether the sharding it returns is the
// one the paper reports:
//
//   transformers  Megatron-style blocks: the fused q/k/v projection and the first MLP
//                 weight column-split (their outputs split along the hidden dim), the
//                 attention output projection and the second MLP weight row-split (their
//                 outputs partial sums), layer-norm parameters replicated; the embedding
//                 table split
//   VGG           convolutions replicated, the large fully connected layers split
//
// Every graph is expanded to a training step (Adam) and placed on the first --degree
// devices of --cluster (default: one 8 x V100 NVLink server of Auto-MAP's configuration A;
// tensor-parallel all-reduces over the 25 Gbit/s link between its servers would only be
// slower, and Megatron-style sharding is used inside a server).
//
//   ./build/bench/opp_expectations
//   ./build/bench/opp_expectations --models transformer_enc12_d768 --rewards simulator
//
// Columns: reference = the all-replicated plan (one device); best = the returned plan;
// greedy = the trained agent's greedy episode; ret-pick = the final state of the episode
// with the highest return (what the episode reward alone would pick; Auto-MAP's choice with
// the paper reward); expected = the expected pattern built by hand in the env
// (expected_time below); found = episode / seconds when the best was first reached.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "agents/common/rainbow_config.h"
#include "agents/rainbow/rainbow_opp.h"
#include "bench/bench_common.h"
#include "env/opp_env.h"
#include "env/sharding.h"
#include "simulator/cost_model.h"
#include "simulator/simulator.h"
#include "src/io/cluster_yaml.h"

namespace placer {
namespace {

struct Args {
  std::vector<std::string> models;
  std::string cluster;
  std::vector<std::string> rewards = {"simulator", "paper"};
  int degree = 8;
  int episodes = 300;
  double max_seconds = 0;
  uint64_t seed = 1;
  bool no_linkage = false;
  bool no_greedy_prefix = false;
  bool no_auto_support = false;
  std::vector<std::string> agent_set;  ///< RainbowConfig overrides, key=value
};

using bench::model_path;
using bench::repo_path;
using bench::split_list;

void usage() {
  std::cerr << "usage: opp_expectations [--models a,b] [--cluster C] [--degree K]\n"
               "                        [--rewards simulator,paper] [--episodes N]\n"
               "                        [--max-seconds S] [--seed S] [--no-linkage]\n"
               "                        [--no-greedy-prefix] [--no-auto-support]\n"
               "                        [--set key=value ...]\n"
               "  models: names under datasets/models (without .graph.json) or paths\n";
}

Args parse(int argc, char** argv) {
  Args a;
  a.cluster = repo_path("datasets/clusters/automap_config_a.cluster.yaml");
  const std::string vgg =
      std::filesystem::exists(repo_path("datasets/models/vgg19.graph.json")) ? "vgg19" : "vgg13";
  a.models = {"transformer_enc6_d512", vgg};
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--models")
      a.models = split_list(value());
    else if (k == "--cluster")
      a.cluster = value();
    else if (k == "--rewards")
      a.rewards = split_list(value());
    else if (k == "--degree")
      a.degree = std::stoi(value());
    else if (k == "--episodes")
      a.episodes = std::stoi(value());
    else if (k == "--max-seconds")
      a.max_seconds = std::stod(value());
    else if (k == "--seed")
      a.seed = std::stoull(value());
    else if (k == "--no-linkage")
      a.no_linkage = true;
    else if (k == "--no-greedy-prefix")
      a.no_greedy_prefix = true;
    else if (k == "--no-auto-support")
      a.no_auto_support = true;
    else if (k == "--set")
      a.agent_set.push_back(value());
    else {
      usage();
      std::exit(2);
    }
  }
  return a;
}

std::string ms(double s) {
  if (std::isnan(s)) return "conflict";
  return bench::format_ms(s, 2, "oom");
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// How an op that owns a weight is partitioned, read off its output: "col" (output split
/// along its last dim: the weight's output features split), "row" (output partial: the
/// contraction dim split), "batch" (output split along another dim), "rep" (replicated) or
/// "?" (unknown).
std::string op_pattern(const Graph& g, OpId op, const PropagationResult& r) {
  const Op& o = g.op(op);
  if (o.outputs.empty()) return "?";
  const TensorId t = o.outputs[0];
  const Sharding& s = r.tensors[t];
  switch (s.kind) {
    case Sharding::Kind::kPartial:
      return "row";
    case Sharding::Kind::kReplicated:
      return "rep";
    case Sharding::Kind::kSplit: {
      const size_t rank = g.tensor(t).shape.size();
      return rank > 0 && s.dim == static_cast<int>(rank) - 1 ? "col" : "batch";
    }
    default:
      return "?";
  }
}

/// Variables of `op` and their shardings, "name shape sharding" each.
std::string var_text(const ShardingPropagator& prop, const PropagationResult& r, OpId op) {
  std::string out;
  for (size_t v = 0; v < prop.variables().size(); ++v) {
    const ShardVariable& var = prop.variables()[v];
    if (var.op != op) continue;
    std::string shape;
    for (int64_t d : var.shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    const Sharding& s = r.variables[v];
    const int64_t dim_size =
        s.kind == Sharding::Kind::kSplit && s.dim >= 0 && s.dim < int(var.shape.size())
            ? var.shape[static_cast<size_t>(s.dim)]
            : 0;
    if (!out.empty()) out += ", ";
    out += var.name.substr(var.name.rfind(':') + 1) + " [" + shape + "] " +
           s.to_string(dim_size, prop.degree());
  }
  return out;
}

bool vars_replicated(const ShardingPropagator& prop, const PropagationResult& r, OpId op) {
  for (size_t v = 0; v < prop.variables().size(); ++v) {
    if (prop.variables()[v].op == op && r.variables[v].kind != Sharding::Kind::kReplicated)
      return false;
  }
  return true;
}

/// The weight (or embedding table) of `op` is split. Biases are not looked at: a row-split
/// layer keeps its bias replicated (added once, after the all-reduce).
bool vars_split(const ShardingPropagator& prop, const PropagationResult& r, OpId op) {
  for (size_t v = 0; v < prop.variables().size(); ++v) {
    const ShardVariable& var = prop.variables()[v];
    if (var.op != op || !(ends_with(var.name, ":weight") || ends_with(var.name, ":table")))
      continue;
    return r.variables[v].kind == Sharding::Kind::kSplit;
  }
  return false;
}

/// The weight-owning forward ops of transformer block `layer`, by role.
struct Block {
  OpId qkv = kNoOp, out = kNoOp, fc1 = kNoOp, fc2 = kNoOp;
  std::vector<OpId> norms;
  std::vector<OpId> all;
};

std::map<int, Block> transformer_blocks(const Graph& g) {
  std::map<int, Block> blocks;
  for (OpId id = 0; id < g.num_ops(); ++id) {
    const Op& o = g.op(id);
    if (o.phase != Phase::kForward || o.param_bytes == 0 || o.layer < 0) continue;
    Block& b = blocks[o.layer];
    b.all.push_back(id);
    const bool mm = o.type == "MatMul" || o.type == "Gemm";
    if (o.scope.find("norm") != std::string::npos)
      b.norms.push_back(id);
    else if (mm && ends_with(o.scope, "self_attn") && o.type == "MatMul")
      b.qkv = id;
    else if (mm && (ends_with(o.scope, "self_attn") || ends_with(o.scope, "out_proj")))
      b.out = id;
    else if (mm && ends_with(o.scope, "linear1"))
      b.fc1 = id;
    else if (mm && ends_with(o.scope, "linear2"))
      b.fc2 = id;
  }
  return blocks;
}

/// Prints the expected-sharding check; *summary gets one line.
void check_transformer(const Graph& g, const ShardingPropagator& prop, const PropagationResult& r,
                       std::string* summary, bool detail) {
  const std::map<int, Block> blocks = transformer_blocks(g);
  int megatron = 0;
  int qkv_col = 0, fc1_col = 0, out_row = 0, fc2_row = 0, ln_rep = 0;
  for (const auto& [layer, b] : blocks) {
    auto pat = [&](OpId op) { return op == kNoOp ? std::string("-") : op_pattern(g, op, r); };
    const bool q = pat(b.qkv) == "col" && vars_split(prop, r, b.qkv);
    const bool f1 = pat(b.fc1) == "col" && vars_split(prop, r, b.fc1);
    const bool o = pat(b.out) == "row";
    const bool f2 = pat(b.fc2) == "row";
    bool ln = !b.norms.empty();
    for (OpId n : b.norms) ln = ln && vars_replicated(prop, r, n);
    qkv_col += q;
    fc1_col += f1;
    out_row += o;
    fc2_row += f2;
    ln_rep += ln;
    megatron += q && f1 && o && f2 && ln;
  }
  // The embedding: the Gather op(s) outside the blocks owning a table.
  int emb = 0, emb_split = 0;
  for (OpId id = 0; id < g.num_ops(); ++id) {
    const Op& o = g.op(id);
    if (o.phase != Phase::kForward || o.param_bytes == 0 || o.type != "Gather") continue;
    if (o.scope.find("position") != std::string::npos) continue;
    ++emb;
    emb_split += vars_split(prop, r, id);
  }
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "Megatron blocks %d/%zu (qkv col %d, out row %d, fc1 col %d, fc2 row %d, "
                "LN rep %d); embedding split %d/%d",
                megatron, blocks.size(), qkv_col, out_row, fc1_col, fc2_row, ln_rep, emb_split,
                emb);
  *summary = buf;
  if (!detail || blocks.empty()) return;
  const Block& b = blocks.begin()->second;
  std::printf("    block %d:\n", blocks.begin()->first);
  for (OpId id : b.all) {
    std::printf("      %-44s %-5s %s\n", g.op(id).name.c_str(), op_pattern(g, id, r).c_str(),
                var_text(prop, r, id).c_str());
  }
  for (OpId id = 0; id < g.num_ops(); ++id) {
    const Op& o = g.op(id);
    if (o.phase != Phase::kForward || o.param_bytes == 0 || o.layer >= 0) continue;
    std::printf("      %-44s %-5s %s\n", o.name.c_str(), op_pattern(g, id, r).c_str(),
                var_text(prop, r, id).c_str());
  }
}

void check_vgg(const Graph& g, const ShardingPropagator& prop, const PropagationResult& r,
               std::string* summary, bool detail) {
  int convs = 0, conv_rep = 0, fcs = 0, large = 0, large_split = 0;
  std::vector<OpId> fc_ops;
  for (OpId id = 0; id < g.num_ops(); ++id) {
    const Op& o = g.op(id);
    if (o.phase != Phase::kForward || o.param_bytes == 0) continue;
    if (o.type == "Conv") {
      ++convs;
      conv_rep += vars_replicated(prop, r, id);
    } else if (o.type == "Gemm" || o.type == "MatMul") {
      ++fcs;
      fc_ops.push_back(id);
      if (o.param_bytes >= (64ull << 20)) {  // >= 64 MB: the first two FC layers of VGG
        ++large;
        large_split += vars_split(prop, r, id);
      }
    }
  }
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "convs replicated %d/%d; large FC (>= 64 MB) split %d/%d; FC layers %d", conv_rep,
                convs, large_split, large, fcs);
  *summary = buf;
  if (!detail) return;
  for (OpId id : fc_ops) {
    std::printf("      %-44s %-5s %s\n", g.op(id).name.c_str(), op_pattern(g, id, r).c_str(),
                var_text(prop, r, id).c_str());
  }
}

/// Step time of the expected pattern, built in the env: every decision replicates except
/// the column split (the weight dim of the op's output features) of the q/k/v projection,
/// the first MLP weight and the LM head, and the vocab split of the embedding table
/// (transformers), or the output-feature split of the FC layers of >= 64 MB (VGG); the row
/// splits behind them follow from the linkage groups. NaN when it conflicts (e.g. attention
/// heads that the degree does not divide), +inf when it runs out of memory.
double expected_time(const Graph& g, const Cluster& c, const CostModel& cost,
                     const OppEnvOptions& eo, bool vgg) {
  OppEnvOptions o = eo;
  o.reward = OppEnvOptions::Reward::kSimulator;
  o.linkage = true;
  OppEnv env(g, c, cost, o);
  const ShardingPropagator& prop = env.propagator();
  auto wanted = [&](const ShardSlot& sl) {
    const ShardVariable& v = prop.variables()[static_cast<size_t>(sl.var)];
    const Op& op = g.op(v.op);
    const bool weight = ends_with(v.name, ":weight") || ends_with(v.name, ":table");
    if (!weight || v.shape.size() != 2 || op.outputs.empty()) return false;
    const std::vector<int64_t>& out = g.tensor(op.outputs[0]).shape;
    const int64_t features = out.empty() ? -1 : out.back();
    const bool col = v.shape[static_cast<size_t>(sl.dim)] == features &&
                     v.shape[static_cast<size_t>(1 - sl.dim)] != features;
    if (vgg) return op.type == "Gemm" && op.param_bytes >= (64ull << 20) && col;
    if (op.type == "Gather") return op.scope.find("position") == std::string::npos && sl.dim == 0;
    const bool role = (op.type == "MatMul" && ends_with(op.scope, "self_attn")) ||
                      ends_with(op.scope, "linear1") ||
                      op.scope.find("lm_head") != std::string::npos;
    return role && col;
  };
  env.reset();
  while (!env.done()) {
    const int a = wanted(env.slots()[static_cast<size_t>(env.current_slot())]) ? 1 : 0;
    if (env.step(a).conflict) return NAN;
  }
  return env.step_time();
}

int run(const Args& a) {
  const Cluster cluster = load_cluster_yaml(a.cluster);
  const CostModel cost = bench::default_cost_model(cluster);
  if (a.degree < 2 || a.degree > cluster.num_devices()) {
    std::cerr << "opp_expectations: --degree must be in [2, " << cluster.num_devices() << "]\n";
    return 2;
  }
  std::string sets;
  for (const std::string& kv : a.agent_set) sets += " " + kv;
  std::printf(
      "# cluster %s, devices 0..%d; %d episodes, seed %llu, linkage %s, greedy prefix "
      "%s, agent overrides:%s\n",
      cluster.name.c_str(), a.degree - 1, a.episodes, static_cast<unsigned long long>(a.seed),
      a.no_linkage ? "off" : "on", a.no_greedy_prefix ? "off" : "on",
      sets.empty() ? " none" : sets.c_str());
  std::printf("%-22s %-9s %5s %5s | %9s %9s %6s %9s %9s %9s | %5s %7s %6s %7s | %s\n", "model",
              "reward", "ops", "slots", "ref ms", "best ms", "ref/b", "greedy", "ret-pick",
              "expected", "found", "found s", "sims", "total s", "expected sharding");
  std::fflush(stdout);
  for (const std::string& m : a.models) {
    const std::string path = model_path(m);
    bench::StepProblem sp(bench::model_training_step(path), cluster, cost);
    const Graph& step = sp.graph();
    const Problem problem = sp.problem(bench::first_devices(cluster, a.degree));
    const ShardingPropagator prop(step, a.degree);
    const bool is_vgg = m.find("vgg") != std::string::npos;
    OppEnvOptions eo;
    eo.degree = a.degree;
    const double expected = expected_time(step, cluster, cost, eo, is_vgg);
    for (size_t ri = 0; ri < a.rewards.size(); ++ri) {
      RainbowOppOptions o = rainbow_opp_defaults(OppEnvOptions::Task::kOperatorPartitioning);
      if (!parse_opp_reward(a.rewards[ri], &o.env.reward)) {
        std::cerr << "opp_expectations: unknown reward '" << a.rewards[ri] << "'\n";
        return 2;
      }
      o.env.degree = a.degree;
      o.env.linkage = !a.no_linkage;
      o.episodes = a.episodes;
      o.greedy_prefix = !a.no_greedy_prefix;
      o.auto_support = !a.no_auto_support;
      apply_rainbow_overrides(&o.agent, a.agent_set);
      SearchBudget b;
      b.seed = a.seed;
      b.max_seconds = a.max_seconds;
      const RainbowOppReport rep = rainbow_opp_search(problem, b, o);
      std::string summary;
      // Per-variable decisions: for the simulator reward's run only (first reward listed).
      const bool detail = ri == 0;
      std::string name = std::filesystem::path(path).filename().string();
      name = name.substr(0, name.find(".graph.json"));
      std::printf("%-22s %-9s %5zu %5zu | %9s %9s %6.2f %9s %9s %9s | %5lld %7.1f %6lld %7.1f | ",
                  name.c_str(), a.rewards[ri].c_str(), step.num_ops(), prop.variable_slots().size(),
                  ms(rep.reference_time).c_str(), ms(rep.step_time).c_str(),
                  rep.reference_time / rep.step_time, ms(rep.greedy_step_time).c_str(),
                  ms(rep.return_step_time).c_str(), ms(expected).c_str(),
                  static_cast<long long>(rep.found_episode), rep.found_seconds,
                  static_cast<long long>(rep.simulations), rep.seconds);
      if (is_vgg) {
        check_vgg(step, prop, rep.propagation, &summary, false);
      } else {
        check_transformer(step, prop, rep.propagation, &summary, false);
      }
      std::printf("%s\n", summary.c_str());
      if (o.env.reward == OppEnvOptions::Reward::kPaper) {
        if (is_vgg) {
          check_vgg(step, prop, rep.return_propagation, &summary, false);
        } else {
          check_transformer(step, prop, rep.return_propagation, &summary, false);
        }
        std::printf("    ret-pick (Auto-MAP's choice): %s\n", summary.c_str());
      }
      if (detail) {
        std::printf("    returned plan, per variable (op, its output pattern, variables):\n");
        if (is_vgg) {
          check_vgg(step, prop, rep.propagation, &summary, true);
        } else {
          check_transformer(step, prop, rep.propagation, &summary, true);
        }
      }
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace placer

int main(int argc, char** argv) {
  try {
    return placer::run(placer::parse(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "opp_expectations: " << e.what() << "\n";
    return 1;
  }
}
