// Placeto family training (agents/placeto/placeto.h: placeto_train): checkpoints with exact
// resume and a fingerprint, the policy at the end; the run folder, log.jsonl and the
// fingerprint check are the harness's (agents/common/training_run.h).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <utility>

#include "agents/common/training_run.h"
#include "agents/placeto/placeto_internal.h"
#include "src/graph/training_step.h"
#include "src/util/files.h"

namespace placer {

using namespace placeto_internal;

namespace {

/// The settings a resumed run must share with its checkpoint (all but updates,
/// checkpoint_every, output_dir), as JSON in the checkpoint's sidecar.
Fingerprint train_fingerprint(const PlacetoTrainConfig& c, const Cluster& cluster) {
  Json ranges = Json::object();
  for (const auto& [name, r] : c.ranges.overrides) ranges[name] = r.to_string();
  return Json{{"family", c.family},
              {"size", to_string(c.ranges.size)},
              {"ranges", ranges},
              {"graphs", c.graphs},
              {"first_seed", c.first_seed},
              {"devices", c.devices},
              {"seed", c.seed},
              {"cluster", cluster.name},
              {"net", net_json(c.net)},
              {"rl",
               {{"episodes", c.rl.episodes},
                {"lr", c.rl.lr},
                {"entropy", c.rl.entropy},
                {"gamma", c.rl.gamma},
                {"max_grad_norm", c.rl.max_grad_norm},
                {"normalize_advantages", c.rl.normalize_advantages}}},
              {"mdp",
               {{"groups", c.mdp.groups},
                {"simulate_coarse", c.mdp.simulate_coarse},
                {"reward", to_string(c.mdp.reward)},
                {"start", to_string(c.mdp.start)},
                {"memory_threshold", c.mdp.memory_threshold},
                {"memory_penalty", c.mdp.memory_penalty}}}};
}

/// The training state a checkpoint restores besides the network and Adam.
struct TrainState {
  int64_t update = 0;
  double seconds = 0;
  std::string rng;  // std::mt19937_64 state, as operator<< writes it
};

Json instance_json(const Instance& in) {
  Json j{{"evaluations", in.evaluations}, {"best", in.best}, {"best_oom", in.best_oom},
         {"best_evaluation", in.best_evaluation}};
  if (!in.best.empty()) j["best_time"] = in.best_time;
  return j;
}

void save_checkpoint(const std::string& path, PlacetoNet& net, torch::optim::Adam& adam,
                     const Fingerprint& fingerprint, const TrainState& st,
                     const std::vector<std::unique_ptr<Instance>>& instances) {
  torch::serialize::OutputArchive archive;
  net->save(archive);
  torch::serialize::OutputArchive opt;
  adam.save(opt);
  archive.write("optimizer", opt);
  archive.write("update", torch::tensor(st.update, torch::kLong));
  Json graphs = Json::array();
  for (const auto& in : instances) graphs.push_back(instance_json(*in));
  const Json meta{{"format_version", kPolicyFormat}, {"method", "placeto"},
                  {"kind", "checkpoint"},           {"update", st.update},
                  {"seconds", st.seconds},          {"config", fingerprint},
                  {"rng", st.rng},                  {"graphs", graphs}};
  // Both files carry the update, checked on resume.
  policy_file::save_policy_pair(archive, path, meta, "checkpoint", /*indent=*/1);
}

/// Restores the network, Adam and the instances' records from the checkpoint `path`.
TrainState load_checkpoint(const std::string& path, PlacetoNet& net, torch::optim::Adam& adam,
                           const Fingerprint& fingerprint,
                           std::vector<std::unique_ptr<Instance>>& instances) {
  const std::string meta_path = path + ".meta.json";
  const Json j = policy_file::read_json_object(meta_path, "checkpoint sidecar");
  if (j.value("method", "") != "placeto" || j.value("kind", "") != "checkpoint")
    throw FormatError(format_context(meta_path, "", "not a placeto checkpoint"));
  TrainState st;
  st.update = get_field<int64_t>(j, "update", meta_path);
  st.seconds = get_field<double>(j, "seconds", meta_path);
  st.rng = get_field<std::string>(j, "rng", meta_path);
  const Json saved = j.contains("config") ? j.at("config") : Json::object();
  const std::string mismatch =
      resume_mismatch(fingerprint, saved, path,
                      "a resumed run keeps every setting but updates, checkpoint_every and "
                      "output_dir");
  if (!mismatch.empty()) throw ValidationError(mismatch);
  const Json graphs = j.value("graphs", Json::array());
  if (!graphs.is_array() || graphs.size() != instances.size())
    throw FormatError(format_context(meta_path, "graphs", "expected one record per graph"));
  try {
    for (size_t i = 0; i < instances.size(); ++i) {
      Instance& in = *instances[i];
      const Json& g = graphs[i];
      in.evaluations = g.at("evaluations").get<int64_t>();
      in.best = g.at("best").get<std::vector<int>>();
      in.best_oom = g.at("best_oom").get<bool>();
      in.best_evaluation = g.at("best_evaluation").get<int64_t>();
      in.best_time = in.best.empty() ? std::numeric_limits<double>::infinity()
                                     : g.at("best_time").get<double>();
      if (!in.best.empty() && in.best.size() != size_t(in.num_nodes))
        throw FormatError(format_context(meta_path, "graphs[" + std::to_string(i) + "].best",
                                         "has another group count than the graph"));
    }
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(format_context(meta_path, "graphs", e.what()));
  }
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    net->load(archive);
    torch::serialize::InputArchive opt;
    archive.read("optimizer", opt);
    adam.load(opt);
    torch::Tensor update;
    archive.read("update", update);
    if (update.item<int64_t>() != st.update)
      throw std::runtime_error("holds update " + std::to_string(update.item<int64_t>()) +
                               " but its sidecar " + std::to_string(st.update));
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw FormatError(format_context(path, "", "not a readable placeto checkpoint: " +
                                                   what.substr(0, what.find('\n'))));
  }
  return st;
}

void check_train_config(const PlacetoTrainConfig& cfg) {
  check_net_config(cfg.net, "placeto train: ");
  check_rl_mdp(cfg.rl, cfg.mdp, "placeto train: ");
  if (cfg.graphs < 1) throw ValidationError("placeto train: graphs must be >= 1");
  if (cfg.updates < 0) throw ValidationError("placeto train: updates must be >= 0");
  if (cfg.checkpoint_every < 1)
    throw ValidationError("placeto train: checkpoint_every must be >= 1");
  check_devices(cfg.devices, cfg.net.max_devices, "placeto train: ");
  check_family_ranges(cfg.family, cfg.ranges);
  if ((cfg.resume || cfg.resumable) && cfg.output_dir.empty())
    throw ValidationError("placeto train: resume / resumable need an output_dir");
}

/// A fresh network from the config's seed, in training mode.
PlacetoNet seeded_net(const PlacetoTrainConfig& cfg) {
  torch::manual_seed(cfg.seed);
  PlacetoNet net(net_options(cfg.net));
  net->train();
  return net;
}

/// The network, its optimizer and the generator of one training run over its instances,
/// with the run's checkpoints and log lines.
class PlacetoTraining {
 public:
  PlacetoTraining(const PlacetoTrainConfig& cfg, const Cluster& cluster, const TrainingRun& run,
                  std::vector<std::unique_ptr<Instance>>& instances, Clock::time_point t0)
      : cfg_(cfg),
        cluster_(cluster),
        run_(run),
        instances_(instances),
        t0_(t0),
        net_(seeded_net(cfg)),
        adam_(net_->parameters(), torch::optim::AdamOptions(cfg.rl.lr)),
        rng_(cfg.seed),
        fingerprint_(train_fingerprint(cfg, cluster)) {}

