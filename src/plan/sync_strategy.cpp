#include "src/plan/sync_strategy.h"

#include <cmath>
#include <map>

#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/plan/plan.h"
#include "src/util/error.h"

namespace placer {

const char* to_string(Synchronizer s) {
  switch (s) {
    case Synchronizer::kAllReduce: return "allreduce";
    case Synchronizer::kParameterServer: return "ps";
    case Synchronizer::kAllGather: return "allgather";
    case Synchronizer::kFactorBroadcast: return "sfb";
  }
  return "?";
}

bool parse_synchronizer(const std::string& s, Synchronizer* out) {
  static const std::map<std::string, Synchronizer> names = {
      {"allreduce", Synchronizer::kAllReduce}, {"all_reduce", Synchronizer::kAllReduce},
      {"ps", Synchronizer::kParameterServer},  {"allgather", Synchronizer::kAllGather},
      {"all_gather", Synchronizer::kAllGather}, {"sfb", Synchronizer::kFactorBroadcast}};
  const auto it = names.find(s);
  if (it == names.end()) return false;
  *out = it->second;
  return true;
}

const char* to_string(Compressor c) {
  switch (c) {
    case Compressor::kNone: return "none";
    case Compressor::kFP16: return "fp16";
    case Compressor::kOneBit: return "onebit";
    case Compressor::kTopK: return "topk";
    case Compressor::kPowerSGD: return "powersgd";
  }
  return "?";
}

bool parse_compressor(const std::string& s, Compressor* out) {
  for (Compressor c : {Compressor::kNone, Compressor::kFP16, Compressor::kOneBit,
                       Compressor::kTopK, Compressor::kPowerSGD}) {
    if (s == to_string(c)) {
      *out = c;
      return true;
    }
  }
  return false;
}

const char* to_string(SyncMatch m) {
  switch (m) {
    case SyncMatch::kName: return "name";
    case SyncMatch::kScope: return "scope";
    case SyncMatch::kGroup: return "group";
  }
  return "?";
}

bool VariableSync::operator==(const VariableSync& o) const {
  return synchronizer == o.synchronizer && algorithm == o.algorithm &&
         destinations == o.destinations && shards == o.shards &&
         local_aggregation == o.local_aggregation && compressor == o.compressor &&
         topk_ratio == o.topk_ratio && powersgd_rank == o.powersgd_rank &&
         staleness == o.staleness && async == o.async;
}

bool scope_matches(const std::string& pattern, const std::string& scope) {
  // Iterative wildcard match with backtracking to the last '*'.
  size_t p = 0, s = 0, star = std::string::npos, mark = 0;
  while (s < scope.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = s;
    } else if (p < pattern.size() && pattern[p] == scope[s]) {
      ++p, ++s;
    } else if (star != std::string::npos) {
      p = star + 1;
      s = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {

bool rule_covers(const SyncRule& r, const Op& op) {
  switch (r.match) {
    case SyncMatch::kName: return op.name == r.pattern;
    case SyncMatch::kScope: return scope_matches(r.pattern, op.scope);
    case SyncMatch::kGroup: return !op.group.empty() && op.group == r.pattern;
  }
  return false;
}

bool is_float(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kF64;
}

[[noreturn]] void fail(const std::string& where, const std::string& message) {
  throw ValidationError("synchronization." + where + ": " + message);
}

}  // namespace

const VariableSync& SynchronizationConfig::strategy_of(const Graph& g, OpId op) const {
  for (const SyncRule& r : rules) {
    if (rule_covers(r, g.op(op))) return r.strategy;
  }
  return default_strategy;
}

std::vector<OpId> sync_variables(const Graph& g) {
  std::vector<OpId> out;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const Op& op = g.op(o);
    if (op.param_bytes > 0 && op.phase == Phase::kForward) out.push_back(o);
  }
  return out;
}

std::vector<std::string> lossy_choices(const SynchronizationConfig& s, const Graph& g) {
  std::vector<std::string> out;
  if (!s.enabled) return out;
  std::map<std::string, int> count;  // choice -> variables
  for (OpId v : sync_variables(g)) {
    const VariableSync& st = s.strategy_of(g, v);
    if (is_lossy(st.compressor)) ++count[std::string(to_string(st.compressor)) + " compressor"];
    if (st.async) {
      ++count["async (unbounded staleness)"];
    } else if (st.staleness > 0) {
      ++count["staleness " + std::to_string(st.staleness)];
    }
  }
  for (const auto& [choice, n] : count) {
    out.push_back(choice + " on " + std::to_string(n) + (n == 1 ? " variable" : " variables"));
  }
  return out;
}

namespace {

void check_strategy(const std::string& where, const VariableSync& s, const Cluster& c) {
  if (s.synchronizer == Synchronizer::kAllReduce && s.algorithm != SyncScheme::kRing &&
      s.algorithm != SyncScheme::kTree && s.algorithm != SyncScheme::kHierarchical) {
    fail(where, std::string("all-reduce algorithm '") + to_string(s.algorithm) +
                    "' is not ring, tree or hierarchical");
  }
  if (s.synchronizer == Synchronizer::kParameterServer) {
    if (s.destinations.empty()) fail(where, "ps needs at least one destination device");
    for (int d : s.destinations) {
      if (d < 0 || d >= c.num_devices()) {
        fail(where, "ps destination " + std::to_string(d) + " is out of range (the cluster has " +
                        std::to_string(c.num_devices()) + " devices)");
      }
    }
    if (s.shards < 1 || s.shards > static_cast<int>(s.destinations.size())) {
      fail(where, "ps shards " + std::to_string(s.shards) + " must be in [1, " +
                      std::to_string(s.destinations.size()) + "] (the number of destinations)");
    }
  }
  if (s.compressor == Compressor::kPowerSGD && s.powersgd_rank < 1) {
    fail(where, "powersgd rank " + std::to_string(s.powersgd_rank) + " must be >= 1");
  }
  if (s.compressor == Compressor::kTopK && !(s.topk_ratio > 0 && s.topk_ratio <= 1)) {
    fail(where, "topk ratio " + std::to_string(s.topk_ratio) + " must be in (0, 1]");
  }
  if (s.staleness < 0) {
    fail(where, "staleness " + std::to_string(s.staleness) + " must be >= 0 (or async)");
  }
}

}  // namespace

void validate_synchronization(const SynchronizationConfig& s, const Graph& g, const Cluster& c) {
  if (!s.enabled) return;
  check_strategy("default", s.default_strategy, c);
  for (size_t i = 0; i < s.rules.size(); ++i) {
    check_strategy("variables[" + std::to_string(i) + "]", s.rules[i].strategy, c);
  }
  std::vector<int> used(s.rules.size(), 0);
  for (OpId v : sync_variables(g)) {
    const Op& op = g.op(v);
    std::string where = "default";
    const VariableSync* st = &s.default_strategy;
    for (size_t i = 0; i < s.rules.size(); ++i) {
      if (rule_covers(s.rules[i], op)) {
        used[i] = 1;
        where = "variables[" + std::to_string(i) + "]";
        st = &s.rules[i].strategy;
        break;
      }
    }
    if (st->compressor != Compressor::kNone && !is_float(op.dtype)) {
      fail(where, std::string("compressor ") + to_string(st->compressor) + " on variable '" +
                      op.name + "' of non-float dtype " + to_string(op.dtype));
    }
  }
  for (size_t i = 0; i < s.rules.size(); ++i) {
    if (!used[i]) {
      fail("variables[" + std::to_string(i) + "]", std::string("no variable has the ") +
                                                        to_string(s.rules[i].match) + " '" +
                                                        s.rules[i].pattern + "'");
    }
  }
}

}  // namespace placer
