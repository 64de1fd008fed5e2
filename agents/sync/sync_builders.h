#pragma once
// Prebuilt gradient-synchronisation strategies (the AutoDist strategy builders): a
// data-parallel plan (every op on one device, replicated on every device of the problem)
// with a per-variable synchronization section.
//  - horovod: ring all-reduce for every variable (Sergeev & Del Balso 2018).
//  - ps: parameter servers, one per host, variables assigned greedily to the least-loaded
//    server, variables above a server's fair share sharded over all (TF / AutoDist's
//    load-balanced PS), local aggregation on each host.
//  - parallax: sparse variables (embedding tables) on the sharded PS, dense ones all-reduced
//    (Kim et al. 2019).
//  - poseidon: fully connected layers by sufficient-factor broadcasting where the factors are
//    smaller than the matrix, everything else on the load-balanced PS (Zhang et al. 2017).

#include <string>
#include <vector>

#include "agents/api/placer.h"

namespace placer {

/// Every op on the first problem device, one replica per problem device (>= 2).
Plan replicated_plan(const Problem& p, const std::string& method);
/// One server device per host among `workers` (the first worker of each host).
std::vector<int> ps_servers(const Cluster& c, const std::vector<int>& workers);

/// A PS strategy over `servers`: sharded over all of them (shards = servers.size()).
VariableSync sharded_ps(const std::vector<int>& servers);
/// Whether Poseidon would broadcast sufficient factors for forward op `v` among `replicas`
/// workers: a MatMul whose per-worker factors b x (m + n) are smaller than its m x n.
bool sfb_pays(const Graph& g, OpId v, int replicas);

/// The builders' sections for a plan with `replicas` replicas on `workers`.
SynchronizationConfig horovod_sync();
SynchronizationConfig ps_sync(const Graph& g, const std::vector<int>& servers);
SynchronizationConfig parallax_sync(const Graph& g, const std::vector<int>& servers, int replicas);
SynchronizationConfig poseidon_sync(const Graph& g, const std::vector<int>& servers, int replicas);

/// Registers horovod, ps, parallax, poseidon (called by add_sync_methods).
void add_sync_builder_methods(std::vector<MethodInfo>* out);

}  // namespace placer
