// Placeto: the embedding's shapes and its parent / child / parallel pools on a hand graph,
// REINFORCE to the brute-force optimum of a tiny instance, family training with a policy
// file round trip, zero-shot placement of an unseen family member, and errors.
#include "agents/placeto/placeto.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "datasets/family_registry.h"
#include "env/placeto_env.h"
#include "models/placeto_net.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer {
namespace {

// a -> b -> d, a -> c -> d, e alone (one op per group).
Graph diamond() {
  testing::TestGraph b("diamond");
  const TensorId ta = b.tensor("a.out", 1000);
  const TensorId tb = b.tensor("b.out", 2000);
  const TensorId tc = b.tensor("c.out", 3000);
  const TensorId td = b.tensor("d.out", 4000);
  const TensorId te = b.tensor("e.out", 5000);
  b.op("a", 1e9, {}, {ta});
  b.op("b", 2e9, {ta}, {tb});
  b.op("c", 3e9, {ta}, {tc});
  b.op("d", 4e9, {tb, tc}, {td});
  b.op("e", 6e9, {}, {te});
  return b.build();
}

TEST(PlacetoNet, EmbeddingShapesAndPools) {
  torch::manual_seed(3);
  const Graph g = diamond();
  const Cluster c =
      testing::make_cluster(1, 2, testing::link(1e-6, 1e10), testing::link(1e-6, 1e10));
  CostModel cost(c, uniform_profile(1.0));
  PlacetoEnvOptions o;
  o.max_devices = 4;
  PlacetoEnv env(g, c, cost, {0, 1, 2, 3, 4}, o);
  env.reset(7);
  const PlacetoGraphTensors gt =
      placeto_graph_tensors(5, env.parent_offsets(), env.parents(), env.child_offsets(),
                            env.children(), env.relation(), env.action_mask());
  // Mean aggregation rows: d's parents b and c weigh 1/2 each.
  EXPECT_FLOAT_EQ(gt.parent_mean[3][1].item<float>(), 0.5f);
  EXPECT_FLOAT_EQ(gt.parent_mean[3][2].item<float>(), 0.5f);
  EXPECT_FLOAT_EQ(gt.child_mean[0][1].item<float>(), 0.5f);
  EXPECT_FLOAT_EQ(gt.parent_mean[4].sum().item<float>(), 0.f);

  const int f = env.feature_dim();
  PlacetoNet net(PlacetoNetOptions(f, 4).hidden(6).rounds(3).pool(5).policy_hidden(7));
  torch::Tensor x = torch::from_blob(const_cast<float*>(env.observation().data()), {1, 5, f},
                                     torch::kFloat)
                        .clone()
                        .expand({3, 5, f})
                        .contiguous();
  const torch::Tensor cur = torch::tensor({1, 3, 0}, torch::kLong);  // b, d, a
  const PlacetoEmbedding e = net->embed(x, cur, gt);
  EXPECT_EQ(e.nodes.sizes(), (std::vector<int64_t>{3, 5, 12}));
  EXPECT_EQ(e.current.sizes(), (std::vector<int64_t>{3, 12}));
  EXPECT_EQ(e.ancestors.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(e.descendants.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(e.parallel.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_TRUE(torch::equal(e.current[0], e.nodes[0][1]));
  // The pools by hand for b: ancestors {a}, descendants {d}, parallel {c, e}.
  auto p = [&](torch::nn::Linear& l, int node) { return torch::relu(l->forward(e.nodes[0][node])); };
  EXPECT_TRUE(torch::allclose(e.ancestors[0], p(net->pool_anc, 0), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(e.descendants[0], p(net->pool_desc, 3), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(e.parallel[0], (p(net->pool_par, 2) + p(net->pool_par, 4)) / 2,
                              1e-5, 1e-6));
  // For d: ancestors {a, b, c}, no descendants (zeros), parallel {e}.
  EXPECT_TRUE(torch::allclose(
      e.ancestors[1], (p(net->pool_anc, 0) + p(net->pool_anc, 1) + p(net->pool_anc, 2)) / 3,
      1e-5, 1e-6));
  EXPECT_EQ(e.descendants[1].abs().sum().item<float>(), 0.f);
  // For a: no ancestors.
  EXPECT_EQ(e.ancestors[2].abs().sum().item<float>(), 0.f);
  // The three pools of b differ.
  EXPECT_GT((e.ancestors[0] - e.descendants[0]).abs().sum().item<float>(), 1e-4);
  EXPECT_GT((e.ancestors[0] - e.parallel[0]).abs().sum().item<float>(), 1e-4);
  EXPECT_GT((e.descendants[0] - e.parallel[0]).abs().sum().item<float>(), 1e-4);

  // Directions: changing e's features (isolated) leaves every other node's embedding
  // alone but changes b's parallel pool; changing d's (a sink) leaves the towards-children
  // half of a, b, c alone and changes the towards-parents half of b.
  torch::Tensor x2 = x.clone();
  x2.index_put_({torch::indexing::Slice(), 4, 0}, 5.0);
  const PlacetoEmbedding e2 = net->embed(x2, cur, gt);
  EXPECT_TRUE(torch::allclose(e2.nodes.narrow(1, 0, 4), e.nodes.narrow(1, 0, 4)));
  EXPECT_FALSE(torch::allclose(e2.parallel[0], e.parallel[0]));
  EXPECT_TRUE(torch::allclose(e2.ancestors[0], e.ancestors[0]));
  torch::Tensor x3 = x.clone();
  x3.index_put_({torch::indexing::Slice(), 3, 0}, 5.0);
  const PlacetoEmbedding e3 = net->embed(x3, cur, gt);
  EXPECT_TRUE(torch::allclose(e3.nodes.narrow(1, 0, 3).narrow(2, 0, 6),
                              e.nodes.narrow(1, 0, 3).narrow(2, 0, 6)));
  EXPECT_FALSE(torch::allclose(e3.nodes[0][1].narrow(0, 6, 6), e.nodes[0][1].narrow(0, 6, 6)));

  // Logits: [B, max_devices], devices 2 and 3 (not in the cluster) masked.
  const torch::Tensor logits = net->forward(x, cur, gt);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(logits[0][2].item<float>(), -1e9f);
  EXPECT_EQ(logits[1][3].item<float>(), -1e9f);
  const torch::Tensor prob = torch::softmax(logits, -1);
  EXPECT_EQ(prob.narrow(1, 2, 2).sum().item<float>(), 0.f);
  std::mt19937_64 rng(1);
  for (int i = 0; i < 20; ++i)
    for (int64_t d : placeto_sample_rows(prob, rng)) EXPECT_LT(d, 2);
  // Bad shapes.
  EXPECT_THROW(net->embed(x.narrow(1, 0, 4), cur, gt), ValidationError);
  EXPECT_THROW(net->embed(x, cur.narrow(0, 0, 2), gt), ValidationError);
}

// Two independent chains of three heavy ops on a fast and a slow device; the optimum is
// found by brute force over the 2^6 placements.
struct Chains {
  Graph graph;
  Cluster cluster;
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<Simulator> sim;
  Chains() {
    testing::TestGraph b("two_chains");
    for (const char* ch : {"a", "b"}) {
      const double flops = ch[0] == 'a' ? 2e10 : 3e10;
      std::vector<TensorId> in;
      for (int i = 0; i < 3; ++i) {
        const std::string name = std::string(ch) + std::to_string(i);
        const TensorId out = b.tensor(name + ".out", 4096);
        b.op(name, flops, in, {out});
        in = {out};
      }
    }
    graph = b.build();
    cluster.name = "fast-and-slow";
    cluster.add_host("fast", testing::test_spec(), 1);
    DeviceSpec slow = testing::test_spec();
    slow.model = "slow-gpu";
    slow.peak_flops[static_cast<int>(DType::kF32)] = 0.8e12;
    cluster.add_host("slow", slow, 1);
    cluster.set_link(LinkLevel::kIntraHost, testing::link(1e-5, 1e10));
    cluster.set_link(LinkLevel::kInterHost, testing::link(1e-5, 1e10));
    cost = std::make_unique<CostModel>(cluster, default_profile());
    sim = std::make_unique<Simulator>(graph, cluster, *cost);
  }
  Problem problem() { return Problem{graph, cluster, *cost, *sim, {}}; }
  double optimum() {
    double best = 1e300;
    SimOptions so;
    so.critical_path = false;
    for (int bits = 0; bits < 64; ++bits) {
      Plan p;
      p.placement.resize(6);
      for (int u = 0; u < 6; ++u) p.placement[size_t(u)] = (bits >> u) & 1;
      best = std::min(best, sim->run(p, so).step_time);
    }
    return best;
  }
};

double mean_of(const std::vector<double>& v, size_t from, size_t to) {
  double s = 0;
  for (size_t i = from; i < to; ++i) s += v[i];
  return s / double(to - from);
}

TEST(PlacetoSearch, ReinforceReachesTheOptimumOfTwoChains) {
  torch::set_num_threads(1);
  for (PlacetoReward mode : {PlacetoReward::kIntermediate, PlacetoReward::kFinal}) {
    SCOPED_TRACE(to_string(mode));
    Chains ch;
    const double opt = ch.optimum();
    PlacetoOptions o;
    o.mdp.groups = 0;  // one group per op (nothing to fuse)
    o.mdp.reward = mode;
    o.net.max_devices = 2;
    o.rl.lr = 0.01;
    SearchBudget b;
    b.seed = 5;
    b.max_evaluations = mode == PlacetoReward::kIntermediate ? 3000 : 600;
    const PlacetoSearchResult r = placeto_search(ch.problem(), o, b);
    EXPECT_EQ(r.num_groups, 6);
    EXPECT_GE(r.evaluations, b.max_evaluations);
    ASSERT_GE(r.mean_return.size(), 40u);
    // The expected return (= -E[final cost] + a constant: the random starts do not change)
    // improves, and the best placement seen is the optimum.
    const size_t n = r.mean_return.size();
    const double first = mean_of(r.mean_return, 0, 10), last = mean_of(r.mean_return, n - 10, n);
    std::printf("%s: %zu updates, mean return %.4f -> %.4f, best %.4f ms (optimum %.4f), "
                "greedy %.4f ms, best found at evaluation %lld\n",
                to_string(mode), n, first, last, r.best_time * 1e3, opt * 1e3,
                r.greedy_env_time * 1e3, static_cast<long long>(r.best_evaluation));
    EXPECT_GT(last, first + 0.05);
    EXPECT_NEAR(r.best_time, opt, 1e-12);
    // The final greedy policy is optimal too (within 1%).
    EXPECT_LE(r.greedy_env_time, opt * 1.01);
    EXPECT_NO_THROW(r.plan.validate(ch.graph, ch.cluster));
    EXPECT_EQ(r.plan.method, "placeto");
    // Same seed and budget: same plan.
    const PlacetoSearchResult again = placeto_search(ch.problem(), o, b);
    EXPECT_EQ(again.plan.placement, r.plan.placement);
    EXPECT_EQ(again.mean_return, r.mean_return);
  }
}

Cluster dgx1() {
  return load_cluster_yaml(PLACER_SOURCE_DIR "/datasets/clusters/dgx1_p100.cluster.yaml");
}

TEST(PlacetoTrain, FamilyCheckpointAndZeroShot) {
  torch::set_num_threads(1);
  const std::string dir = std::string(PLACER_BINARY_DIR) + "/placeto_test_run";
  std::filesystem::remove_all(dir);
  const Cluster c = dgx1();
  CostModel cost(c, default_profile());
  PlacetoTrainConfig t;
  t.family = "enas_cnn";
  t.graphs = 2;
  t.first_seed = 100;
  t.updates = 4;
  t.checkpoint_every = 2;
  t.mdp.groups = 8;
  t.rl.episodes = 4;
  t.output_dir = dir;
  int64_t calls = 0;
  const PlacetoTrainResult tr =
      placeto_train(t, c, cost, [&](int64_t done, int64_t total, const std::string&) {
        ++calls;
        EXPECT_EQ(total, 4);
        EXPECT_EQ(done, calls);
      });
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(tr.updates, 4);
  EXPECT_EQ(tr.mean_return.size(), 4u);
  ASSERT_EQ(tr.best_ratio.size(), 2u);
  for (double r : tr.best_ratio) EXPECT_TRUE(std::isfinite(r) && r > 0);
  // 8 groups x 4 episodes x 4 updates intermediate steps at most, plus the starts.
  EXPECT_GT(tr.evaluations, 0);
  EXPECT_LE(tr.evaluations, 4 * 4 * 9);
  ASSERT_EQ(tr.policy_path, dir + "/policy.pt");
  ASSERT_TRUE(std::filesystem::exists(tr.policy_path));
  // No temporary files left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
  EXPECT_EQ(files, 3);  // policy.pt, policy.pt.meta.json, log.jsonl
  {
    std::ifstream log(dir + "/log.jsonl");
    int lines = 0;
    for (std::string l; std::getline(log, l);) ++lines;
    EXPECT_EQ(lines, 4);
  }
  const PlacetoPolicyMeta m = read_placeto_policy_meta(tr.policy_path);
  EXPECT_EQ(m.updates, 4);
  EXPECT_EQ(m.family, "enas_cnn");
  EXPECT_EQ(m.graphs, 2);
  EXPECT_EQ(m.first_seed, 100u);
  EXPECT_EQ(m.groups, 8);
  EXPECT_EQ(m.reward, "intermediate");
  EXPECT_EQ(m.net, t.net);
  EXPECT_EQ(m.evaluations, tr.evaluations);
  EXPECT_EQ(m.feature_dim, placeto_feat::dim(8));

  // Zero-shot on an unseen member (seed 7): a valid plan, the same twice.
  const Graph g = expand_training_step(make_family_graph("enas_cnn", 7));
  Simulator sim(g, c, cost);
  Problem p{g, c, cost, sim, {0, 1, 2, 3}};
  PlacetoOptions o;
  o.policy = tr.policy_path;
  o.mdp.groups = 32;  // not used: the policy's meta says it was trained with 8 groups
  o.zero_shot_samples = 3;
  SearchBudget b;
  b.seed = 11;
  const PlacetoSearchResult z = placeto_search(p, o, b);
  EXPECT_EQ(z.num_groups, 8);
  {
    PlacetoOptions own = o;  // mdp_from_policy off: the caller's 32 groups
    own.mdp_from_policy = false;
    own.zero_shot_samples = 0;
    EXPECT_GT(placeto_search(p, own, b).num_groups, 8);
  }
  EXPECT_NO_THROW(z.plan.validate(g, c));
  for (int d : z.plan.placement) EXPECT_LT(d, 4);
  EXPECT_EQ(z.updates, 0);
  EXPECT_EQ(z.episodes, 4);
  EXPECT_GT(z.evaluations, 0);
  EXPECT_LE(z.evaluations, 4 * 9);
  EXPECT_TRUE(z.plan.predicted.valid);
  EXPECT_GT(z.best_time, 0);
  EXPECT_EQ(z.zero_shot_env_time, z.best_env_time);
  const PlacetoSearchResult z2 = placeto_search(p, o, b);
  EXPECT_EQ(z2.plan.placement, z.plan.placement);
  EXPECT_EQ(z2.best_time, z.best_time);
  // Fine-tuning from the policy continues with REINFORCE and never loses the zero-shot best.
  o.finetune = true;
  o.rl.episodes = 4;
  b.max_evaluations = 120;
  const PlacetoSearchResult ft = placeto_search(p, o, b);
  EXPECT_GT(ft.updates, 0);
  EXPECT_LE(ft.best_env_time, z.best_env_time);

  // The checkpoint round trip: the policy file saved at update 4 loads into the same
  // network (zero-shot from a copy gives the same plan).
  std::filesystem::copy_file(tr.policy_path, dir + "/copy.pt");
  std::filesystem::copy_file(tr.policy_path + ".meta.json", dir + "/copy.pt.meta.json");
  o.finetune = false;
  o.policy = dir + "/copy.pt";
  b.max_evaluations = 0;
  EXPECT_EQ(placeto_search(p, o, b).plan.placement, z.plan.placement);

  // Errors: a missing file, a broken sidecar (naming the field), devices beyond the policy.
  o.policy = dir + "/nope.pt";
  EXPECT_THROW(placeto_search(p, o, b), FileError);
  {
    std::ofstream bad(dir + "/copy.pt.meta.json");
    bad << R"({"format_version": 1, "method": "placeto", "feature_dim": "x"})";
  }
  o.policy = dir + "/copy.pt";
  try {
    placeto_search(p, o, b);
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("feature_dim"), std::string::npos) << e.what();
  }
  o.policy = "";
  o.net.max_devices = 4;
  Problem p5{g, c, cost, sim, {0, 1, 2, 3, 4}};
  EXPECT_THROW(placeto_search(p5, o, b), ValidationError);
  std::filesystem::remove_all(dir);
}

TEST(PlacetoSearch, OptionErrorsAndRegistration) {
  Chains ch;
  PlacetoOptions o;
  o.rl.episodes = 0;
  EXPECT_THROW(placeto_search(ch.problem(), o, {}), ValidationError);
  o = {};
  o.net.max_devices = 0;
  EXPECT_THROW(placeto_search(ch.problem(), o, {}), ValidationError);
  o = {};
  o.rl.gamma = 1.5;
  EXPECT_THROW(placeto_search(ch.problem(), o, {}), ValidationError);
  o = {};
  o.mdp.groups = -1;
  EXPECT_THROW(placeto_search(ch.problem(), o, {}), ValidationError);
  std::vector<MethodInfo> m;
  add_placeto_methods(&m);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].name, "placeto");
  EXPECT_FALSE(m[0].fast);
  EXPECT_EQ(m[0].make()->name(), "placeto");
  EXPECT_TRUE(placeto_available());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
/// log.jsonl without the wall times (the one field a resumed run changes).
std::string log_sans_seconds(const std::string& path) {
  std::ifstream in(path);
  std::string out;
  for (std::string l; std::getline(in, l);) out += l.substr(0, l.find(",\"seconds\"")) + "\n";
  return out;
}

// `resumable` + `resume`: 3 updates, a stop (should_stop), then a resume to 6 give the same
// log (returns, losses, gradient norms, evaluations), the same weights (zero-shot plans) and
// the same evaluation count as 6 updates straight; a changed setting is refused by name.
TEST(PlacetoTrain, ResumeIsExact) {
  torch::set_num_threads(1);
  const std::string base = std::string(PLACER_BINARY_DIR) + "/placeto_resume_test";
  std::filesystem::remove_all(base);
  const Cluster c = dgx1();
  CostModel cost(c, default_profile());
  PlacetoTrainConfig t;
  t.family = "enas_cnn";
  t.graphs = 2;
  t.first_seed = 100;
  t.updates = 6;
  t.checkpoint_every = 4;
  t.mdp.groups = 6;
  t.rl.episodes = 3;
  t.net.hidden = 8;
  t.net.pool = 8;
  t.net.policy_hidden = 16;
  t.resumable = true;

  t.output_dir = base + "/straight";
  const PlacetoTrainResult straight = placeto_train(t, c, cost, PlacetoTrainCallbacks{});
  EXPECT_EQ(straight.updates, 6);
  EXPECT_FALSE(straight.stopped);
  EXPECT_TRUE(std::filesystem::exists(t.output_dir + "/checkpoint.pt"));

  t.output_dir = base + "/resumed";
  PlacetoTrainCallbacks stop_after_3;
  int64_t seen = 0, started = -1;
  stop_after_3.on_start = [&](int64_t s) { started = s; };
  stop_after_3.on_update = [&](const PlacetoTrainUpdate& u) { seen = u.update; };
  stop_after_3.should_stop = [&] { return seen >= 3; };
  const PlacetoTrainResult first = placeto_train(t, c, cost, stop_after_3);
  EXPECT_TRUE(first.stopped);
  EXPECT_EQ(first.updates, 3);
  EXPECT_EQ(started, 0);
  EXPECT_EQ(read_placeto_policy_meta(first.policy_path).updates, 3);  // written at the stop

  t.resume = true;
  PlacetoTrainCallbacks count;
  std::vector<int64_t> updates;
  count.on_start = [&](int64_t s) { started = s; };
  count.on_update = [&](const PlacetoTrainUpdate& u) { updates.push_back(u.update); };
  const PlacetoTrainResult second = placeto_train(t, c, cost, count);
  EXPECT_EQ(started, 3);
  EXPECT_EQ(second.start_update, 3);
  EXPECT_EQ(second.updates, 6);
  EXPECT_EQ(updates, (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(second.mean_return.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(second.mean_return[i], straight.mean_return[i + 3]);
  EXPECT_EQ(second.evaluations, straight.evaluations);
  EXPECT_EQ(second.best_ratio, straight.best_ratio);
  EXPECT_EQ(log_sans_seconds(base + "/resumed/log.jsonl"),
            log_sans_seconds(base + "/straight/log.jsonl"));
  EXPECT_NE(read_file(base + "/resumed/checkpoint.pt.meta.json").find("\"update\": 6,"),
            std::string::npos);

  // The same weights: zero-shot from both policies gives the same plan.
  const Graph g = expand_training_step(make_family_graph("enas_cnn", 7));
  Simulator sim(g, c, cost);
  Problem p{g, c, cost, sim, {0, 1, 2, 3}};
  PlacetoOptions o;
  o.mdp.groups = 6;
  o.zero_shot_samples = 2;
  SearchBudget b;
  b.seed = 5;
  o.policy = straight.policy_path;
  const PlacetoSearchResult za = placeto_search(p, o, b);
  o.policy = second.policy_path;
  const PlacetoSearchResult zb = placeto_search(p, o, b);
  EXPECT_EQ(za.plan.placement, zb.plan.placement);
  EXPECT_EQ(za.greedy_env_time, zb.greedy_env_time);

  // A changed setting is refused, naming it; a missing checkpoint is a FileError.
  t.rl.lr = 0.5;
  try {
    placeto_train(t, c, cost, PlacetoTrainCallbacks{});
    FAIL() << "expected ValidationError";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("rl.lr is 0.5 here but 0.01"), std::string::npos)
        << e.what();
  }
  t.rl.lr = 0.01;
  t.output_dir = base + "/none";
  EXPECT_THROW(placeto_train(t, c, cost, PlacetoTrainCallbacks{}), FileError);
}

}  // namespace
}  // namespace placer
