// The method kit: the budget clock (one meaning of SearchBudget), the option table (--set
// parsing, errors with the known keys and a suggestion, the schema) and the registry's
// option schemas.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "agents/api/placer.h"
#include "agents/api/search_budget.h"
#include "agents/common/option_fields.h"
#include "agents/common/option_table.h"
#include "agents/common/rainbow_config.h"
#include "agents/rainbow/rainbow_opp.h"
#include "agents/rainbow/rainbow_pp.h"
#include "agents/seq2seq/hdp.h"
#include "agents/sync/autosync_rl.h"
#include "src/util/error.h"

namespace placer {
namespace {

TEST(BudgetClock, RunsGivenWin) {
  SearchBudget b;
  b.max_evaluations = 5;
  const BudgetClock c(b, "m", 100);
  EXPECT_EQ(c.max_runs(), 5);
  EXPECT_TRUE(c.runs_left(4));
  EXPECT_FALSE(c.runs_left(5));
  EXPECT_TRUE(c.exhausted(5));
  EXPECT_DOUBLE_EQ(c.fraction_spent(2), 0.4);
}

TEST(BudgetClock, DefaultOnlyWithoutAnyLimit) {
  SearchBudget none;
  EXPECT_EQ(BudgetClock(none, "m", 100).max_runs(), 100);
  SearchBudget seconds;
  seconds.max_seconds = 100;
  EXPECT_EQ(BudgetClock(seconds, "m", 100).max_runs(), 0);  // time alone: no run limit
  EXPECT_TRUE(BudgetClock(seconds, "m", 100).runs_left(1 << 30));
  // rainbow-pp's kind: the default applies whenever the budget gives no runs.
  EXPECT_EQ(BudgetClock(seconds, "m", 100, BudgetClock::Default::kWithoutRunLimit).max_runs(),
            100);
}

TEST(BudgetClock, TimeRunsOut) {
  SearchBudget b;
  b.max_seconds = 0.01;
  const BudgetClock c(b, "m");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(c.time_left());
  EXPECT_TRUE(c.exhausted(0));
  EXPECT_GE(c.fraction_spent(0), 1.0);
}

TEST(BudgetClock, NegativeLimitsAreAnError) {
  SearchBudget b;
  b.max_evaluations = -1;
  try {
    BudgetClock c(b, "anneal");
    FAIL() << "no error";
  } catch (const ValidationError& e) {
    EXPECT_STREQ(e.what(), "anneal: budget limits must be >= 0");
  }
}

struct Toy {
  int n = 3;
  double x = 0.5;
  bool on = true;
  std::string name = "a";
};

OptionTable<Toy> toy_table() {
  OptionTable<Toy> t("toy");
  t.integer("n", "a count", [](auto& o) -> auto& { return o.n; })
      .number("x", "a number", [](auto& o) -> auto& { return o.x; })
      .flag("on", "a switch", [](auto& o) -> auto& { return o.on; })
      .refuse("seed", "the seed is --seed");
  t.add("name", "text", "a name", [](Toy* o, const std::string& v) { o->name = v; },
        [](const Toy& o) { return o.name; });
  return t;
}

std::string error_of(const OptionTable<Toy>& t, const std::vector<std::string>& kv) {
  Toy o;
  try {
    t.apply(&o, kv, "--set");
  } catch (const ValidationError& e) {
    return e.what();
  }
  return "";
}

TEST(OptionTable, AppliesInOrder) {
  const OptionTable<Toy> t = toy_table();
  Toy o;
  t.apply(&o, {"n=7", "x=1e-3", "on=false", "name=b", "n=8"}, "--set");
  EXPECT_EQ(o.n, 8);
  EXPECT_DOUBLE_EQ(o.x, 1e-3);
  EXPECT_FALSE(o.on);
  EXPECT_EQ(o.name, "b");
}

TEST(OptionTable, ErrorsNameFlagKeyOwnerAndKnownKeys) {
  const OptionTable<Toy> t = toy_table();
  EXPECT_EQ(error_of(t, {"n=many"}), "--set n (toy): expected a number, got 'many'");
  EXPECT_EQ(error_of(t, {"n=1.5"}), "--set n (toy): expected an integer, got '1.5'");
  EXPECT_EQ(error_of(t, {"on=maybe"}),
            "--set on (toy): expected true/false, yes/no, on/off or 1/0, got 'maybe'");
  EXPECT_EQ(error_of(t, {"nme=x"}),
            "--set nme (toy): unknown option (known: n, x, on, name); did you mean 'name'?");
  EXPECT_EQ(error_of(t, {"zzzzzz=1"}), "--set zzzzzz (toy): unknown option (known: n, x, on, name)");
  EXPECT_EQ(error_of(t, {"seed=1"}), "--set seed (toy): the seed is --seed");
  EXPECT_EQ(error_of(t, {"n"}), "--set 'n': expected KEY=VALUE");
}

TEST(OptionTable, BoolsTakeEverySpellingInAnyCase) {
  const OptionTable<Toy> t = toy_table();
  for (const char* v : {"true", "TRUE", "Yes", "on", "1"}) {
    Toy o;
    o.on = false;
    t.apply(&o, {std::string("on=") + v}, "--set");
    EXPECT_TRUE(o.on) << v;
  }
  for (const char* v : {"false", "No", "OFF", "0"}) {
    Toy o;
    t.apply(&o, {std::string("on=") + v}, "--set");
    EXPECT_FALSE(o.on) << v;
  }
}

TEST(OptionTable, AgentOptionsReadFromYamlAsPolicySidecarsHoldThem) {
  // The agent options of a policy sidecar (rainbow-pp's .meta.json "rainbow" text, autosync's
  // policy.pt.yaml) and of a training configuration's `rainbow:` section.
  RainbowConfig c;
  rainbow_config_from_yaml("noisy: YES\ndueling: 0\ndouble_q: off\nhidden: [32, 16]\nlr: 2e-4\n",
                           &c, "p.pt.meta.json: rainbow");
  EXPECT_TRUE(c.noisy);
  EXPECT_FALSE(c.dueling);
  EXPECT_FALSE(c.double_q);
  EXPECT_EQ(c.hidden, (std::vector<int64_t>{32, 16}));
  EXPECT_DOUBLE_EQ(c.lr, 2e-4);
  RainbowConfig back;
  rainbow_config_from_yaml(rainbow_config_to_yaml(c), &back, "round trip");
  EXPECT_EQ(rainbow_config_to_yaml(back), rainbow_config_to_yaml(c));
  try {
    rainbow_config_from_yaml("noisy: maybe\n", &c, "p.pt.meta.json: rainbow");
    FAIL() << "no error";
  } catch (const ValidationError& e) {
    EXPECT_STREQ(e.what(),
                 "p.pt.meta.json: rainbow noisy (rainbow agent): expected true/false, yes/no, "
                 "on/off or 1/0, got 'maybe'");
  }
}

struct Part {
  double x = 0.5;
};
struct Fields {
  int64_t n = 3;
  bool on = true;
  std::vector<int64_t> widths{8, 4};
  Part part;
};

TEST(OptionFields, KeysTakeTheirTypeFromTheirFields) {
  OptionTable<Fields> t("fields");
  add_fields(&t, R"(
    n       a count
    on      a switch
    widths  layer widths)",
             &Fields::n, &Fields::on, &Fields::widths);
  add_fields(&t, &Fields::part, "x  a number in a part", &Part::x);
  const std::vector<OptionSpec> s = t.schema(Fields{});
  ASSERT_EQ(s.size(), 4u);
  const std::vector<std::vector<std::string>> expected = {
      {"n", "int", "3", "a count"},
      {"on", "bool", "true", "a switch"},
      {"widths", "list", "[8, 4]", "layer widths"},
      {"x", "number", "0.5", "a number in a part"}};
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ((std::vector<std::string>{s[i].key, s[i].type, s[i].default_value, s[i].doc}),
              expected[i]);
  }
  Fields f;
  t.apply(&f, {"n=5", "on=no", "widths=1,2", "x=2.5"}, "--set");
  EXPECT_EQ(f.n, 5);
  EXPECT_FALSE(f.on);
  EXPECT_EQ(f.widths, (std::vector<int64_t>{1, 2}));
  EXPECT_DOUBLE_EQ(f.part.x, 2.5);
  // A block and its fields out of step: a programming error, named.
  EXPECT_THROW(add_fields(&t, "a  one\nb  two", &Fields::n), std::logic_error);
}

