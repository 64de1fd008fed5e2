// LibTorch archives through the checked atomic writer (models/archive_file.h): a saved archive
// loads back; a full disk gives one FileError naming the file and the cause (no c10::Error,
// no crash), leaves no file and keeps an existing one; a meta file that cannot be written
// keeps the archive from being replaced.
#include "models/archive_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "src/util/error.h"
#include "src/util/files.h"
#include "tests/scratch_dir_test.h"

namespace placer {
namespace {

namespace fs = std::filesystem;

class ArchiveFileTest : public testing::ScratchDirTest {
 protected:
  static torch::serialize::OutputArchive archive_of(const torch::Tensor& t) {
    torch::serialize::OutputArchive archive;
    archive.write("weights", t);
    return archive;
  }
};

TEST_F(ArchiveFileTest, SavedArchiveLoadsBack) {
  const torch::Tensor weights = torch::arange(12, torch::kFloat).view({3, 4});
  auto archive = archive_of(weights);
  save_archive_atomic(archive, path("policy.pt"), "policy");
  torch::serialize::InputArchive in;
  in.load_from(path("policy.pt"));
  torch::Tensor back;
  in.read("weights", back);
  EXPECT_TRUE(torch::equal(back, weights));
  EXPECT_EQ(names(), std::vector<std::string>{"policy.pt"});
}

TEST_F(ArchiveFileTest, FullDiskIsOneFileErrorAndKeepsTheOldFile) {
  auto archive = archive_of(torch::ones({64, 64}));
  // Mid-archive, on a fresh path: nothing is left.
  ::setenv(kWriteFaultEnv, "ENOSPC@1000", 1);
  try {
    save_archive_atomic(archive, path("policy.pt"), "policy");
    ADD_FAILURE() << "no error";
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()), path("policy.pt") + ": cannot write policy: No space left on device");
  }
  EXPECT_TRUE(names().empty());
  // Over an existing policy: it keeps its bytes.
  ::unsetenv(kWriteFaultEnv);
  save_archive_atomic(archive, path("policy.pt"), "policy");
  const std::string old_bytes = read(path("policy.pt"));
  ::setenv(kWriteFaultEnv, "ENOSPC@1000", 1);
  auto other = archive_of(torch::zeros({64, 64}));
  EXPECT_THROW(save_archive_atomic(other, path("policy.pt"), "policy"), FileError);
  EXPECT_EQ(read(path("policy.pt")), old_bytes);
  EXPECT_EQ(names(), std::vector<std::string>{"policy.pt"});
}

TEST_F(ArchiveFileTest, MetaFileFailureLeavesTheOldPair) {
  write_text_atomic(path("checkpoint.pt"), "old archive");
  write_text_atomic(path("checkpoint.pt.meta.json"), "old meta");
  auto archive = archive_of(torch::ones({8}));
  // The meta write fails as on a full disk (after the archive is staged).
  auto write_meta = [&] {
    ::setenv(kWriteFaultEnv, "ENOSPC", 1);
    write_text_atomic(path("checkpoint.pt.meta.json"), "new meta", "checkpoint metadata");
  };
  try {
    save_archive_with_meta(archive, path("checkpoint.pt"), "checkpoint", write_meta);
    ADD_FAILURE() << "no error";
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()), path("checkpoint.pt.meta.json") +
                                         ": cannot write checkpoint metadata: No space left on device");
  }
  EXPECT_EQ(read(path("checkpoint.pt")), "old archive");
  EXPECT_EQ(read(path("checkpoint.pt.meta.json")), "old meta");
  EXPECT_EQ(names(), (std::vector<std::string>{"checkpoint.pt", "checkpoint.pt.meta.json"}));
  // Without the fault both are replaced.
  ::unsetenv(kWriteFaultEnv);
  save_archive_with_meta(archive, path("checkpoint.pt"), "checkpoint",
                         [&] { write_text_atomic(path("checkpoint.pt.meta.json"), "new meta"); });
  EXPECT_EQ(read(path("checkpoint.pt.meta.json")), "new meta");
  EXPECT_NE(read(path("checkpoint.pt")), "old archive");
}

}  // namespace
}  // namespace placer
