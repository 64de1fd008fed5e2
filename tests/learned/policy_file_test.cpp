// The one policy-file module (agents/common/policy_file.h): a pair written together, the
// sidecar read back as written, every mismatch named (file, field, found and expected), and
// the policies shipped in models/pretrained/ loading through it.
#include "agents/common/policy_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <torch/nn/modules/linear.h>
#include <torch/torch.h>

#include "agents/gdp/gdp_net.h"
#include "agents/rainbow/rainbow_pp_policy.h"
#include "agents/training/train_config.h"
#include "datasets/corpus.h"
#include "datasets/gpt.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

namespace placer {
namespace {

namespace fs = std::filesystem;
using policy_file::Json;

struct TempDir {
  fs::path dir;
  TempDir() {
    dir = fs::temp_directory_path() / ("placer_policy_file_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
  std::string path(const std::string& f) const { return (dir / f).string(); }
};

/// Two linear layers "a" (3 -> 4) and "b" (4 -> width).
struct TwoLayers : torch::nn::Module {
  torch::nn::Linear a{nullptr}, b{nullptr};
  explicit TwoLayers(int64_t width) {
    a = register_module("a", torch::nn::Linear(3, 4));
    b = register_module("b", torch::nn::Linear(4, width));
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(PolicyFile, PairRoundTripsAndLoadsTheTensors) {
  TempDir tmp;
  torch::manual_seed(3);
  TwoLayers saved(2);
  torch::serialize::OutputArchive archive;
  saved.save(archive);
  const Json meta = {{"method", "two"}, {"hidden", 4}, {"flag", true}};
  const std::string path = tmp.path("p.pt");
  policy_file::save_policy_pair(archive, path, meta);
  EXPECT_EQ(policy_file::meta_path(path), path + ".meta.json");
  EXPECT_EQ(policy_file::read_policy_meta(path), meta);  // the same keys, in the same order
  // Nothing but the pair is left (no temp files).
  int files = 0;
  for (const auto& e : fs::directory_iterator(tmp.dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 2);

  torch::manual_seed(4);
  TwoLayers loaded(2);
  EXPECT_FALSE(torch::equal(loaded.a->weight, saved.a->weight));
  torch::serialize::InputArchive in = policy_file::load_archive(path);
  policy_file::read_module(in, loaded, path, "net.");
  EXPECT_TRUE(torch::equal(loaded.a->weight, saved.a->weight));
  EXPECT_TRUE(torch::equal(loaded.b->bias, saved.b->bias));
}

TEST(PolicyFile, MismatchesAreNamed) {
  TempDir tmp;
  TwoLayers saved(2);
  torch::serialize::OutputArchive archive;
  saved.save(archive);
  const std::string path = tmp.path("p.pt");
  policy_file::save_policy_pair(archive, path, Json{{"method", "two"}, {"hidden", 4}});
  const std::string meta = path + ".meta.json";
  const Json j = policy_file::read_policy_meta(path);

  // A tensor of another shape: the file, the tensor and both shapes.
  TwoLayers wider(5);
  torch::serialize::InputArchive in = policy_file::load_archive(path);
  EXPECT_EQ(error_of([&] { policy_file::read_module(in, wider, path, "net."); }),
            path + ": net.b.weight: parameter has shape [2, 4] in the archive but [5, 4] in the "
                   "network built from the sidecar's sizes");
  // A sidecar field of another value, a missing one, one of the wrong type.
  EXPECT_EQ(error_of([&] { policy_file::expect_field(j, "hidden", 8, meta); }),
            meta + ": hidden: the policy has 4, this search needs 8");
  EXPECT_EQ(error_of([&] { policy_file::expect_field(j, "method", "hdp", meta, "this build expects"); }),
            meta + ": method: the policy has \"two\", this build expects \"hdp\"");
  EXPECT_EQ(error_of([&] { policy_file::expect_field(j, "groups", 8, meta); }),
            meta + ": groups: missing");
  EXPECT_EQ(error_of([&] { policy_file::get_field<int>(j, "groups", meta, "net."); }),
            meta + ": net.groups: missing field");
  EXPECT_EQ(error_of([&] { policy_file::get_field<int>(j, "method", meta); }),
            meta + ": method: wrong type (\"two\")");
  EXPECT_THROW(policy_file::get_field<int>(j, "method", meta), FormatError);

  // Missing files are FileErrors naming the file; a broken sidecar or archive FormatErrors.
  EXPECT_EQ(error_of([&] { policy_file::read_policy_meta(tmp.path("none.pt")); }),
            tmp.path("none.pt") + ": cannot open the policy file (missing?)");
  EXPECT_THROW(policy_file::read_policy_meta(tmp.path("none.pt")), FileError);
  std::ofstream(meta) << "[1, 2]";
  EXPECT_EQ(error_of([&] { policy_file::read_policy_meta(path); }),
            meta + ": expected a JSON object");
  std::ofstream(meta) << "{ not json";
  EXPECT_THROW(policy_file::read_policy_meta(path), FormatError);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "not a zip";
  EXPECT_NE(error_of([&] { policy_file::load_archive(path); })
                .find(path + ": not a readable policy archive: "),
            std::string::npos);
}

TEST(PolicyFile, AFailedWriteLeavesNothing) {
  TempDir tmp;
  TwoLayers saved(2);
  torch::serialize::OutputArchive archive;
  saved.save(archive);
  EXPECT_THROW(policy_file::save_policy_pair(archive, tmp.path("no/dir/p.pt"), Json::object()),
               FileError);
  EXPECT_TRUE(fs::is_empty(tmp.dir));
}

TEST(PolicyFile, ShippedPoliciesLoad) {
  const std::string dir = std::string(PLACER_SOURCE_DIR) + "/models/pretrained/";
  // gdp's default policy: the network of its sidecar's sizes, every tensor read.
  const GdpPolicy gdp = GdpPolicy::load(dir + "default.pt");
  const Json meta = policy_file::read_policy_meta(dir + "default.pt");
  EXPECT_EQ(gdp.config().hidden, meta["net"]["hidden"].get<int>());
  EXPECT_EQ(gdp.config().max_devices, meta["net"]["max_devices"].get<int>());
  EXPECT_EQ(gdp.meta().updates, meta["updates"].get<int64_t>());
  EXPECT_GT(gdp.num_parameters(), 10000);

  // rainbow-pp's pretrained policy places a small GPT on four devices.
  std::unique_ptr<Placer> rainbow = make_rainbow_pp_policy_placer(dir + "rainbow_pp.pt");
  GptOptions o;
  o.layers = 4;
  o.hidden = 256;
  o.heads = 4;
  o.seq_len = 64;
  o.batch = 8;
  o.vocab = 2000;
  const Graph g = expand_training_step(make_gpt(o));
  const Cluster c =
      load_cluster_yaml(std::string(PLACER_SOURCE_DIR) + "/datasets/clusters/dgx1_p100.cluster.yaml");
  const CostModel cost(c, default_profile());
  Simulator sim(g, c, cost);
  const Plan plan = rainbow->search(Problem{g, c, cost, sim, {0, 1, 2, 3}}, SearchBudget{});
  EXPECT_NO_THROW(plan.validate(g, c));
  EXPECT_EQ(plan.method, "rainbow-pp");
  EXPECT_TRUE(plan.pipeline.enabled());
}

// gdp+stages' family-held-out policy starts from no other policy and trains on the train
// split of the by-family corpus, which holds no graph of a validation or test family.
TEST(PolicyFile, FamilyHeldOutPolicyNeverTrainedOnATestFamily) {
  const std::string dir = std::string(PLACER_SOURCE_DIR) + "/models/pretrained/";
  const GdpPolicy policy = GdpPolicy::load(dir + "stages_family.pt");
  const TrainConfig config = load_train_config(dir + "stages_family.train.yaml");
  EXPECT_TRUE(config.stages);
  EXPECT_EQ(config.init_policy, "");
  EXPECT_EQ(fs::path(config.corpus).filename(), "by_family.corpus.yaml");
  EXPECT_EQ(fs::path(policy.meta().corpus).filename(), "by_family.corpus.yaml");
  const Corpus corpus =
      load_corpus(std::string(PLACER_SOURCE_DIR) + "/datasets/corpora/by_family.corpus.yaml");
  const std::vector<std::string> held_out = {"transformer_xl", "gnn",    "inception", "transformer",
                                             "vit",            "encdec", "swin"};
  ASSERT_EQ(corpus.train().size(), 9u * 12u);
  for (size_t i : corpus.train()) {
    const std::string family = corpus.entries[i].family();
    EXPECT_EQ(std::count(held_out.begin(), held_out.end(), family), 0) << family;
  }
  EXPECT_EQ(corpus.val().size(), 2u * 12u);
  EXPECT_EQ(corpus.test().size(), 5u * 12u);
}

}  // namespace
}  // namespace placer
