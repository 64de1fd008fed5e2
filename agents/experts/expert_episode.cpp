// The learned expert placer's decision process (agents/experts/expert_episode.h).
#include "agents/experts/expert_episode.h"

#include <algorithm>
#include <numeric>

#include "src/util/error.h"

namespace placer {

ExpertEpisode::ExpertEpisode(const std::vector<double>& share, const std::vector<int>& copies,
                             const ExpertTopology& topo, int slots_per_rank, double layer_position,
                             bool choose_replicas)
    : share_(share),
      copies_(copies),
      topo_(topo),
      slots_(slots_per_rank),
      layer_position_(layer_position),
      rank_load_(size_t(topo.ranks), 0.0),
      node_load_(size_t(topo.nodes()), 0.0),
      used_(size_t(topo.ranks), 0) {
  const double total = std::accumulate(share_.begin(), share_.end(), 0.0);
  const int slots = std::accumulate(copies_.begin(), copies_.end(), 0);
  if (!(total > 0) || copies_.size() != share_.size() || slots != topo.ranks * slots_per_rank) {
    throw ValidationError("expert-rl: the copies must fill the ranks' slots and shares sum > 0");
  }
  for (double& s : share_) s /= total;
  map_.replicas.resize(share_.size());
  if (choose_replicas) {
    replica_steps_ = replicas_left_ = slots - int(share_.size());
    std::fill(copies_.begin(), copies_.end(), 1);
  }
  if (replicas_left_ == 0) order_copies();
}

size_t ExpertEpisode::order_size() const { return size_t(topo_.ranks) * size_t(slots_); }

void ExpertEpisode::order_copies() {
  std::vector<double> weight;
  for (size_t e = 0; e < share_.size(); ++e) {
    for (int c = 0; c < copies_[e]; ++c) {
      order_.push_back(int(e));
      weight.push_back(share_[e] / copies_[e]);
    }
  }
  std::vector<int> idx(order_.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return weight[a] > weight[b]; });
  std::vector<int> sorted;
  for (int i : idx) sorted.push_back(order_[i]);
  order_ = std::move(sorted);
}

void ExpertEpisode::observe_replicas(std::vector<float>* x, std::vector<uint8_t>* mask) const {
  const double ranks = topo_.ranks;
  const double experts = double(share_.size());
  for (size_t e = 0; e < share_.size(); ++e) {
    const double c = copies_[e];
    mask->push_back(copies_[e] < topo_.ranks ? 1 : 0);
    const float row[kReplicaFeatures] = {
        float(share_[e] * experts), float(c), float(share_[e] / c * ranks),
        float(share_[e] / (c + 1) * ranks), float(layer_position_)};
    x->insert(x->end(), row, row + kReplicaFeatures);
  }
}

void ExpertEpisode::add_replica(int e) {
  ++copies_[size_t(e)];
  ++step_;
  if (--replicas_left_ == 0) order_copies();
}

void ExpertEpisode::observe(std::vector<float>* x, std::vector<uint8_t>* mask) const {
  const int e = order_[size_t(step_ - replica_steps_)];
  const double copy = share_[size_t(e)] / copies_[size_t(e)];
  const std::vector<int>& held = map_.replicas[size_t(e)];
  std::vector<uint8_t> node_has(node_load_.size(), 0);
  for (int r : held) node_has[size_t(topo_.node_of(r))] = 1;
  bool any = false;
  const size_t first = mask->size();
  for (int r = 0; r < topo_.ranks; ++r) {
    const bool free = used_[size_t(r)] < slots_;
    const bool clash = std::find(held.begin(), held.end(), r) != held.end();
    mask->push_back(free && !clash ? 1 : 0);
    any = any || (free && !clash);
    const int n = topo_.node_of(r);
    const float row[kRankFeatures] = {float(copy * topo_.ranks),
                                      float(rank_load_[size_t(r)] * topo_.ranks),
                                      float(double(slots_ - used_[size_t(r)]) / slots_),
                                      float(node_load_[size_t(n)] * topo_.nodes()),
                                      float(node_has[size_t(n)]),
                                      float(layer_position_)};
    x->insert(x->end(), row, row + kRankFeatures);
  }
  // Every free rank already holds the expert (cannot happen with EPLB's counts): any free one.
  for (int r = 0; r < topo_.ranks && !any; ++r) {
    (*mask)[first + size_t(r)] = used_[size_t(r)] < slots_ ? 1 : 0;
  }
}

void ExpertEpisode::describe_experts(std::vector<float>* x) const {
  for (size_t e = 0; e < share_.size(); ++e) {
    x->push_back(float(share_[e] * double(share_.size())));
    x->push_back(float(copies_[e]));
    x->push_back(float(layer_position_));
  }
}

void ExpertEpisode::place(int rank) {
  const int e = order_[size_t(step_ - replica_steps_)];
  const double copy = share_[size_t(e)] / copies_[size_t(e)];
  map_.replicas[size_t(e)].push_back(rank);
  rank_load_[size_t(rank)] += copy;
  node_load_[size_t(topo_.node_of(rank))] += copy;
  ++used_[size_t(rank)];
  ++step_;
  if (done()) {
    for (std::vector<int>& r : map_.replicas) std::sort(r.begin(), r.end());
  }
}

std::vector<int> eplb_copies(const std::vector<double>& share, const ExpertTopology& topo,
                             const EplbOptions& o) {
  const ExpertLayerMap m = eplb_layer(share, topo, o);
  std::vector<int> copies;
  for (const std::vector<int>& r : m.replicas) copies.push_back(int(r.size()));
  return copies;
}

}  // namespace placer
