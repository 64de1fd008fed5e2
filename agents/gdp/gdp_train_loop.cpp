// GDP batch pretraining: imitation and PPO updates (randomness from (seed, update) alone),
// validation against the classical placers, and the training loop with its log lines and
// checkpoints. Instances, caches and checkpoints: agents/gdp/gdp_train.cpp.
#include "agents/gdp/gdp_train_impl.h"

namespace placer {

namespace {

/// The update's log fields from the records of all ranks (in shard order).
void summarize(const std::vector<EpisodeRecord>& records, TrainUpdateStats& st) {
  double reward_sum = 0;
  int64_t reward_count = 0;
  st.best_reward = -std::numeric_limits<double>::infinity();
  std::vector<double> ratios;
  st.instances.clear();
  st.evaluations = 0;
  for (const EpisodeRecord& r : records) {
    for (double x : r.rewards) {
      reward_sum += x;
      ++reward_count;
      st.best_reward = std::max(st.best_reward, x);
    }
    st.evaluations += int64_t(r.rewards.size());
    ratios.push_back(r.ratio);
    st.instances.push_back(r.key);
  }
  st.mean_reward = reward_count > 0 ? reward_sum / double(reward_count) : 0;
  st.best_ratio = geomean(ratios);
}

}  // namespace

TrainUpdateStats GdpTrainer::Impl::run_imitation(int64_t u) {
  const auto t0 = Clock::now();
  TrainUpdateStats st;
  st.update = u;
  st.phase = "imitation";
  // This rank's instances: the picks of each of its shards, in shard order (envs and
  // references built on the rollout threads).
  Picks picks = pick_update(u);
  std::vector<std::pair<const Instance*, LiveEnv*>> picked;
  for (size_t b = 0; b < picks.instances.size(); ++b) {
    picked.emplace_back(picks.instances[b], picks.envs[b]);
  }
  std::vector<EpisodeRecord> records = std::move(picks.records);
  const double episodes = sum_all({double(picked.size())})[0];
  if (!(episodes > 0)) {
    throw ValidationError("max_ops: every train graph of " + config.corpus + " has more than " +
                          std::to_string(config.max_ops) + " ops in its training step");
  }

  GdpNet net = policy.impl().net;
  adam->zero_grad();
  std::vector<std::vector<int>> greedy(picked.size());
  for (size_t b = 0; b < picked.size(); ++b) {
    const auto& [inst, live] = picked[b];
    const std::vector<int16_t>& ref16 = reference_action.at(inst->key);
    const std::vector<int> ref(ref16.begin(), ref16.end());
    const torch::Tensor logits = net->forward(live->tensors);
    const torch::Tensor loss = -action_log_probs(logits, ref).mean();
    // One backward per instance keeps memory to one graph; the sum over the instances of
    // all ranks is the batch mean's gradient.
    (loss / episodes).backward();
    records[b].loss = loss.item<double>();
    greedy[b] = greedy_action(logits);
    size_t match = 0;
    for (size_t i = 0; i < greedy[b].size(); ++i) match += greedy[b][i] == ref[i];
    records[b].accuracy = greedy[b].empty() ? 1.0 : double(match) / double(greedy[b].size());
  }
  // The greedy placements' simulations on the rollout threads (one env per instance).
  parallel_for(picked.size(), threads, [&](size_t b) {
    LiveEnv* live = picked[b].second;
    const StepResult r = live->env->step(greedy[b]);
    records[b].rewards = {r.reward};
    records[b].ratio = r.step_time / live->env->reference_time();
  });
  reduce_gradients();
  if (config.ppo.max_grad_norm > 0) {
    torch::nn::utils::clip_grad_norm_(net->parameters(), config.ppo.max_grad_norm);
  }
  adam->step();

  const std::vector<EpisodeRecord> all = gather(std::move(records));
  summarize(all, st);
  double loss_sum = 0, accuracy_sum = 0;
  for (const EpisodeRecord& r : all) {
    loss_sum += r.loss;
    accuracy_sum += r.accuracy;
  }
  st.loss = loss_sum / episodes;
  st.accuracy = accuracy_sum / episodes;
  st.seconds = seconds_since(t0);
  return st;
}

TrainUpdateStats GdpTrainer::Impl::run_update(int64_t u) {
  const auto t0 = Clock::now();
  TrainUpdateStats st;
  st.update = u;
  st.phase = "ppo";

  // The instances of this rank's shards (envs and references built on the rollout threads),
  // then sampling: forward passes in shard order, each shard continuing its seeded stream.
  Picks picks = pick_update(u);
  std::vector<std::pair<const Instance*, LiveEnv*>> picked;
  std::vector<EpisodeRecord> records = std::move(picks.records);
  std::vector<PpoEpisode> batch;
  for (size_t b = 0; b < picks.instances.size(); ++b) {
    LiveEnv* live = picks.envs[b];
    std::mt19937_64& rng = picks.rngs[picks.stream[b]];
    picked.emplace_back(picks.instances[b], live);
    PpoEpisode ep;
    ep.tensors = &live->tensors;
    torch::NoGradGuard no_grad;
    const torch::Tensor logits = policy.impl().net->forward(live->tensors);
    const torch::Tensor probs = torch::softmax(logits, -1);
    std::vector<torch::Tensor> old;
    for (int k = 0; k < config.ppo.samples; ++k) {
      ep.actions.push_back(sample_action(probs, rng));
      old.push_back(action_log_probs(logits, ep.actions.back()));
    }
    ep.old_log_probs = torch::stack(old);
    batch.push_back(std::move(ep));
  }
  const double episodes = sum_all({double(batch.size())})[0];
  if (!(episodes > 0)) {
    throw ValidationError("max_ops: every train graph of " + config.corpus + " has more than " +
                          std::to_string(config.max_ops) + " ops in its training step");
  }

  // Rollouts: every instance's placements simulated on the rollout threads (an env is used
  // by one thread; results go to per-instance slots, so the thread count changes nothing).
  parallel_for(batch.size(), threads, [&](size_t b) {
    LiveEnv& live = *picked[b].second;
    PpoEpisode& ep = batch[b];
    Outcome best;
    for (const std::vector<int>& a : ep.actions) {
      const StepResult r = live.env->step(a);
      ep.rewards.push_back(r.reward);
      best.consider(r.step_time, r.oom);
    }
    records[b].rewards = ep.rewards;
    records[b].ratio = best.time / live.env->reference_time();
  });

  std::vector<double*> baselines;
  for (size_t b = 0; b < batch.size(); ++b) {
    auto e = ema.find(picked[b].first->key);
    if (e == ema.end()) {
      e = ema.emplace(picked[b].first->key, std::numeric_limits<double>::quiet_NaN()).first;
    }
    baselines.push_back(&e->second);
  }
  GdpNet net = policy.impl().net;
  PpoStats ps;
  if (!group) {
    compute_advantages(batch, config.ppo, baselines);
  } else {
    // Baselines per instance locally; the standardisation over the global batch.
    PpoConfig local = config.ppo;
    local.normalize_advantages = false;
    compute_advantages(batch, local, baselines);
    if (config.ppo.normalize_advantages) {
      double n = 0, sum = 0, sq = 0;
      for (const auto& ep : batch) {
        for (double a : ep.advantages) {
          n += 1;
          sum += a;
        }
      }
      const std::vector<double> ns = group->allreduce({n, sum});
      const double mean = ns[0] > 0 ? ns[1] / ns[0] : 0;
      for (const auto& ep : batch) {
        for (double a : ep.advantages) sq += (a - mean) * (a - mean);
      }
      const double sd = ns[0] > 0 ? std::sqrt(group->allreduce({sq})[0] / ns[0]) : 0;
      for (auto& ep : batch) {
        for (double& a : ep.advantages) a = sd > 1e-8 ? (a - mean) / sd : a - mean;
      }
    }
  }
  for (auto it = ema.begin(); it != ema.end();) {  // never-set baselines are not state
    it = std::isnan(it->second) ? ema.erase(it) : std::next(it);
  }
  ps = group ? dist_ppo_update(batch, episodes) : ppo_update(net, *adam, batch, config.ppo);

  summarize(gather(std::move(records)), st);
  st.loss = ps.loss;
  st.entropy = ps.entropy;
  st.approx_kl = ps.approx_kl;
  st.clip_fraction = ps.clip_fraction;
  st.seconds = seconds_since(t0);
  return st;
}

PpoStats GdpTrainer::Impl::dist_ppo_update(std::vector<PpoEpisode>& batch,
                                           double global_episodes) {
  // ppo_update (agents/gdp/gdp_ppo.cpp) over the union of the ranks' batches: each rank
  // backpropagates its episodes' losses divided by the global episode count, the gradients
  // are summed over the ranks (= the gradient of the global batch mean), then clipped and
  // applied identically everywhere.
  GdpNet net = policy.impl().net;
  const PpoConfig& config = this->config.ppo;
  PpoStats stats;
  std::vector<torch::Tensor> actions, advantages;
  for (const PpoEpisode& ep : batch) {
    const int64_t k = int64_t(ep.actions.size()), u = ep.tensors->num_units;
    auto a = torch::empty({k, u}, torch::kLong);
    int64_t* ap = a.data_ptr<int64_t>();
    for (int64_t s = 0; s < k; ++s) {
      for (int64_t j = 0; j < u; ++j) ap[s * u + j] = ep.actions[size_t(s)][size_t(j)];
    }
    // On the network's device (a no-op on the CPU).
    actions.push_back(a.unsqueeze(2).to(device));
    advantages.push_back(
        torch::tensor(ep.advantages, torch::kDouble).to(torch::kFloat).unsqueeze(1).to(device));
  }
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    adam->zero_grad();
    PpoPassSums sums;
    for (size_t i = 0; i < batch.size(); ++i) {
      ppo_episode_backward(net, batch[i], actions[i], advantages[i], config, global_episodes,
                           &sums);
    }
    reduce_gradients();
    if (config.max_grad_norm > 0) {
      torch::nn::utils::clip_grad_norm_(net->parameters(), config.max_grad_norm);
    }
    adam->step();
    const std::vector<double> g =
        group->allreduce({sums.loss, sums.entropy, sums.kl, sums.clipped, sums.count});
    stats.loss += g[0] / global_episodes;
    stats.entropy += g[1] / global_episodes;
    stats.approx_kl += g[4] > 0 ? g[2] / g[4] : 0;
    stats.clip_fraction += g[4] > 0 ? g[3] / g[4] : 0;
  }
  stats.average_over(config.epochs);
  return stats;
}

