// GDP batch pretraining: imitation and PPO updates (randomness from (seed, update) alone),
// validation against the classical placers, and the training loop with its log lines and
// checkpoints. Instances, caches and checkpoints: agents/gdp_train.cpp.
#include "agents/gdp_train_impl.h"

namespace placer {

TrainUpdateStats GdpTrainer::Impl::run_imitation(int64_t u) {
  const auto t0 = Clock::now();
  std::mt19937_64 rng(stream_seed(config.seed, u, kTrainStream));
  TrainUpdateStats st;
  st.update = u;
  st.phase = "imitation";
  const auto picked = pick_instances(rng);
  const double episodes = double(picked.size());

  GdpNet net = policy.impl().net;
  adam->zero_grad();
  double loss_sum = 0, accuracy_sum = 0, reward_sum = 0;
  st.best_reward = -std::numeric_limits<double>::infinity();
  std::vector<double> ratios;
  for (const auto& [inst, live] : picked) {
    const std::vector<int16_t>& ref16 = reference_action.at(inst->key);
    const std::vector<int> ref(ref16.begin(), ref16.end());
    const torch::Tensor logits = net->forward(live->tensors);
    const torch::Tensor loss = -action_log_probs(logits, ref).mean();
    // One backward per instance keeps memory to one graph; the sum is the batch mean's gradient.
    (loss / episodes).backward();
    loss_sum += loss.item<double>();

    const std::vector<int> greedy = greedy_action(logits);
    size_t match = 0;
    for (size_t i = 0; i < greedy.size(); ++i) match += greedy[i] == ref[i];
    accuracy_sum += greedy.empty() ? 1.0 : double(match) / double(greedy.size());
    const StepResult r = live->env->step(greedy);
    ++st.evaluations;
    reward_sum += r.reward;
    st.best_reward = std::max(st.best_reward, r.reward);
    ratios.push_back(r.step_time / live->env->reference_time());
    st.instances.push_back(inst->key);
  }
  if (config.ppo.max_grad_norm > 0) {
    torch::nn::utils::clip_grad_norm_(net->parameters(), config.ppo.max_grad_norm);
  }
  adam->step();

  st.loss = loss_sum / episodes;
  st.accuracy = accuracy_sum / episodes;
  st.mean_reward = reward_sum / episodes;
  st.best_ratio = geomean(ratios);
  st.seconds = seconds_since(t0);
  return st;
}

TrainUpdateStats GdpTrainer::Impl::run_update(int64_t u) {
  const auto t0 = Clock::now();
  std::mt19937_64 rng(stream_seed(config.seed, u, kTrainStream));
  TrainUpdateStats st;
  st.update = u;
  st.phase = "ppo";
  const auto picked = pick_instances(rng);

  std::vector<PpoEpisode> batch(picked.size());
  std::vector<double*> baselines;
  double reward_sum = 0;
  int64_t reward_count = 0;
  st.best_reward = -std::numeric_limits<double>::infinity();
  std::vector<double> ratios;
  for (size_t b = 0; b < picked.size(); ++b) {
    LiveEnv& live = *picked[b].second;
    PpoEpisode& ep = batch[b];
    ep.tensors = &live.tensors;
    {
      torch::NoGradGuard no_grad;
      const torch::Tensor logits = policy.impl().net->forward(live.tensors);
      const torch::Tensor probs = torch::softmax(logits, -1);
      std::vector<torch::Tensor> old;
      for (int k = 0; k < config.ppo.samples; ++k) {
        ep.actions.push_back(sample_action(probs, rng));
        old.push_back(action_log_probs(logits, ep.actions.back()));
      }
      ep.old_log_probs = torch::stack(old);
    }
    Outcome best;
    for (const std::vector<int>& a : ep.actions) {
      const StepResult r = live.env->step(a);
      ++st.evaluations;
      ep.rewards.push_back(r.reward);
      reward_sum += r.reward;
      ++reward_count;
      st.best_reward = std::max(st.best_reward, r.reward);
      best.consider(r.step_time, r.oom);
    }
    ratios.push_back(best.time / live.env->reference_time());
    st.instances.push_back(picked[b].first->key);
    auto e = ema.find(picked[b].first->key);
    if (e == ema.end()) {
      e = ema.emplace(picked[b].first->key, std::numeric_limits<double>::quiet_NaN()).first;
    }
    baselines.push_back(&e->second);
  }
  compute_advantages(batch, config.ppo, baselines);
  for (auto it = ema.begin(); it != ema.end();) {  // never-set baselines are not state
    it = std::isnan(it->second) ? ema.erase(it) : std::next(it);
  }
  GdpNet net = policy.impl().net;
  const PpoStats ps = ppo_update(net, *adam, batch, config.ppo);

  st.mean_reward = reward_sum / double(reward_count);
  st.best_ratio = geomean(ratios);
  st.loss = ps.loss;
  st.entropy = ps.entropy;
  st.approx_kl = ps.approx_kl;
  st.clip_fraction = ps.clip_fraction;
  st.seconds = seconds_since(t0);
  return st;
}

TrainEvalStats GdpTrainer::Impl::evaluate() {
  TrainEvalStats out;
  out.update = updates_done;
  std::mt19937_64 rng(stream_seed(config.seed, updates_done, kEvalStream));
  std::vector<double> sampled_ratio, greedy_ratio;
  SimOptions so;
  so.critical_path = false;
  for (const Instance& inst : val_instances) {
    if (out.rows.size() >= size_t(config.eval_instances)) break;
    LiveEnv* live = env(inst);
    if (!live) continue;
    const ClusterSlot& cs = clusters[size_t(inst.cluster)];
    TrainEvalRow row;
    row.instance = inst.key;
    row.reference_time = live->env->reference_time();

    auto cl = classical.find(inst.key);
    if (cl == classical.end()) {
      Simulator sim(*live->graph, cs.cluster, *cs.cost);
      Problem problem{*live->graph, cs.cluster, *cs.cost, sim, live->env->allowed_devices()};
      std::string best_name;
      Outcome best;
      for (const std::string& m : config.eval_baselines) {
        try {
          SearchBudget budget;
          budget.seed = config.seed;
          const Plan plan = make_placer(m)->search(problem, budget);
          const SimResult r = sim.run(plan, so);
          const Outcome before = best;
          best.consider(r.step_time, r.oom);
          if (best.time != before.time || best.oom != before.oom) best_name = m;
        } catch (const std::exception&) {
          // a baseline that fails on this instance is skipped
        }
      }
      cl = classical.emplace(inst.key, std::make_pair(best_name, best.valid ? best.time : 0.0))
               .first;
    }
    row.best_classical = cl->second.first;
    row.best_classical_time = cl->second.second;

    Outcome sampled;
    {
      torch::NoGradGuard no_grad;
      const torch::Tensor logits = policy.impl().net->forward(live->tensors);
      const StepResult g = live->env->step(greedy_action(logits));
      ++evaluations;
      row.greedy_time = g.step_time;
      sampled.consider(g.step_time, g.oom);
      if (config.eval_samples > 0) {
        const torch::Tensor probs = torch::softmax(logits, -1);
        for (int k = 0; k < config.eval_samples; ++k) {
          const StepResult r = live->env->step(sample_action(probs, rng));
          ++evaluations;
          sampled.consider(r.step_time, r.oom);
        }
      }
    }
    row.sampled_time = sampled.time;
    if (row.best_classical_time > 0) {
      sampled_ratio.push_back(row.sampled_time / row.best_classical_time);
      greedy_ratio.push_back(row.greedy_time / row.best_classical_time);
    }
    out.rows.push_back(std::move(row));
  }
  out.geomean_vs_classical = geomean(sampled_ratio);
  out.geomean_greedy_vs_classical = geomean(greedy_ratio);
  trim_caches();

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
  while (m.updates_done < m.config.updates) {
    if (callbacks.should_stop && callbacks.should_stop()) break;
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
        m.policy.save(m.dir_path("best.pt"), m.make_meta());
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
