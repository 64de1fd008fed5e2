#pragma once
// LibTorch archives (policies, checkpoints) written through the project's one checked atomic
// writer (src/util/files.h) instead of LibTorch's own file writer, which throws c10::Error from
// its destructor when the disk fills and so aborts the process.
#include <functional>
#include <string>

namespace torch::serialize {
class OutputArchive;
}

namespace placer {

/// The bytes of `archive` (LibTorch's zip format), serialised in memory. A c10::Error of the
/// serialisation becomes FileError "<path>: cannot write <what>: <its first line>" (`path`
/// and `what` name the file the bytes are for); c10::Error never escapes.
std::string archive_bytes(torch::serialize::OutputArchive& archive, const std::string& path,
                          const std::string& what);

/// write_file_atomic(path, archive_bytes(archive, path, what), what): on a full disk or any
/// other write error, FileError "<path>: cannot write <what>: <strerror>", no file left and an
/// existing `path` untouched.
void save_archive_atomic(torch::serialize::OutputArchive& archive, const std::string& path,
                         const std::string& what);

/// Writes `archive` to `path` together with its meta file(s), which `write_meta` writes (through
/// write_text_atomic). The archive is staged (StagedFile) before `write_meta` runs and renamed
/// over `path` after it, so a full disk while writing either leaves the old pair in place.
void save_archive_with_meta(torch::serialize::OutputArchive& archive, const std::string& path,
                            const std::string& what, const std::function<void()>& write_meta);

}  // namespace placer
