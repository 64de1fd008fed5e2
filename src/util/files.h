#pragma once
// Small file helpers shared by everything that writes checkpoints, policies and logs:
// atomic replacement (write a temporary file beside the target, then rename it over the
// target, so a reader or a crash never sees half a file) and the UTC time stamp recorded in
// meta files.
#include <string>

namespace placer {

/// The current time in UTC as "YYYY-MM-DDTHH:MM:SSZ".
std::string utc_now();

/// The temporary file that atomic writes of `path` use: "<path>.tmp.<pid>" (same folder, so
/// the rename stays on one file system; the pid keeps concurrent processes apart).
std::string temp_path_for(const std::string& path);

/// std::rename(tmp, final_path); on failure removes `tmp` and throws FileError naming both.
void atomic_rename(const std::string& tmp, const std::string& final_path);

/// Writes `text` to temp_path_for(path), then atomic_rename()s it to `path`. FileError when
/// the temporary file cannot be written (it is removed).
void write_text_atomic(const std::string& path, const std::string& text);

}  // namespace placer
