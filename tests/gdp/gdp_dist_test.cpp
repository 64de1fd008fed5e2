// Distributed GDP pretraining (agents/gdp/gdp_dist*.h, docs/distributed.md): rank discovery, the
// rollout thread pool, two Gloo ranks (threads of this process with their own process
// groups over a FileStore) against one process with the same global batch, and a lost rank.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <nlohmann/json.hpp>

#include "agents/gdp/gdp.h"
#include "agents/gdp/gdp_dist.h"
#include "agents/gdp/gdp_dist_group.h"
#include "agents/gdp/gdp_net.h"
#include "src/util/error.h"

namespace placer {
namespace {

using Json = nlohmann::json;

std::string temp_dir(const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("placer_gdp_dist_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  return p.string();
}

TrainConfig tiny_config(const std::string& out) {
  TrainConfig c;
  c.corpus = std::string(PLACER_TEST_DATA_DIR) + "/gdp/tiny.corpus.yaml";
  c.clusters = {std::string(PLACER_SOURCE_DIR) + "/datasets/clusters/dgx1_p100.cluster.yaml"};
  c.device_counts = {2, 4};
  c.net.hidden = 16;
  c.net.sage_layers = 1;
  c.net.op_embedding = 4;
  c.net.txl_layers = 1;
  c.net.heads = 2;
  c.net.ffn = 32;
  c.net.segment = 64;
  c.net.mem_len = 64;
  c.net.max_devices = 4;
  c.ppo.samples = 4;
  c.ppo.graphs_per_update = 4;
  c.ppo.epochs = 2;
  c.updates = 4;
  c.imitation_updates = 1;
  c.seed = 7;
  c.output_dir = out;
  c.checkpoint_every = 1;
  c.eval_every = 2;
  c.eval_instances = 3;
  c.eval_samples = 2;
  c.eval_baselines = {"m-etf", "critical-path"};
  c.threads = 1;
  return c;
}

std::vector<Json> read_log(const std::string& dir) {
  std::ifstream in(dir + "/log.jsonl");
  std::vector<Json> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(Json::parse(line));
  return out;
}

std::vector<Json> timeless(std::vector<Json> log) {
  for (Json& j : log) j.erase("seconds");
  return log;
}

/// Restores an environment variable when it goes out of scope.
struct EnvVar {
  std::string name;
  std::string old;
  bool had = false;
  EnvVar(const std::string& n, const char* value) : name(n) {
    if (const char* v = std::getenv(n.c_str())) {
      had = true;
      old = v;
    }
    if (value) ::setenv(n.c_str(), value, 1);
    else ::unsetenv(n.c_str());
  }
  ~EnvVar() {
    if (had) ::setenv(name.c_str(), old.c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

/// Every variable resolve_dist reads, unset for the test's duration.
struct CleanEnv {
  EnvVar a{"RANK", nullptr}, b{"WORLD_SIZE", nullptr}, c{"LOCAL_RANK", nullptr},
      d{"MASTER_ADDR", nullptr}, e{"MASTER_PORT", nullptr}, f{"OMPI_COMM_WORLD_RANK", nullptr},
      g{"OMPI_COMM_WORLD_SIZE", nullptr}, h{"OMPI_COMM_WORLD_LOCAL_RANK", nullptr};
};

class GdpDist : public ::testing::Test {
 protected:
  void SetUp() override { torch::set_num_threads(1); }
  CleanEnv clean;
};

TEST_F(GdpDist, ResolvesASingleProcessByDefault) {
  const DistSetup s = resolve_dist(GdpDistConfig{});
  EXPECT_EQ(s.rank, 0);
  EXPECT_EQ(s.world_size, 1);
  EXPECT_EQ(s.init, "");
  EXPECT_EQ(s.source, "single");
}

TEST_F(GdpDist, ResolvesFlags) {
  GdpDistConfig c;
  c.url = "tcp://10.0.0.1:29555";
  c.rank = 2;
  c.world_size = 4;
  const DistSetup s = resolve_dist(c);
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.world_size, 4);
  EXPECT_EQ(s.local_rank, 2);
  EXPECT_EQ(s.init, "tcp://10.0.0.1:29555");
  EXPECT_EQ(s.source, "flags");

  c.rank = 4;
  EXPECT_THROW(resolve_dist(c), ValidationError);  // outside [0, 4)
  c.rank = 1;
  c.url = "udp://x:1";
  EXPECT_THROW(resolve_dist(c), ValidationError);
  GdpDistConfig no_world;
  no_world.rank = 1;
  try {
    resolve_dist(no_world);
    FAIL() << "no throw";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("--world-size"), std::string::npos) << e.what();
  }
  GdpDistConfig no_url;
  no_url.rank = 0;
  no_url.world_size = 2;
  EXPECT_THROW(resolve_dist(no_url), ValidationError);
}

TEST_F(GdpDist, ResolvesTorchrunEnvironment) {
  EnvVar r("RANK", "1"), w("WORLD_SIZE", "3"), l("LOCAL_RANK", "0"), a("MASTER_ADDR", "node7"),
      p("MASTER_PORT", "1234");
  const DistSetup s = resolve_dist(GdpDistConfig{});
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.world_size, 3);
  EXPECT_EQ(s.local_rank, 0);
  EXPECT_EQ(s.init, "tcp://node7:1234");
  EXPECT_EQ(s.source, "env");
  EnvVar no_port("MASTER_PORT", nullptr);
  EXPECT_THROW(resolve_dist(GdpDistConfig{}), ValidationError);
  EnvVar bad("MASTER_PORT", "1234"), bad_rank("RANK", "one");
  EXPECT_THROW(resolve_dist(GdpDistConfig{}), ValidationError);
}

TEST_F(GdpDist, ResolvesOpenMpiEnvironmentWithLocalDefaults) {
  EnvVar r("OMPI_COMM_WORLD_RANK", "3"), w("OMPI_COMM_WORLD_SIZE", "4"),
      l("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  DistSetup s = resolve_dist(GdpDistConfig{});
  EXPECT_EQ(s.rank, 3);
  EXPECT_EQ(s.world_size, 4);
  EXPECT_EQ(s.local_rank, 1);
  EXPECT_EQ(s.init, "tcp://127.0.0.1:29500");
  EXPECT_EQ(s.source, "mpi");
  EnvVar a("MASTER_ADDR", "head"), p("MASTER_PORT", "4000");
  s = resolve_dist(GdpDistConfig{});
  EXPECT_EQ(s.init, "tcp://head:4000");
}

TEST_F(GdpDist, ParallelForRunsEveryIndexOnceAndRethrows) {
  for (int threads : {1, 2, 5}) {
    std::vector<int> hits(37, 0);
    parallel_for(hits.size(), threads, [&](size_t i) { hits[i] += int(i) + 1; });
    for (size_t i = 0; i < hits.size(); ++i) EXPECT_EQ(hits[i], int(i) + 1);
  }
  EXPECT_THROW(parallel_for(8, 3,
                            [](size_t i) {
                              if (i == 5) throw ValidationError("five");
                            }),
               ValidationError);
  EXPECT_EQ(resolve_threads(3), 3);
  EXPECT_GE(resolve_threads(0), 1);
}

/// Runs `world` ranks of `config` as threads (own trainer and process group each, rendezvous
/// over a FileStore). Returns each rank's final parameters; `errors` gets each rank's
/// exception message ("" = none).
std::vector<std::vector<torch::Tensor>> run_ranks(
    const TrainConfig& config, int world, std::vector<std::string>* errors = nullptr,
    const std::function<void(int, const TrainUpdateStats&)>& on_update = nullptr) {
  const std::string store = temp_dir("store") + "_" + std::to_string(world);
  std::filesystem::remove(store);
  const size_t n = static_cast<size_t>(world);
  std::vector<std::vector<torch::Tensor>> params(n);
  std::vector<std::string> errs(n);
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      try {
        torch::set_num_threads(1);
        TrainConfig c = config;
        c.dist.url = "file://" + store;
        c.dist.rank = r;
        c.dist.world_size = world;
        GdpTrainer t(c);
        GdpTrainer::Callbacks cb;
        if (on_update) cb.on_update = [&, r](const TrainUpdateStats& st) { on_update(r, st); };
        t.train(cb);
        for (const torch::Tensor& p : GdpTrainerAccess::parameters(t)) {
          params[size_t(r)].push_back(p.detach().clone());
        }
      } catch (const std::exception& e) {
        errs[size_t(r)] = e.what();
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  std::filesystem::remove(store);
  if (errors) *errors = errs;
  return params;
}

std::vector<torch::Tensor> policy_parameters(const std::string& path) {
  const GdpPolicy p = GdpPolicy::load(path);
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& t : p.impl().net->parameters()) out.push_back(t.detach().clone());
  return out;
}

TEST_F(GdpDist, RolloutThreadCountDoesNotChangeTraining) {
  const std::string a = temp_dir("threads1"), b = temp_dir("threads3");
  TrainConfig ca = tiny_config(a), cb = tiny_config(b);
  ca.threads = 1;
  cb.threads = 3;
  GdpTrainer(ca).train({});
  GdpTrainer(cb).train({});
  EXPECT_EQ(timeless(read_log(a)), timeless(read_log(b)));
  const auto pa = policy_parameters(a + "/policy.pt"), pb = policy_parameters(b + "/policy.pt");
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << i;
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
}

void expect_same_rows(const TrainEvalStats& a, const TrainEvalStats& b) {
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i) {
    EXPECT_EQ(a.rows[i].instance, b.rows[i].instance) << i;
    EXPECT_EQ(a.rows[i].reference_time, b.rows[i].reference_time) << i;
    EXPECT_EQ(a.rows[i].best_classical, b.rows[i].best_classical) << i;
    EXPECT_EQ(a.rows[i].best_classical_time, b.rows[i].best_classical_time) << i;
    EXPECT_EQ(a.rows[i].greedy_time, b.rows[i].greedy_time) << i;
    EXPECT_EQ(a.rows[i].sampled_time, b.rows[i].sampled_time) << i;
  }
  EXPECT_EQ(a.geomean_vs_classical, b.geomean_vs_classical);
  EXPECT_EQ(a.geomean_greedy_vs_classical, b.geomean_greedy_vs_classical);
}

TEST_F(GdpDist, ReferencesAndEvaluationOnThreadsMatchOneThread) {
  // Imitation updates (they need every picked instance's reference placement, 4 instances
  // built at once per update on the threads), then a PPO update and an evaluation of every
  // validation instance against all four classical baselines (computed on the threads).
  std::vector<TrainEvalStats> evals;
  std::vector<std::vector<Json>> logs;
  std::vector<std::vector<torch::Tensor>> params;
  for (int threads : {1, 2, 4}) {
    const std::string dir = temp_dir("evthreads" + std::to_string(threads));
    TrainConfig c = tiny_config(dir);
    c.threads = threads;
    c.updates = 3;
    c.imitation_updates = 2;
    c.eval_every = 3;
    c.eval_instances = 4;  // 2 validation graphs x 2 device counts: all of them
    c.eval_samples = 3;
    c.eval_baselines = {"m-etf", "m-sct", "metis", "critical-path"};
    GdpTrainer t(c);
    ASSERT_EQ(t.num_val_instances(), 4u);
    std::vector<TrainEvalStats> during;
    GdpTrainer::Callbacks cb;
    cb.on_eval = [&](const TrainEvalStats& e) { during.push_back(e); };
    EXPECT_EQ(t.train(cb), 3);
    ASSERT_EQ(during.size(), 1u);
    evals.push_back(during[0]);
    evals.push_back(t.evaluate());  // again: baselines from the cache this time
    logs.push_back(timeless(read_log(dir)));
    params.push_back(policy_parameters(dir + "/policy.pt"));
    std::filesystem::remove_all(dir);
  }
  const TrainEvalStats& e = evals[0];
  ASSERT_EQ(e.rows.size(), 4u);
  for (const TrainEvalRow& r : e.rows) {
    EXPECT_GT(r.reference_time, 0) << r.instance;
    EXPECT_GT(r.best_classical_time, 0) << r.instance;
    EXPECT_FALSE(r.best_classical.empty()) << r.instance;
  }
  expect_same_rows(evals[0], evals[1]);  // the same policy, cached baselines
  for (size_t k = 1; k < logs.size(); ++k) {
    SCOPED_TRACE("threads run " + std::to_string(k));
    EXPECT_EQ(logs[0], logs[k]);
    expect_same_rows(evals[0], evals[2 * k]);
    expect_same_rows(evals[1], evals[2 * k + 1]);
    ASSERT_EQ(params[0].size(), params[k].size());
    for (size_t i = 0; i < params[0].size(); ++i) {
      EXPECT_TRUE(torch::equal(params[0][i], params[k][i])) << i;
    }
  }
  ASSERT_EQ(logs[0].size(), 5u);  // 3 updates + 2 evaluations (during training, then evaluate())
  EXPECT_EQ(logs[0][0].at("phase"), "imitation");
  EXPECT_EQ(logs[0][2].at("phase"), "ppo");
  EXPECT_EQ(logs[0][3].at("type"), "eval");
  EXPECT_EQ(logs[0][4].at("type"), "eval");
}

TEST_F(GdpDist, DeviceCpuIsTheDefaultAndCudaFailsClearlyWithoutIt) {
  const std::string a = temp_dir("dev_default"), b = temp_dir("dev_cpu");
  TrainConfig ca = tiny_config(a), cb = tiny_config(b);
  ca.updates = cb.updates = 2;
  ca.eval_every = cb.eval_every = 0;
  cb.device = "cpu";  // explicitly: the same run as the default
  {
    GdpTrainer ta(ca), tb(cb);
    EXPECT_EQ(GdpTrainerAccess::device(ta), "cpu");
    EXPECT_EQ(GdpTrainerAccess::device(tb), "cpu");
    ta.train({});
    tb.train({});
  }
  EXPECT_EQ(timeless(read_log(a)), timeless(read_log(b)));
  const auto pa = policy_parameters(a + "/policy.pt"), pb = policy_parameters(b + "/policy.pt");
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << i;

  const std::string g = temp_dir("dev_cuda");
  TrainConfig cg = tiny_config(g);
  cg.updates = 2;
  cg.eval_every = 0;
  cg.device = "cuda";
  if (!torch::cuda::is_available()) {
    // This project's Debian LibTorch is CPU-only: one clear error, nothing written.
    try {
      GdpTrainer t(cg);
      FAIL() << "no throw";
    } catch (const ValidationError& e) {
      EXPECT_NE(std::string(e.what()).find("device: cuda is not available in this build"),
                std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(g));
  } else {
    // A CUDA LibTorch with a GPU (not available where this was written): the run trains on
    // cuda:0, its files are CPU tensors that load here, and it resumes on the GPU.
    GdpTrainer t(cg);
    EXPECT_EQ(GdpTrainerAccess::device(t), "cuda:0");
    EXPECT_EQ(t.train({}), 2);
    for (const torch::Tensor& p : policy_parameters(g + "/policy.pt")) {
      EXPECT_TRUE(p.device().is_cpu());
    }
    TrainConfig more = cg;
    more.updates = 3;
    GdpTrainer r(more);
    EXPECT_EQ(r.resume(), 2);
    EXPECT_EQ(r.train({}), 3);
    for (const torch::Tensor& p : GdpTrainerAccess::parameters(r)) EXPECT_TRUE(p.is_cuda());
  }
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
  std::filesystem::remove_all(g);
}

TEST_F(GdpDist, TwoGlooRanksMatchOneProcessWithTheSameGlobalBatch) {
  // The ranks run their nets on one intra-op thread each (run_ranks); so does the single
  // process, or BLAS summation orders differ, a sampled action can flip and the runs diverge
  // (seen under load with the default thread count).
  const int saved_threads = torch::get_num_threads();
  torch::set_num_threads(1);
  struct Restore {
    int n;
    ~Restore() { torch::set_num_threads(n); }
  } restore{saved_threads};
  const std::string single = temp_dir("single"), multi = temp_dir("multi");
  // One process working both shards: the global batch of the 2-rank run.
  TrainConfig c1 = tiny_config(single);
  c1.dist.shards = 2;
  {
    GdpTrainer t(c1);
    EXPECT_EQ(GdpTrainerAccess::shards(t), (std::vector<int>{0, 1}));
    t.train({});
  }
  TrainConfig c2 = tiny_config(multi);
  std::vector<std::string> errors;
  const auto params = run_ranks(c2, 2, &errors);
  ASSERT_EQ(errors, (std::vector<std::string>{"", ""}));
  ASSERT_FALSE(params[0].empty());
  ASSERT_EQ(params[0].size(), params[1].size());
  // Every rank holds bit-identical parameters.
  for (size_t i = 0; i < params[0].size(); ++i) {
    EXPECT_TRUE(torch::equal(params[0][i], params[1][i])) << "parameter " << i;
  }
  // Rank 0 wrote the files; they equal the single process's within float rounding (the
  // gradient sums are added in another order).
  const auto p1 = policy_parameters(single + "/policy.pt");
  const auto p2 = policy_parameters(multi + "/policy.pt");
  ASSERT_EQ(p1.size(), p2.size());
  double max_diff = 0;
  for (size_t i = 0; i < p1.size(); ++i) {
    EXPECT_TRUE(torch::equal(p2[i], params[0][i]));
    max_diff = std::max(max_diff, (p1[i] - p2[i]).abs().max().item<double>());
  }
  EXPECT_LT(max_diff, 1e-4);
  // ... and training moved them away from the common initial network.
  const GdpPolicy init(c1.net, c1.seed);
  double moved = 0;
  const auto p0 = init.impl().net->parameters();
  for (size_t i = 0; i < p1.size(); ++i) {
    moved = std::max(moved, (p0[i] - p2[i]).abs().max().item<double>());
  }
  EXPECT_GT(moved, 1e-3);
  std::printf("max |single - 2 ranks| = %.3g, max |trained - initial| = %.3g\n", max_diff, moved);
  // The same instances, rewards and evaluation rows, in the same order.
  const std::vector<Json> l1 = read_log(single), l2 = read_log(multi);
  ASSERT_EQ(l1.size(), l2.size());
  ASSERT_EQ(l1.size(), 4u + 2u);  // 4 updates + 2 evaluations
  for (size_t i = 0; i < l1.size(); ++i) {
    EXPECT_EQ(l1[i].at("type"), l2[i].at("type"));
    EXPECT_EQ(l1[i].at("update"), l2[i].at("update"));
    if (l1[i].at("type") == "update") {
      EXPECT_EQ(l1[i].at("instances"), l2[i].at("instances"));
      EXPECT_EQ(l1[i].at("instances").size(), 4u);
      EXPECT_EQ(l1[i].at("evaluations"), l2[i].at("evaluations"));
      EXPECT_NEAR(l1[i].at("mean_reward").get<double>(), l2[i].at("mean_reward").get<double>(),
                  1e-9);
      EXPECT_NEAR(l1[i].at("loss").get<double>(), l2[i].at("loss").get<double>(), 1e-4);
    } else {
      ASSERT_EQ(l1[i].at("rows").size(), 3u);
      for (size_t r = 0; r < 3; ++r) {
        EXPECT_EQ(l1[i]["rows"][r].at("instance"), l2[i]["rows"][r].at("instance"));
        EXPECT_EQ(l1[i]["rows"][r].at("greedy_time"), l2[i]["rows"][r].at("greedy_time"));
      }
    }
  }
  // dist.shards = 2 set explicitly (train.yaml `dist: {shards: 2}`) is the same run as the
  // default (shards = world size): bit-identical parameters on every rank.
  const std::string fixed = temp_dir("multi_fixed");
  TrainConfig c3 = tiny_config(fixed);
  c3.dist.shards = 2;
  const auto params3 = run_ranks(c3, 2, &errors);
  ASSERT_EQ(errors, (std::vector<std::string>{"", ""}));
  ASSERT_EQ(params3[0].size(), params[0].size());
  for (size_t i = 0; i < params[0].size(); ++i) {
    EXPECT_TRUE(torch::equal(params3[0][i], params[0][i])) << "parameter " << i;
    EXPECT_TRUE(torch::equal(params3[1][i], params[0][i])) << "parameter " << i;
  }
  EXPECT_EQ(timeless(read_log(fixed)), timeless(read_log(multi)));
  std::filesystem::remove_all(single);
  std::filesystem::remove_all(multi);
  std::filesystem::remove_all(fixed);
}

TEST_F(GdpDist, ALostRankEndsTheOtherWithAnErrorAndAResumableCheckpoint) {
  const std::string dir = temp_dir("lost");
  TrainConfig c = tiny_config(dir);
  c.updates = 6;
  c.eval_every = 0;
  c.dist.timeout_seconds = 20;
  std::vector<std::string> errors;
  // Rank 1 fails after its second update (its trainer and process group go away).
  run_ranks(c, 2, &errors, [](int rank, const TrainUpdateStats& st) {
    if (rank == 1 && st.update == 2) throw std::runtime_error("rank 1 crashed");
  });
  EXPECT_EQ(errors[1], "rank 1 crashed");
  std::printf("rank 0: %s\n", errors[0].c_str());
  EXPECT_NE(errors[0].find("distributed:"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("rank 0 of 2"), std::string::npos) << errors[0];
  // The last checkpoint (update 1 or 2) is intact and resumes in one process.
  TrainConfig one = c;
  one.updates = 3;
  GdpTrainer t(one);
  const int64_t from = t.resume();
  EXPECT_GE(from, 1);
  EXPECT_LE(from, 2);
  EXPECT_EQ(t.train({}), 3);
  EXPECT_EQ(read_log(dir).back().at("update"), 3);
  std::filesystem::remove_all(dir);
}

TEST_F(GdpDist, AMissingRankTimesOutWithAClearError) {
  const std::string store = temp_dir("alone");
  TrainConfig c = tiny_config(temp_dir("alone_out"));
  c.dist.url = "tcp://127.0.0.1:1";  // nobody else will come; rank 1 cannot serve port 1
  c.dist.rank = 1;
  c.dist.world_size = 2;
  c.dist.timeout_seconds = 2;
  try {
    GdpTrainer t(c);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("could not join the process group"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace placer
