#include "src/util/files.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>

#include "src/util/error.h"

namespace placer {

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

void write_text_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = temp_path_for(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw FileError(format_context(path, "", "cannot write " + tmp));
    out << text;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw FileError(format_context(path, "", "error while writing " + tmp));
    }
  }
  atomic_rename(tmp, path);
}

}  // namespace placer
