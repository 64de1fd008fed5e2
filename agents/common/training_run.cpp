// The training harness (agents/common/training_run.h): run folder, config.yaml, log.jsonl,
// fingerprints, the checkpoint's name and lookup.
#include "agents/common/training_run.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "src/io/yaml_util.h"
#include "src/util/error.h"
#include "src/util/files.h"

namespace placer {

namespace fs = std::filesystem;

std::string shown_path(const std::string& path) {
  std::error_code ec;
  const fs::path rel = fs::path(path).lexically_relative(fs::current_path(ec));
  if (ec || rel.empty() || *rel.begin() == "..") return path;
  return rel.string();
}

TrainingRun::TrainingRun(std::string dir) : dir_(std::move(dir)) {}

std::string TrainingRun::file(const std::string& name) const { return dir_ + "/" + name; }

void TrainingRun::create() const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) {
    throw FileError(shown_path(dir_) + ": cannot create the output directory (" + ec.message() +
                    ")");
  }
}

const std::vector<std::string>& TrainingRun::run_files() {
  static const std::vector<std::string> files = {
      "checkpoint.pt", "checkpoint.pt.meta.json", "policy.pt", "policy.pt.meta.json",
      "best.pt",       "best.pt.meta.json",       "log.jsonl", "curves.png"};
  return files;
}

void TrainingRun::open(bool resume, bool overwrite, bool remove) const {
  const std::string checkpoint = checkpoint_file();
  if (resume && !fs::exists(checkpoint)) {
    throw FileError("--resume: no checkpoint to resume from in " + shown_path(dir_) +
                    " (expected " + shown_path(checkpoint) + "; start the run without --resume)");
  }
  // A fresh run would append to an old log.jsonl: an existing run is never mixed in.
  const std::string old_log = log_file();
  if (resume || !(fs::exists(checkpoint) || fs::exists(old_log))) return;
  if (!overwrite) {
    throw Error(shown_path(dir_) + " already holds a training run (" +
                shown_path(fs::exists(checkpoint) ? checkpoint : old_log) +
                "); continue it with --resume, start over with --overwrite, or pick another "
                "--output-dir");
  }
  if (!remove) return;
  for (const std::string& f : run_files()) {
    std::error_code ec;
    fs::remove(file(f), ec);
  }
}

void TrainingRun::write_config(const std::string& yaml,
                               const std::function<bool(const std::string&)>& reads_back) const {
  create();
  const std::string path = config_file();
  write_text_file(path, yaml);
  if (!reads_back(path)) {
    throw std::logic_error(path + " does not read back to the effective configuration");
  }
}

void TrainingRun::append_log(std::string_view json_line) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);  // a failure shows in the append
  append_line(log_file(), json_line, "training log");
}

void TrainingRun::clear_log() const {
  create();
  write_text_atomic(log_file(), "", "training log");
}

void TrainingRun::cut_log(int64_t update) const {
  const std::string path = log_file();
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("update") ||
        !j["update"].is_number_integer()) {
      continue;  // a torn last line of an interrupted run
    }
    if (j["update"].get<int64_t>() <= update) kept += line + "\n";
  }
  in.close();
  write_text_atomic(path, kept, "training log");
}

std::string TrainingRun::latest_checkpoint() const {
  const std::string path = checkpoint_file();
  std::error_code ec;
  return fs::is_regular_file(path, ec) && fs::is_regular_file(path + ".meta.json", ec) ? path : "";
}

std::string TrainingRun::checkpoint_to_resume() const {
  const std::string path = latest_checkpoint();
  if (path.empty()) {
    throw FileError(checkpoint_file() +
                    ": no checkpoint to resume from (expected it and its sidecar " +
                    checkpoint_file() + ".meta.json; train without resuming first)");
  }
  return path;
}

namespace {

std::string first_difference_under(const Fingerprint& now, const Fingerprint& run,
                                   const std::string& prefix) {
  for (auto it = now.begin(); it != now.end(); ++it) {
    const std::string key = prefix + it.key();
    if (!run.is_object() || !run.contains(it.key())) return key;
    const Fingerprint& other = run.at(it.key());
    if (it->is_object() && other.is_object()) {
      const std::string d = first_difference_under(*it, other, key + ".");
      if (!d.empty()) return d;
    } else if (*it != other) {
      return key;
    }
  }
  return "";
}

/// The value at dotted `key` of `j` (null when absent).
Fingerprint at_dotted(Fingerprint j, const std::string& key) {
  for (size_t p = 0, q; p <= key.size(); p = q + 1) {
    q = key.find('.', p);
    if (q == std::string::npos) q = key.size();
    const std::string k = key.substr(p, q - p);
    j = j.is_object() && j.contains(k) ? j.at(k) : Fingerprint();
  }
  return j;
}

}  // namespace

std::string first_difference(const Fingerprint& now, const Fingerprint& run) {
  return first_difference_under(now, run, "");
}

std::string resume_mismatch(const Fingerprint& now, const Fingerprint& run,
                            const std::string& where, const std::string& note) {
  const std::string key = first_difference(now, run);
  if (key.empty()) return "";
  return where + ": cannot resume: " + key + " is " + at_dotted(now, key).dump() + " here but " +
         at_dotted(run, key).dump() + " in the run (" + note + ")";
}

}  // namespace placer