namespace gdp_train {

/// One validation candidate (position j of the evaluation order) of this rank.
struct EvalCandidate {
  size_t j = 0;
  LiveEnv* live = nullptr;  // null: skipped (graph over max_ops) or beyond the order
  bool need_classical = false;
  std::pair<std::string, double> classical;
  std::vector<int> greedy;
  std::vector<std::vector<int>> samples;
  int64_t simulations = 0;
  TrainEvalRow row;
};

}  // namespace gdp_train

namespace {

/// A candidate's row as the ranks exchange it (null when skipped).
Json candidate_json(const EvalCandidate& c) {
  if (c.live == nullptr) return Json(nullptr);
  const TrainEvalRow& r = c.row;
  return Json{{"instance", r.instance},
              {"reference_time", r.reference_time},
              {"best_classical", r.best_classical},
              {"best_classical_time", r.best_classical_time},
              {"greedy_time", num(r.greedy_time)},
              {"sampled_time", num(r.sampled_time)}};
}

TrainEvalRow eval_row_from_json(const Json& r) {
  auto dbl = [&](const char* k) {
    return r.at(k).is_null() ? std::numeric_limits<double>::infinity() : r.at(k).get<double>();
  };
  TrainEvalRow row;
  row.instance = r.at("instance").get<std::string>();
  row.reference_time = dbl("reference_time");
  row.best_classical = r.at("best_classical").get<std::string>();
  row.best_classical_time = dbl("best_classical_time");
  row.greedy_time = dbl("greedy_time");
  row.sampled_time = dbl("sampled_time");
  return row;
}

}  // namespace

