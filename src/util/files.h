#pragma once
// The one checked writer behind every file placer writes (plans, graphs, traces, profiles,
// corpora, checkpoints, policies, log rotations) and the checked append of the training
// logs, plus the UTC time stamp recorded in meta files.
//
// A write goes to a temporary file beside the target, is flushed and fsync'ed, then renamed
// over the target: a reader, a crash or a full disk never leaves half a file. On any failure
// the temporary file is removed, an existing target keeps its old content, and one FileError
// names the target and the cause: "out/plan.yaml: cannot write plan: No space left on device".
#include <string>
#include <string_view>

namespace placer {

/// The current time in UTC as "YYYY-MM-DDTHH:MM:SSZ".
std::string utc_now();

/// The temporary file that atomic writes of `path` use: "<path>.tmp.<pid>" (same folder, so
/// the rename stays on one file system; the pid keeps concurrent processes apart).
std::string temp_path_for(const std::string& path);

/// std::rename(tmp, final_path); on failure removes `tmp` and throws FileError naming both.
void atomic_rename(const std::string& tmp, const std::string& final_path);

/// Replaces `path` with `bytes` atomically and durably (temp file, write, fsync, rename,
/// fsync of the folder). A target that exists keeps its permission bits. On failure: the
/// temp file is removed, `path` is untouched, and FileError
/// "<path>: cannot write <what>: <strerror>" is thrown.
void write_file_atomic(const std::string& path, std::string_view bytes,
                       const std::string& what = "file");

/// The first half of write_file_atomic, for files that must change together (a checkpoint and
/// its meta file): the constructor writes and fsyncs the temp file beside `path` (FileError as
/// write_file_atomic's on failure, nothing left), commit() renames it over `path`. Destroyed
/// without commit(), the temp file is removed and `path` never changed. Staging the large file
/// first, writing the small one, then committing keeps a full disk from splitting the pair.
class StagedFile {
 public:
  StagedFile(std::string path, std::string_view bytes, std::string what = "file");
  ~StagedFile();
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;

  /// Renames the temp file over the target and fsyncs the folder. FileError (temp removed)
  /// when the rename fails. At most once.
  void commit();

 private:
  std::string path_, what_, tmp_;
  bool committed_ = false;
};

/// write_file_atomic for text (the same bytes; kept as the name the text writers call).
void write_text_atomic(const std::string& path, const std::string& text,
                       const std::string& what = "file");

/// Appends `line` and a newline to `path` (created when missing), as one write. Not fsync'ed:
/// logs are records next to a checkpoint, which is the durable state. On failure the file is
/// cut back to its length before the call (no torn line; removed if the call created it) and
/// FileError
/// "<path>: cannot append to <what>: <strerror>" is thrown.
void append_line(const std::string& path, std::string_view line, const std::string& what = "log");

/// Test hook (for tests only): when this environment variable is set to an errno name
/// (ENOSPC, EDQUOT, EIO, EROFS, EACCES), optionally followed by "@N", every write_file_atomic,
/// StagedFile and append_line whose content is longer than N bytes (default 0) writes the
/// first N bytes and then fails with that error, as a disk that fills up mid-file does;
/// shorter content is written. Any other value is an Error naming the variable, so a typo
/// cannot make a test pass silently.
inline constexpr const char* kWriteFaultEnv = "PLACER_TEST_WRITE_FAULT";

}  // namespace placer