  /// With cfg.resume, restores the checkpoint; the updates done before (0 without).
  int64_t resume();
  /// Simulator runs of all instances so far.
  int64_t evaluations() const;
  /// Training seconds, the resumed run's included.
  double run_seconds() const { return seconds_before_ + seconds_since(t0_); }
  /// One REINFORCE update on the update's graph; logged when `logged`.
  PlacetoTrainUpdate update(int64_t u, bool logged);
  /// Writes the policy to `policy_path` (and, resumable, the checkpoint); nothing without an
  /// output_dir.
  void checkpoint(int64_t updates, const std::string& policy_path);

 private:
  const PlacetoTrainConfig& cfg_;
  const Cluster& cluster_;
  const TrainingRun& run_;
  std::vector<std::unique_ptr<Instance>>& instances_;
  const Clock::time_point t0_;
  PlacetoNet net_;
  torch::optim::Adam adam_;
  std::mt19937_64 rng_;
  const Fingerprint fingerprint_;
  double seconds_before_ = 0;
};

int64_t PlacetoTraining::resume() {
  if (!cfg_.resume) return 0;
  const std::string checkpoint_path = run_.checkpoint_file();
  const TrainState state = load_checkpoint(checkpoint_path, net_, adam_, fingerprint_, instances_);
  std::istringstream in(state.rng);
  in >> rng_;
  if (in.fail()) {
    throw FormatError(
        format_context(checkpoint_path + ".meta.json", "rng", "not a generator state"));
  }
  seconds_before_ = state.seconds;
  return state.update;
}

int64_t PlacetoTraining::evaluations() const {
  int64_t n = 0;
  for (const auto& in : instances_) n += in->evaluations;
  return n;
}

PlacetoTrainUpdate PlacetoTraining::update(int64_t u, bool logged) {
  const auto tu = Clock::now();
  const int64_t evals_before = evaluations();
  const size_t gi = size_t((u - 1) % cfg_.graphs);
  Instance& in = *instances_[gi];
  Rollout r = rollout(in, net_, cfg_.rl.episodes, false, rng_);
  const UpdateStats st = reinforce(in, net_, adam_, r, cfg_.rl);
  PlacetoTrainUpdate rec;
  rec.update = u;
  rec.total = cfg_.updates;
  rec.graph = int(gi);
  rec.mean_return = st.mean_return;
  rec.entropy = st.entropy;
  rec.loss = st.loss;
  rec.grad_norm = st.grad_norm;
  rec.best_ratio = in.best_time / in.env().reference_time();
  rec.evaluations = evaluations();
  rec.update_evaluations = rec.evaluations - evals_before;
  rec.update_seconds = seconds_since(tu);
  if (logged) {
    Json line = {{"type", "update"},
                 {"update", u},
                 {"graph", gi},
                 {"mean_return", st.mean_return},
                 {"entropy", st.entropy},
                 {"loss", st.loss},
                 {"grad_norm", st.grad_norm},
                 {"best_ratio", rec.best_ratio},
                 {"evaluations", rec.evaluations},
                 {"seconds", run_seconds()}};
    run_.append_log(line.dump());
  }
  return rec;
}

void PlacetoTraining::checkpoint(int64_t updates, const std::string& policy_path) {
  if (cfg_.output_dir.empty()) return;
  PlacetoPolicyMeta m;
  m.net = cfg_.net;
  m.updates = updates;
  m.seed = cfg_.seed;
  m.family = cfg_.family;
  m.graphs = cfg_.graphs;
  m.first_seed = cfg_.first_seed;
  m.groups = cfg_.mdp.groups;
  m.reward = to_string(cfg_.mdp.reward);
  m.cluster = cluster_.name;
  m.evaluations = evaluations();
  m.train_seconds = run_seconds();
  save_policy(policy_path, net_, m);
  if (cfg_.resumable) {
    TrainState st;
    st.update = updates;
    st.seconds = m.train_seconds;
    std::ostringstream r;
    r << rng_;
    st.rng = r.str();
    save_checkpoint(run_.checkpoint_file(), net_, adam_, fingerprint_, st, instances_);
  }
}

}  // namespace

