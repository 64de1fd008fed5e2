#include "models/archive_file.h"

#include <c10/util/Exception.h>
#include <torch/serialize/output-archive.h>

#include "src/util/error.h"
#include "src/util/files.h"

namespace placer {

std::string archive_bytes(torch::serialize::OutputArchive& archive, const std::string& path,
                          const std::string& what) {
  std::string bytes;
  try {
    archive.save_to([&bytes](const void* data, size_t size) {
      bytes.append(static_cast<const char*>(data), size);
      return size;
    });
  } catch (const c10::Error& e) {
    const std::string message = e.what();
    throw FileError(format_context(path, "", "cannot write " + what + ": " +
                                                 message.substr(0, message.find('\n'))));
  }
  return bytes;
}

void save_archive_atomic(torch::serialize::OutputArchive& archive, const std::string& path,
                         const std::string& what) {
  write_file_atomic(path, archive_bytes(archive, path, what), what);
}

void save_archive_with_meta(torch::serialize::OutputArchive& archive, const std::string& path,
                            const std::string& what, const std::function<void()>& write_meta) {
  StagedFile staged(path, archive_bytes(archive, path, what), what);
  write_meta();
  staged.commit();
}

}  // namespace placer
