#include "agents/common/rainbow_config.h"

#include <gtest/gtest.h>

#include "src/util/error.h"

namespace placer {
namespace {

TEST(RainbowConfig, KeyValueOverridesSetTheNamedFields) {
  RainbowConfig c;
  apply_rainbow_overrides(&c, {"lr=5e-4", "hidden=[64, 32]", "noisy=true", "batch_size=16",
                               "replay_capacity=500", "n_step=2", "seed=7"});
  EXPECT_DOUBLE_EQ(c.lr, 5e-4);
  EXPECT_EQ(c.hidden, (std::vector<int64_t>{64, 32}));
  EXPECT_TRUE(c.noisy);
  EXPECT_EQ(c.batch_size, 16);
  EXPECT_EQ(c.replay_capacity, 500u);
  EXPECT_EQ(c.n_step, 2);
  EXPECT_EQ(c.seed, 7u);
  EXPECT_EQ(c.target_update, 100);  // untouched default
}

TEST(RainbowConfig, BadKeysAndValuesAreClearErrors) {
  RainbowConfig c;
  try {
    set_rainbow_option(&c, "learning_rate", "1e-3");
    FAIL() << "no error";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown option"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("lr"), std::string::npos);
  }
  EXPECT_THROW(set_rainbow_option(&c, "lr", "fast"), ValidationError);
  EXPECT_THROW(set_rainbow_option(&c, "noisy", "maybe"), ValidationError);
  EXPECT_THROW(set_rainbow_option(&c, "replay_capacity", "0"), ValidationError);
  EXPECT_THROW(apply_rainbow_overrides(&c, {"lr"}), ValidationError);
  EXPECT_THROW(rainbow_config_from_yaml("[1, 2]", &c), FormatError);
  EXPECT_THROW(rainbow_config_from_yaml("gamma: [1, 2]\nbogus: 1\n", &c), ValidationError);
}

TEST(RainbowConfig, YamlRoundTrips) {
  RainbowConfig a;
  a.hidden = {256, 64, 8};
  a.lr = 2.5e-4;
  a.noisy = true;
  a.v_min = -3.25;
  a.epsilon_decay_steps = 1234;
  a.seed = 99;
  RainbowConfig b;
  rainbow_config_from_yaml(rainbow_config_to_yaml(a), &b);
  EXPECT_EQ(rainbow_config_to_yaml(a), rainbow_config_to_yaml(b));
  EXPECT_EQ(b.hidden, a.hidden);
  EXPECT_DOUBLE_EQ(b.lr, 2.5e-4);
  EXPECT_DOUBLE_EQ(b.v_min, -3.25);
  EXPECT_EQ(b.epsilon_decay_steps, 1234);
  EXPECT_EQ(b.seed, 99u);
  EXPECT_EQ(rainbow_option_names().front(), "hidden");
}

}  // namespace
}  // namespace placer