std::vector<EvalCandidate> GdpTrainer::Impl::eval_candidates(size_t next, size_t rounds,
                                                             uint64_t eval_seed) {
  const size_t W = size_t(world());
  std::vector<EvalCandidate> mine(rounds);
  std::vector<const Instance*> insts;
  for (size_t k = 0; k < rounds; ++k) {
    mine[k].j = next + k * W + size_t(setup.rank);
    if (mine[k].j < val_instances.size()) insts.push_back(&val_instances[mine[k].j]);
  }
  const std::vector<LiveEnv*> lives = envs_of(insts);
  for (size_t k = 0; k < insts.size(); ++k) {
    EvalCandidate& c = mine[k];  // the candidates in range come first
    c.live = lives[k];
    if (c.live == nullptr) continue;
    const Instance& inst = val_instances[c.j];
    c.row.instance = inst.key;
    c.row.reference_time = c.live->env->reference_time();
    auto cl = classical.find(inst.key);
    c.need_classical = cl == classical.end();
    if (!c.need_classical) c.classical = cl->second;
    torch::NoGradGuard no_grad;
    const torch::Tensor logits = policy.impl().net->forward(c.live->tensors);
    c.greedy = greedy_action(logits);
    if (config.eval_samples > 0) {
      std::mt19937_64 rng(splitmix64(eval_seed + c.j));
      const torch::Tensor probs = torch::softmax(logits, -1);
      for (int s = 0; s < config.eval_samples; ++s) c.samples.push_back(sample_action(probs, rng));
    }
  }
  return mine;
}

