// The training harness (agents/common/training_run.h): the run folder guard, config.yaml
// written and read back, log.jsonl appended and cut back, the latest checkpoint, the
// fingerprint naming the first differing key; the stop flag (agents/common/stop_signals.h).
#include "agents/common/training_run.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "agents/common/stop_signals.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"
#include "tests/scratch_dir_test.h"

namespace placer {
namespace {

class TrainingRunTest : public testing::ScratchDirTest {
 protected:
  static std::string read(const std::string& file) {
    std::ifstream in(file);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void touch(const std::string& file, const std::string& text = "x") {
    std::ofstream(file) << text;
  }
};

TEST_F(TrainingRunTest, NamesTheFilesOfTheFolder) {
  const TrainingRun run(path("r"));
  EXPECT_EQ(run.checkpoint_file(), path("r") + "/checkpoint.pt");
  EXPECT_EQ(run.log_file(), path("r") + "/log.jsonl");
  EXPECT_EQ(run.config_file(), path("r") + "/config.yaml");
  EXPECT_EQ(run.file("best.pt"), path("r") + "/best.pt");
}

TEST_F(TrainingRunTest, ConfigIsWrittenAndReadBack) {
  const TrainingRun run(path("a/b"));  // created with its parents
  std::string seen;
  run.write_config("seed: 5\nnet:\n  hidden: 64\n", [&seen](const std::string& file) {
    seen = file;
    const YAML::Node n = YAML::LoadFile(file);
    return n["seed"].as<int>() == 5 && n["net"]["hidden"].as<int>() == 64;
  });
  EXPECT_EQ(seen, path("a/b") + "/config.yaml");
  EXPECT_EQ(read(seen), "seed: 5\nnet:\n  hidden: 64\n");
  // A writer / reader that disagree is a bug, not a user error.
  EXPECT_THROW(run.write_config("seed: 6\n", [](const std::string&) { return false; }),
               std::logic_error);
}

TEST_F(TrainingRunTest, RefusesToOverwriteARunUnlessAsked) {
  const TrainingRun run(path("run"));
  run.open(/*resume=*/false, /*overwrite=*/false);  // no folder yet: fine
  run.create();
  run.open(false, false);  // an empty folder: fine
  touch(run.log_file(), "{\"update\":1}\n");
  try {
    run.open(false, false);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already holds a training run"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("log.jsonl"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::filesystem::exists(run.log_file()));
  // A checkpoint is named before the log.
  touch(run.checkpoint_file());
  try {
    run.open(false, false);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint.pt"), std::string::npos) << e.what();
  }
  // --overwrite removes the run's files (TrainingRun::run_files(), and only those); a
  // distributed run's rank > 0 removes nothing.
  touch(run.file("notes.txt"));
  run.open(false, true, /*remove=*/false);
  EXPECT_TRUE(std::filesystem::exists(run.log_file()));
  touch(run.file("best.pt"));
  run.open(false, true);
  EXPECT_FALSE(std::filesystem::exists(run.log_file()));
  EXPECT_FALSE(std::filesystem::exists(run.checkpoint_file()));
  EXPECT_TRUE(std::filesystem::exists(run.file("notes.txt")));
  // --resume needs the checkpoint.
  EXPECT_FALSE(std::filesystem::exists(run.file("best.pt")));
  EXPECT_THROW(run.open(true, false), FileError);
}

TEST_F(TrainingRunTest, FindsTheLatestCheckpoint) {
  const TrainingRun run(path("run"));
  EXPECT_EQ(run.latest_checkpoint(), "");
  EXPECT_THROW(run.checkpoint_to_resume(), FileError);
  run.create();
  touch(run.checkpoint_file());
  EXPECT_EQ(run.latest_checkpoint(), "");  // no sidecar: not a checkpoint yet
  try {
    run.checkpoint_to_resume();
    FAIL() << "expected FileError";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("no checkpoint to resume from"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("checkpoint.pt.meta.json"), std::string::npos);
  }
  touch(run.checkpoint_file() + ".meta.json", "{\"update\": 3}");
  EXPECT_EQ(run.latest_checkpoint(), run.checkpoint_file());
  EXPECT_EQ(run.checkpoint_to_resume(), run.checkpoint_file());
  run.open(/*resume=*/true, false);  // fine now
}

TEST_F(TrainingRunTest, AppendsLogLinesAndCutsThemBack) {
  const TrainingRun run(path("new/run"));
  run.append_log("{\"type\":\"update\",\"update\":1,\"loss\":0.5}");
  run.append_log("{\"type\":\"update\",\"update\":2,\"loss\":0.25}");
  run.append_log("{\"type\":\"eval\",\"update\":2,\"geomean\":1.5}");
  run.append_log("{\"type\":\"update\",\"update\":3,\"loss\":0.125}");
  EXPECT_EQ(read(run.log_file()),
            "{\"type\":\"update\",\"update\":1,\"loss\":0.5}\n"
            "{\"type\":\"update\",\"update\":2,\"loss\":0.25}\n"
            "{\"type\":\"eval\",\"update\":2,\"geomean\":1.5}\n"
            "{\"type\":\"update\",\"update\":3,\"loss\":0.125}\n");
  // A torn last line (a run killed mid-write) goes with the lines past the checkpoint.
  std::ofstream(run.log_file(), std::ios::app) << "{\"type\":\"upd";
  run.cut_log(2);
  EXPECT_EQ(read(run.log_file()),
            "{\"type\":\"update\",\"update\":1,\"loss\":0.5}\n"
            "{\"type\":\"update\",\"update\":2,\"loss\":0.25}\n"
            "{\"type\":\"eval\",\"update\":2,\"geomean\":1.5}\n");
  run.clear_log();
  EXPECT_EQ(read(run.log_file()), "");
  const TrainingRun none(path("none"));
  none.cut_log(5);  // no log: nothing to do, nothing created
  EXPECT_FALSE(std::filesystem::exists(none.log_file()));
}

TEST_F(TrainingRunTest, FingerprintNamesTheFirstDifferingKey) {
  const Fingerprint run = {{"family", "enas_cnn"},
                           {"net", {{"hidden", 64}, {"layers", 2}}},
                           {"rl", {{"lr", 0.01}, {"gamma", 1.0}}},
                           {"seed", 1}};
  Fingerprint now = run;
  EXPECT_EQ(first_difference(now, run), "");
  EXPECT_EQ(resume_mismatch(now, run, "runs/x/checkpoint.pt", "note"), "");
  now["net"]["hidden"] = 128;
  now["seed"] = 2;
  EXPECT_EQ(first_difference(now, run), "net.hidden");  // the first, in the fingerprint's order
  EXPECT_EQ(resume_mismatch(now, run, "runs/x/checkpoint.pt",
                            "a resumed run keeps the network sizes and the seed"),
            "runs/x/checkpoint.pt: cannot resume: net.hidden is 128 here but 64 in the run "
            "(a resumed run keeps the network sizes and the seed)");
  now["net"]["hidden"] = 64;
  EXPECT_EQ(first_difference(now, run), "seed");
  now["seed"] = 1;
  now["rl"]["lr"] = 0.5;
  EXPECT_EQ(resume_mismatch(now, run, "c.pt", "n"),
            "c.pt: cannot resume: rl.lr is 0.5 here but 0.01 in the run (n)");
  // A key the run lacks differs (null there); keys only the run has are not compared.
  now = run;
  now["mdp"] = {{"groups", 8}};
  EXPECT_EQ(first_difference(now, run), "mdp");
  EXPECT_EQ(resume_mismatch(now, run, "c.pt", "n"),
            "c.pt: cannot resume: mdp is {\"groups\":8} here but null in the run (n)");
  EXPECT_EQ(first_difference(run, now), "");
}

TEST_F(TrainingRunTest, ShownPathIsRelativeInsideTheCurrentDirectory) {
  const std::string cwd = std::filesystem::current_path().string();
  EXPECT_EQ(shown_path(cwd + "/runs/x/log.jsonl"), "runs/x/log.jsonl");
  EXPECT_EQ(shown_path("/definitely/elsewhere/log.jsonl"), "/definitely/elsewhere/log.jsonl");
}

TEST(StopSignals, ASignalSetsTheFlagPolledBetweenUpdates) {
  {
    StopSignals signals;
    const std::function<bool()> should_stop = signals.flag();
    EXPECT_FALSE(should_stop());
    std::raise(SIGINT);  // handled: sets the flag, the process goes on
    EXPECT_TRUE(should_stop());
    EXPECT_TRUE(signals.stopped());
  }
  StopSignals again;  // a new run starts with the flag down
  EXPECT_FALSE(again.stopped());
  std::raise(SIGTERM);
  EXPECT_TRUE(again.stopped());
}

}  // namespace
}  // namespace placer
