// The checked atomic writer (src/util/files.h): contents, permissions, and what a full disk,
// a missing folder, a read-only folder or a directory in the way leave behind (nothing, and an
// existing target untouched), with the exact error text.
#include "src/util/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "src/util/error.h"
#include "tests/scratch_dir_test.h"

namespace placer {
namespace {

namespace fs = std::filesystem;

class FilesTest : public testing::ScratchDirTest {
 protected:
  /// The message of the FileError that `write` throws ("" when it throws none).
  template <typename F>
  static std::string file_error_of(F&& write) {
    try {
      write();
    } catch (const FileError& e) {
      return e.what();
    }
    return "";
  }

};

TEST_F(FilesTest, WritesBytesAndReplacesAnExistingFileLeavingNoTempFile) {
  const std::string binary("a\0b\nc", 5);
  write_file_atomic(path("x.bin"), binary);
  EXPECT_EQ(read(path("x.bin")), binary);
  write_text_atomic(path("x.bin"), "second");
  EXPECT_EQ(read(path("x.bin")), "second");
  write_file_atomic(path("empty"), "");
  EXPECT_EQ(read(path("empty")), "");
  EXPECT_EQ(names(), (std::vector<std::string>{"empty", "x.bin"}));
}

TEST_F(FilesTest, ReplacingKeepsThePermissionBitsOfTheOldFile) {
  write_text_atomic(path("plan.yaml"), "old");
  ::chmod(path("plan.yaml").c_str(), 0600);
  write_text_atomic(path("plan.yaml"), "new");
  struct stat st{};
  ASSERT_EQ(::stat(path("plan.yaml").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(read(path("plan.yaml")), "new");
}

TEST_F(FilesTest, DiskFullMidFileLeavesNoFileAndNamesPathAndCause) {
  ::setenv(kWriteFaultEnv, "ENOSPC@4", 1);
  const std::string target = path("trace.json");
  EXPECT_EQ(file_error_of([&] { write_file_atomic(target, "0123456789", "trace"); }),
            target + ": cannot write trace: No space left on device");
  EXPECT_TRUE(names().empty());
}

TEST_F(FilesTest, ContentWithinTheFaultsByteCountIsWritten) {
  ::setenv(kWriteFaultEnv, "ENOSPC@4", 1);
  write_text_atomic(path("small"), "1234");
  append_line(path("log"), "abc");  // 4 bytes with the newline
  EXPECT_EQ(read(path("small")), "1234");
  EXPECT_EQ(read(path("log")), "abc\n");
  EXPECT_THROW(write_text_atomic(path("big"), "12345"), FileError);
  EXPECT_EQ(names(), (std::vector<std::string>{"log", "small"}));
}

TEST_F(FilesTest, FailedWriteLeavesAnExistingTargetUntouched) {
  write_text_atomic(path("policy.pt"), "the old policy");
  ::setenv(kWriteFaultEnv, "EDQUOT", 1);
  EXPECT_EQ(file_error_of([&] { write_file_atomic(path("policy.pt"), "new bytes", "policy"); }),
            path("policy.pt") + ": cannot write policy: Disk quota exceeded");
  EXPECT_EQ(read(path("policy.pt")), "the old policy");
  EXPECT_EQ(names(), std::vector<std::string>{"policy.pt"});
  // An I/O error reads the same way.
  ::setenv(kWriteFaultEnv, "EIO@100", 1);
  EXPECT_EQ(file_error_of([&] { write_text_atomic(path("policy.pt"), std::string(200, 'x')); }),
            path("policy.pt") + ": cannot write file: Input/output error");
  EXPECT_EQ(read(path("policy.pt")), "the old policy");
}

TEST_F(FilesTest, MissingFolderAndDirectoryInTheWayAreClearErrors) {
  EXPECT_EQ(file_error_of([&] { write_text_atomic(path("no/such/x.yaml"), "a", "plan"); }),
            path("no/such/x.yaml") + ": cannot write plan: No such file or directory");
  fs::create_directory(path("sub"));
  EXPECT_EQ(file_error_of([&] { write_text_atomic(path("sub"), "a"); }),
            path("sub") + ": cannot write file: Is a directory");
  EXPECT_EQ(names(), std::vector<std::string>{"sub"});
  EXPECT_TRUE(fs::is_empty(path("sub")));
}

// Root ignores permission bits, so the write runs in a child process that drops to "nobody"
// when it is root (gtest's EXPECT_EXIT forks; the child prints the error it got).
TEST_F(FilesTest, ReadOnlyFolderIsPermissionDenied) {
  write_text_atomic(path("old.yaml"), "old");
  ::chmod(dir_.c_str(), 0555);
  const std::string target = path("old.yaml");
  EXPECT_EXIT(
      {
        if (::geteuid() == 0 && ::setuid(65534) != 0) std::_Exit(3);
        std::cerr << file_error_of([&] { write_text_atomic(target, "new", "plan"); });
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "cannot write plan: Permission denied");
  ::chmod(dir_.c_str(), 0755);
  EXPECT_EQ(read(target), "old");
  EXPECT_EQ(names(), std::vector<std::string>{"old.yaml"});
}

TEST_F(FilesTest, StagedFileReplacesTheTargetOnlyOnCommit) {
  write_text_atomic(path("ckpt.pt"), "old");
  {
    StagedFile staged(path("ckpt.pt"), "abandoned", "checkpoint");
    EXPECT_EQ(read(path("ckpt.pt")), "old");  // staged, not in place yet
  }
  EXPECT_EQ(read(path("ckpt.pt")), "old");
  EXPECT_EQ(names(), std::vector<std::string>{"ckpt.pt"});
  StagedFile staged(path("ckpt.pt"), "new", "checkpoint");
  staged.commit();
  EXPECT_EQ(read(path("ckpt.pt")), "new");
  EXPECT_EQ(names(), std::vector<std::string>{"ckpt.pt"});
}

TEST_F(FilesTest, AppendLineAddsLinesAndCreatesTheFile) {
  append_line(path("log.jsonl"), R"({"update":1})");
  append_line(path("log.jsonl"), R"({"update":2})");
  EXPECT_EQ(read(path("log.jsonl")), "{\"update\":1}\n{\"update\":2}\n");
}

TEST_F(FilesTest, FailedAppendCutsTheFileBackAndNamesPathAndCause) {
  append_line(path("log.jsonl"), "first");
  ::setenv(kWriteFaultEnv, "ENOSPC@3", 1);
  EXPECT_EQ(file_error_of([&] { append_line(path("log.jsonl"), "second line"); }),
            path("log.jsonl") + ": cannot append to log: No space left on device");
  EXPECT_EQ(read(path("log.jsonl")), "first\n");  // no torn "sec"
  // A log the failing append would have created is not left behind.
  EXPECT_THROW(append_line(path("new.jsonl"), "line"), FileError);
  EXPECT_EQ(names(), std::vector<std::string>{"log.jsonl"});
  ::unsetenv(kWriteFaultEnv);
  EXPECT_EQ(file_error_of([&] { append_line(path("gone/log.jsonl"), "x"); }),
            path("gone/log.jsonl") + ": cannot append to log: No such file or directory");
}

TEST_F(FilesTest, MalformedFaultSpecIsAnErrorNotASilentSuccess) {
  for (const char* bad : {"ENOSPACE", "ENOSPC@", "ENOSPC@4k"}) {
    ::setenv(kWriteFaultEnv, bad, 1);
    try {
      write_text_atomic(path("x"), "a");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string(kWriteFaultEnv) + ": '" + bad +
                    "' is not ENOSPC, EDQUOT, EIO, EROFS or EACCES, optionally followed by "
                    "@<bytes>");
    }
  }
  EXPECT_TRUE(names().empty());
}

}  // namespace
}  // namespace placer