PlacetoTrainResult placeto_train(
    const PlacetoTrainConfig& cfg, const Cluster& cluster, const CostModel& cost,
    const std::function<void(int64_t, int64_t, const std::string&)>& progress) {
  PlacetoTrainCallbacks cb;
  if (progress) {
    cb.on_update = [&progress](const PlacetoTrainUpdate& u) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "return %.3f entropy %.3f", u.mean_return, u.entropy);
      progress(u.update, u.total, buf);
    };
  }
  return placeto_train(cfg, cluster, cost, cb);
}

PlacetoTrainResult placeto_train(const PlacetoTrainConfig& cfg, const Cluster& cluster,
                                 const CostModel& cost, const PlacetoTrainCallbacks& cb) {
  const auto t0 = Clock::now();
  check_train_config(cfg);
  const TrainingRun run(cfg.output_dir);  // used when output_dir is set
  if (cfg.resume) run.checkpoint_to_resume();
  auto stop = [&cb] { return cb.should_stop && cb.should_stop(); };

  PlacetoTrainResult res;
  std::vector<std::unique_ptr<Graph>> graphs;
  std::vector<std::unique_ptr<Instance>> instances;
  for (int i = 0; i < cfg.graphs; ++i) {
    if (stop()) {
      res.stopped = true;
      return res;
    }
    const Graph fwd = make_family_graph(cfg.family, cfg.first_seed + uint64_t(i), cfg.ranges);
    graphs.push_back(std::make_unique<Graph>(expand_training_step(fwd)));
    instances.push_back(make_instance(*graphs.back(), cluster, cost, cfg.devices, cfg.mdp,
                                      cfg.net.max_devices, cfg.rl.episodes));
    if (cb.on_prepare) cb.on_prepare(i + 1, cfg.graphs);
  }
  PlacetoTraining training(cfg, cluster, run, instances, t0);
  const int64_t start = training.resume();
  if (cfg.resume) res.start_update = start;
  if (cb.on_start) cb.on_start(start);

  const bool logged = !cfg.output_dir.empty();
  if (logged) {
    if (cfg.resume) {
      run.cut_log(start);
    } else {
      run.clear_log();
    }
    res.policy_path = run.file("policy.pt");
  }
  res.updates = start;
  int64_t written = cfg.resume ? start : -1;
  for (int64_t u = start + 1; u <= cfg.updates; ++u) {
    if (stop()) {
      res.stopped = true;
      break;
    }
    const PlacetoTrainUpdate rec = training.update(u, logged);
    res.mean_return.push_back(rec.mean_return);
    res.updates = u;
    if (u % cfg.checkpoint_every == 0) {
      training.checkpoint(u, res.policy_path);
      written = u;
    }
    if (cb.on_update) cb.on_update(rec);
  }
  if (written != res.updates) training.checkpoint(res.updates, res.policy_path);
  res.evaluations = training.evaluations();
  for (const auto& in : instances) res.best_ratio.push_back(in->best_time / in->env().reference_time());
  res.seconds = training.run_seconds();
  return res;
}

}  // namespace placer
