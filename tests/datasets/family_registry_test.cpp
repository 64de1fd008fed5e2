#include "datasets/family_registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "src/util/error.h"
#include "tests/datasets/family_test_util.h"

namespace placer {
namespace {

using testing::expect_well_formed;
using testing::fp;

int64_t param(const std::vector<std::pair<std::string, int64_t>>& v, const std::string& name) {
  for (const auto& [k, x] : v) {
    if (k == name) return x;
  }
  ADD_FAILURE() << "no parameter " << name;
  return -1;
}

TEST(FamilyRegistry, NamesAndInfo) {
  const std::vector<std::string> want = {
      "enas_cnn", "amoebanet",   "inception", "enas_rnn",       "rnnlm",  "gnmt", "transformer_xl",
      "wavenet",  "transformer", "rec",       "layered_random", "resnet", "vit",  "encdec",
      "gnn",      "swin"};
  EXPECT_EQ(family_names(), want);
  for (const FamilyInfo& f : family_infos()) {
    EXPECT_FALSE(f.models.empty()) << f.name;
    EXPECT_FALSE(f.citation.empty()) << f.name;
    EXPECT_GE(f.params.size(), 4u) << f.name;
    for (const FamilyParam& p : f.params) {
      EXPECT_EQ(p.normal.check(), "") << f.name << "." << p.name;
      EXPECT_EQ(p.large.check(), "") << f.name << "." << p.name;
    }
  }
  EXPECT_EQ(find_family("nope"), nullptr);
  ASSERT_NE(find_family("gnmt"), nullptr);
}

TEST(FamilyRegistry, ParamRangeDraws) {
  const ParamRange u = ParamRange::uniform(2, 8);
  EXPECT_EQ(u.draw(0.0), 2);
  EXPECT_EQ(u.draw(0.999999), 8);
  EXPECT_EQ(u.draw(0.5), 5);  // 7 grid points, index floor(3.5) = 3
  const ParamRange s = ParamRange::uniform(64, 512, 64);
  EXPECT_EQ(s.draw(0.0), 64);
  EXPECT_EQ(s.draw(0.999), 512);
  EXPECT_EQ(s.draw(0.5) % 64, 0);
  // Log-uniform over 1..1024: u = 0.5 is the geometric middle, 32.
  const ParamRange l = ParamRange::log_uniform(1, 1024);
  EXPECT_EQ(l.draw(0.0), 1);
  EXPECT_EQ(l.draw(0.5), 32);
  EXPECT_EQ(l.draw(0.999999999), 1024);
  const ParamRange c = ParamRange::choice({2, 4, 8});
  EXPECT_EQ(c.draw(0.0), 2);
  EXPECT_EQ(c.draw(0.4), 4);
  EXPECT_EQ(c.draw(0.9), 8);
  EXPECT_EQ(ParamRange::fixed(7).draw(0.3), 7);
  EXPECT_EQ(ParamRange::uniform(5, 3).check(), "lower bound 5 above upper bound 3");
  EXPECT_NE(ParamRange::log_uniform(0, 3).check(), "");
  EXPECT_EQ(ParamRange::log_uniform(256, 2048, 64).to_string(), "[256, 2048] log, step 64");
  EXPECT_EQ(ParamRange::choice({2, 4, 8}).to_string(), "{2, 4, 8}");
}

TEST(FamilyRegistry, EveryFamilySeededWellFormedAndInRange) {
  for (const std::string& f : family_names()) {
    SCOPED_TRACE(f);
    const Graph a = make_family_graph(f, 1), b = make_family_graph(f, 1),
                c = make_family_graph(f, 2);
    EXPECT_EQ(a.name(), f + "_1");
    EXPECT_EQ(fp(a), fp(b));
    EXPECT_NE(fp(a), fp(c));
    expect_well_formed(a);
    expect_well_formed(c);
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      const auto v = draw_family_params(f, seed);
      for (const FamilyParam& p : find_family(f)->params) {
        const int64_t x = param(v, p.name);
        if (p.normal.one_of.empty()) {
          EXPECT_GE(x, p.normal.lo) << p.name;
          EXPECT_LE(x, p.normal.hi) << p.name;
          EXPECT_EQ((x - p.normal.lo) % p.normal.step, 0) << p.name;
        } else {
          EXPECT_NE(std::find(p.normal.one_of.begin(), p.normal.one_of.end(), x),
                    p.normal.one_of.end())
              << p.name;
        }
      }
      const size_t ops = make_family_graph(f, seed).num_ops();
      EXPECT_GE(ops, 40u);
      EXPECT_LE(ops, 8000u);
    }
  }
}

TEST(FamilyRegistry, GoldenDrawsArePortable) {
  // std::mt19937_64 is fully specified and the mappings are our own, so these values hold
  // with every standard library.
  const auto v = draw_family_params("gnmt", 42);
  EXPECT_EQ(v, (std::vector<std::pair<std::string, int64_t>>{{"layers", 7},
                                                             {"hidden", 640},
                                                             {"src_len", 26},
                                                             {"tgt_len", 11},
                                                             {"batch", 105},
                                                             {"vocab", 9000},
                                                             {"fused_cells", 1}}));
}

TEST(FamilyRegistry, OverridesLeaveOtherDrawsAlone) {
  FamilyRanges r;
  r.overrides["layers"] = ParamRange::fixed(3);
  const auto base = draw_family_params("gnmt", 9), over = draw_family_params("gnmt", 9, r);
  ASSERT_EQ(base.size(), over.size());
  for (size_t i = 0; i < base.size(); ++i) {
    if (base[i].first == "layers") {
      EXPECT_EQ(over[i].second, 3);
    } else {
      EXPECT_EQ(over[i], base[i]);
    }
  }
  r.overrides["hidden"] = ParamRange::uniform(128, 128);
  const Graph g = make_family_graph("gnmt", 9, r, "custom");
  EXPECT_EQ(g.name(), "custom");
  EXPECT_EQ(g.tensor(g.op(g.find_op("attention.t0.query")).outputs[0]).shape[1], 128);
}

TEST(FamilyRegistry, LargePresetReachesGdpScale) {
  FamilyRanges r;
  r.size = FamilySize::kLarge;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    for (const FamilyParam& p : find_family("gnmt")->params) {
      const int64_t x = param(draw_family_params("gnmt", seed, r), p.name);
      EXPECT_GE(x, p.large.lo);
      EXPECT_LE(x, p.large.hi);
    }
  }
  r.overrides["layers"] = ParamRange::fixed(8);
  r.overrides["src_len"] = ParamRange::fixed(256);
  r.overrides["tgt_len"] = ParamRange::fixed(256);
  const auto t0 = std::chrono::steady_clock::now();
  const Graph g = make_family_graph("gnmt", 1, r);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("gnmt large, 8 layers, 256 steps: %zu ops in %.3f s\n", g.num_ops(), secs);
  EXPECT_EQ(g.num_ops(), 27u + 224 * 256);
  EXPECT_GE(g.num_ops(), 50000u);
}

TEST(FamilyRegistry, ClearErrors) {
  try {
    make_family_graph("gnmtt", 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown graph family 'gnmtt' (known: enas_cnn"),
              std::string::npos)
        << e.what();
  }
  FamilyRanges r;
  r.overrides["layer"] = ParamRange::fixed(2);
  try {
    make_family_graph("gnmt", 1, r);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gnmt: unknown parameter 'layer' (parameters: layers"),
              std::string::npos)
        << e.what();
  }
  r.overrides.clear();
  r.overrides["layers"] = ParamRange::uniform(8, 2);
  EXPECT_THROW(make_family_graph("gnmt", 1, r), Error);
}

}  // namespace
}  // namespace placer