TEST(OptionTable, NestedTablesAndLimits) {
  AutosyncTrainOptions o;
  autosync_train_option_table().apply(
      &o, {"units=5", "allow_compression=On", "split=val", "lr=0.01", "hidden=8,4"}, "--set");
  EXPECT_EQ(o.units, 5);
  EXPECT_TRUE(o.allow_compression);
  EXPECT_EQ(o.split, "val");
  EXPECT_DOUBLE_EQ(o.agent.lr, 0.01);
  EXPECT_EQ(o.agent.hidden, (std::vector<int64_t>{8, 4}));
  const auto error = [&o](const std::string& kv) {
    try {
      autosync_train_option_table().apply(&o, {kv}, "--set");
    } catch (const ValidationError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error("units=0"), "--set units (autosync): must be >= 1, got 0");
  EXPECT_EQ(error("split=holdout"), "--set split (autosync): expected train, val or test, got 'holdout'");
  EXPECT_EQ(error("noisy=2"),
            "--set noisy (autosync): expected true/false, yes/no, on/off or 1/0, got '2'");
}

TEST(OptionTable, SchemaPrintsDefaults) {
  const std::vector<OptionSpec> s = toy_table().schema(Toy{});
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].key, "n");
  EXPECT_EQ(s[0].type, "int");
  EXPECT_EQ(s[0].default_value, "3");
  EXPECT_EQ(s[1].default_value, "0.5");
  EXPECT_EQ(s[2].default_value, "true");
  EXPECT_EQ(s[3].default_value, "a");
}