void GdpTrainer::Impl::simulate_candidate(EvalCandidate& c) const {
  if (c.live == nullptr) return;
  PlacementEnv& env = *c.live->env;
  if (c.need_classical) {
    const Instance& inst = val_instances[c.j];
    PlanFrame frame;
    frame.micro_batches = inst.micro_batches;
    c.classical = best_classical(*c.live->graph, clusters[size_t(inst.cluster)],
                                 env.allowed_devices(), frame, config);
  }
  c.row.best_classical = c.classical.first;
  c.row.best_classical_time = c.classical.second;
  Outcome sampled;
  const StepResult g = env.step(c.greedy);
  ++c.simulations;
  c.row.greedy_time = g.step_time;
  sampled.consider(g.step_time, g.oom);
  for (const std::vector<int>& a : c.samples) {
    const StepResult r = env.step(a);
    ++c.simulations;
    sampled.consider(r.step_time, r.oom);
  }
  c.row.sampled_time = sampled.time;
}

std::vector<std::pair<bool, TrainEvalRow>> GdpTrainer::Impl::gather_eval_rows(
    const std::vector<EvalCandidate>& mine) const {
  // The pass's rows in candidate order (round k, then rank).
  std::vector<std::pair<bool, TrainEvalRow>> rows;
  if (!group) {
    for (const EvalCandidate& c : mine) rows.emplace_back(c.live != nullptr, c.row);
    return rows;
  }
  Json jm = Json::array();
  for (const EvalCandidate& c : mine) jm.push_back(candidate_json(c));
  const std::vector<std::string> texts = group->allgather(jm.dump());
  std::vector<Json> theirs;
  for (const std::string& text : texts) theirs.push_back(Json::parse(text));
  for (size_t k = 0; k < mine.size(); ++k) {
    for (size_t r = 0; r < size_t(world()); ++r) {
      const Json& row = theirs[r].at(k);
      rows.emplace_back(!row.is_null(), row.is_null() ? TrainEvalRow{} : eval_row_from_json(row));
    }
  }
  return rows;
}

void GdpTrainer::Impl::log_eval(const TrainEvalStats& out) const {
  Json rows = Json::array();
  for (const TrainEvalRow& r : out.rows) {
    rows.push_back({{"instance", r.instance},
                    {"reference_time", num(r.reference_time)},
                    {"best_classical", r.best_classical},
                    {"best_classical_time", num(r.best_classical_time)},
                    {"greedy_time", num(r.greedy_time)},
                    {"sampled_time", num(r.sampled_time)}});
  }
  append_log({{"type", "eval"},
              {"update", out.update},
              {"geomean_vs_classical", num(out.geomean_vs_classical)},
              {"geomean_greedy_vs_classical", num(out.geomean_greedy_vs_classical)},
              {"rows", rows}});
}

