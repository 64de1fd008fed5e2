#include "src/util/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>
#include <utility>

#include "src/util/error.h"

namespace placer {

namespace {

/// An injected write failure (kWriteFaultEnv): `error` after `after_bytes` bytes.
struct WriteFault {
  int error = 0;
  size_t after_bytes = 0;
};

std::optional<WriteFault> write_fault_from_env() {
  const char* value = std::getenv(kWriteFaultEnv);
  if (value == nullptr || *value == '\0') return std::nullopt;
  const std::string spec = value;
  const std::string name = spec.substr(0, spec.find('@'));
  static constexpr std::pair<const char*, int> kErrors[] = {
      {"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT}, {"EIO", EIO}, {"EROFS", EROFS}, {"EACCES", EACCES}};
  WriteFault fault;
  for (const auto& [known, code] : kErrors) {
    if (name == known) fault.error = code;
  }
  bool ok = fault.error != 0;
  if (ok && name.size() < spec.size()) {
    const std::string count = spec.substr(name.size() + 1);
    ok = !count.empty() && count.find_first_not_of("0123456789") == std::string::npos;
    if (ok) fault.after_bytes = std::stoull(count);
  }
  if (!ok) {
    throw Error(std::string(kWriteFaultEnv) + ": '" + spec +
                "' is not ENOSPC, EDQUOT, EIO, EROFS or EACCES, optionally followed by @<bytes>");
  }
  return fault;
}

/// Writes all of `bytes` to `fd` (retrying short writes and EINTR). Returns 0, or the errno of
/// the write that failed; under an injected fault, content longer than its byte count fails
/// with its error once that many bytes are out.
int write_all(int fd, std::string_view bytes, const std::optional<WriteFault>& fault) {
  const bool injected = fault && bytes.size() > fault->after_bytes;
  const size_t limit = injected ? fault->after_bytes : bytes.size();
  size_t done = 0;
  while (done < limit) {
    const ssize_t n = ::write(fd, bytes.data() + done, limit - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += size_t(n);
  }
  return injected ? fault->error : 0;
}

/// Gives the new file the permission bits of the file it replaces (the atomic rename would
/// otherwise reset a file the user chmod'ed to the umask's default).
void keep_mode_of(const std::string& path, int fd) {
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::fchmod(fd, st.st_mode & 07777);
}

/// Makes the rename durable. Best effort: the file is already complete and in place, and some
/// file systems refuse fsync on a folder (EINVAL), which is no reason to fail the write.
void sync_parent_folder(const std::string& path) {
  std::string folder = std::filesystem::path(path).parent_path().string();
  if (folder.empty()) folder = ".";
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

[[noreturn]] void throw_write_error(const std::string& path, const std::string& action, int err) {
  throw FileError(format_context(path, "", action + ": " + std::strerror(err)));
}

}  // namespace

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string temp_path_for(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid());
}

void atomic_rename(const std::string& tmp, const std::string& final_path) {
  if (std::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw FileError(format_context(
        final_path, "", std::string("cannot move ") + tmp + " into place: " + std::strerror(err)));
  }
}

StagedFile::StagedFile(std::string path, std::string_view bytes, std::string what)
    : path_(std::move(path)), what_(std::move(what)), tmp_(temp_path_for(path_)) {
  const std::optional<WriteFault> fault = write_fault_from_env();
  const int fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw_write_error(path_, "cannot write " + what_, errno);
  keep_mode_of(path_, fd);
  int err = write_all(fd, bytes, fault);
  // Many file systems report a full disk only when the data is flushed: fsync before rename.
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(tmp_.c_str());
    throw_write_error(path_, "cannot write " + what_, err);
  }
}

StagedFile::~StagedFile() {
  if (!committed_) ::unlink(tmp_.c_str());
}

void StagedFile::commit() {
  PLACER_DCHECK(!committed_);
  committed_ = true;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    throw_write_error(path_, "cannot write " + what_, err);
  }
  sync_parent_folder(path_);
}

void write_file_atomic(const std::string& path, std::string_view bytes, const std::string& what) {
  StagedFile(path, bytes, what).commit();
}

void write_text_atomic(const std::string& path, const std::string& text, const std::string& what) {
  write_file_atomic(path, text, what);
}

void append_line(const std::string& path, std::string_view line, const std::string& what) {
  const std::optional<WriteFault> fault = write_fault_from_env();
  const std::string action = "cannot append to " + what;
  struct stat existing{};
  const bool existed = ::stat(path.c_str(), &existing) == 0;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  if (fd < 0) throw_write_error(path, action, errno);
  struct stat before{};
  int err = ::fstat(fd, &before) == 0 ? 0 : errno;
  if (err == 0) {
    std::string text(line);
    text += '\n';
    err = write_all(fd, text, fault);
    // Best effort: the write error is what gets reported; a failed cut-back adds nothing to it.
    if (err != 0 && ::ftruncate(fd, before.st_size) != 0) {
    }
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    if (!existed) ::unlink(path.c_str());  // a log this call created is not left empty
    throw_write_error(path, action, err);
  }
}

}  // namespace placer