TEST(OptionTable, PrintedNumbersReadBack) {
  for (double x : {1e-3, 5e-4, 0.1, 1.0 / 3.0, 300.0}) {
    EXPECT_EQ(std::stod(print_option_number(x)), x);
  }
  EXPECT_EQ(print_option_number(0.001), "0.001");
}

TEST(MethodOptionTables, SchemaRoundTripsThroughSet) {
  // Setting every option to its printed default changes nothing (the table reads back what
  // it prints).
  RainbowOppOptions o = rainbow_opp_defaults(OppEnvOptions::Task::kDataParallel);
  std::vector<std::string> kv;
  for (const OptionSpec& s : rainbow_opp_option_table().schema(o)) {
    if (s.key != "v_min" && s.key != "v_max") kv.push_back(s.key + "=" + s.default_value);
  }
  RainbowOppOptions p = o;
  rainbow_opp_option_table().apply(&p, kv, "--set");
  EXPECT_EQ(rainbow_config_to_yaml(p.agent), rainbow_config_to_yaml(o.agent));
  EXPECT_EQ(p.episodes, o.episodes);
  EXPECT_EQ(p.env.reward, o.env.reward);

  RainbowPPOptions pp;
  rainbow_pp_option_table().apply(&pp, {"hidden=[64, 32]", "episodes=12"}, "--set");
  EXPECT_EQ(pp.hidden, (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(pp.episodes, 12);
  HdpOptions h;
  hdp_option_table().apply(&h, {"groups=5", "samples=4", "attention=luong"}, "--set");
  EXPECT_EQ(h.groups, 5);
  EXPECT_EQ(h.rl.samples, 4);
  EXPECT_EQ(h.net.attention, "luong");
}

TEST(Registry, EveryMethodHasADocAndUniqueOptionKeys) {
  std::set<std::string> names;
  for (const MethodInfo& m : placer_methods()) {
    EXPECT_TRUE(names.insert(m.name).second) << m.name;
    EXPECT_FALSE(m.description.empty()) << m.name;
    EXPECT_EQ(m.options.empty(), m.make_with == nullptr) << m.name;
    std::set<std::string> keys;
    for (const OptionSpec& o : m.options) {
      EXPECT_TRUE(keys.insert(o.key).second) << m.name << " " << o.key;
      EXPECT_FALSE(o.doc.empty()) << m.name << " " << o.key;
    }
  }
}

TEST(Registry, OptionsOnAMethodWithoutThemAreAnError) {
  MethodSettings s;
  s.sets = {"episodes=3"};
  s.flag = "--agent-set";
  try {
    make_placer("m-etf", s);
    FAIL() << "no error";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("--agent-set applies to the Rainbow placers"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NE(make_placer("m-etf", MethodSettings{}), nullptr);
}

}  // namespace
}  // namespace placer