TrainEvalStats GdpTrainer::Impl::evaluate() {
  TrainEvalStats out;
  out.update = updates_done;
  const uint64_t eval_seed = stream_seed(config.seed, updates_done, kEvalStream);
  std::vector<double> sampled_ratio, greedy_ratio;
  // Sharded: the candidates are taken in rounds of `world`, rank r evaluating the r-th of each
  // round, and the rows are gathered in candidate order, so the table does not depend on the
  // world size. Each pass takes as many rounds as rows are still missing could fill at most
  // (so no candidate is evaluated that a round-by-round pass would not have evaluated); its
  // candidates are evaluated on the rollout threads, one env each, the forward passes and the
  // draws (seeded per candidate) on this thread before, the caches updated after in order.
  const int64_t evaluations_before = evaluations;
  const size_t W = size_t(world()), wanted = size_t(config.eval_instances);
  for (size_t next = 0; out.rows.size() < wanted && next < val_instances.size();) {
    const size_t rounds = (wanted - out.rows.size() + W - 1) / W;
    std::vector<EvalCandidate> mine = eval_candidates(next, rounds, eval_seed);
    parallel_for(mine.size(), threads, [&](size_t k) { simulate_candidate(mine[k]); });
    for (const EvalCandidate& c : mine) {
      if (c.live == nullptr) continue;
      if (c.need_classical) classical.emplace(c.row.instance, c.classical);
      evaluations += c.simulations;
    }
    for (auto& [ok, row] : gather_eval_rows(mine)) {
      if (!ok || out.rows.size() >= wanted) continue;
      if (row.best_classical_time > 0) {
        sampled_ratio.push_back(row.sampled_time / row.best_classical_time);
        greedy_ratio.push_back(row.greedy_time / row.best_classical_time);
      }
      out.rows.push_back(std::move(row));
    }
    next += rounds * W;
  }
  if (group) {  // every rank counts the simulator runs of all
    evaluations = evaluations_before +
                  int64_t(group->allreduce({double(evaluations - evaluations_before)})[0]);
  }
  out.geomean_vs_classical = geomean(sampled_ratio);
  out.geomean_greedy_vs_classical = geomean(greedy_ratio);
  trim_caches();
  log_eval(out);
  return out;
}

int64_t GdpTrainer::train(const Callbacks& callbacks) {
  Impl& m = *impl_;
  m.callbacks = &callbacks;
  struct Reset {
    Impl& m;
    ~Reset() { m.callbacks = nullptr; }
  } reset{m};
  bool checkpointed = true;
  m.sync_parameters();  // every rank starts from rank 0's network
  while (m.updates_done < m.config.updates) {
    double stop = callbacks.should_stop && callbacks.should_stop() ? 1 : 0;
    if (m.group) stop = m.group->allreduce({stop}, "max")[0];  // a stop on any rank stops all
    if (stop > 0) break;
    const int64_t u = m.updates_done + 1;
    const auto t0 = Clock::now();
    TrainUpdateStats st =
        u <= m.config.imitation_updates ? m.run_imitation(u) : m.run_update(u);
    m.updates_done = u;
    m.evaluations += st.evaluations;
    checkpointed = false;
    Json line = {{"type", "update"},
                 {"update", st.update},
                 {"phase", st.phase},
                 {"mean_reward", num(st.mean_reward)},
                 {"best_reward", num(st.best_reward)},
                 {"best_ratio", num(st.best_ratio)},
                 {"loss", num(st.loss)},
                 {"entropy", num(st.entropy)},
                 {"approx_kl", num(st.approx_kl)},
                 {"clip_fraction", num(st.clip_fraction)},
                 {"evaluations", st.evaluations},
                 {"seconds", st.seconds},
                 {"instances", st.instances}};
    if (st.phase == "imitation") line["accuracy"] = num(st.accuracy);
    m.append_log(line);
    m.trim_caches();
    if (callbacks.on_update) callbacks.on_update(st);
    if (m.config.eval_every > 0 && u % m.config.eval_every == 0) {
      const TrainEvalStats ev = m.evaluate();
      if (!ev.rows.empty() && ev.geomean_vs_classical > 0 &&
          ev.geomean_vs_classical < m.best_val_geomean) {
        m.best_val_geomean = ev.geomean_vs_classical;
        if (m.root()) m.policy.save(m.run.file("best.pt"), m.make_meta());
      }
      if (callbacks.on_eval) callbacks.on_eval(ev);
    }
    m.train_seconds += seconds_since(t0);
    if (u % m.config.checkpoint_every == 0 || u == m.config.updates) {
      m.checkpoint();
      checkpointed = true;
    }
  }
  if (!checkpointed) m.checkpoint();
  return m.updates_done;
}

}  // namespace placer
