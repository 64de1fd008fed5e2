#pragma once
// The training harness: what every trainer (gdp, placeto, rainbow-pp; `placer train-policy
// --agent A` picks one through the trainer registry, agents/training/trainers.h) does the same way
// with its run folder, so that each trainer keeps only its own network-specific work (the
// archive's tensors and optimizer state, written as an atomic pair by
// agents/common/policy_file.h). Torch-free. Ctrl-C: agents/common/stop_signals.h.
//
// A run folder holds
//   config.yaml                   the effective configuration (train-policy writes it and
//                                 checks that it reads back to the same configuration)
//   log.jsonl                     one JSON object a line, each with its "update"
//   checkpoint.pt (+ .meta.json)  the latest checkpoint, replaced as a pair; its sidecar
//                                 holds the update and what a resumed run must share with
//                                 it (the fingerprint: first_difference / resume_mismatch)
//   policy.pt, best.pt (+ .meta.json)  the policies
// See docs/architecture.md "Training: the harness and the trainer registry".

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace placer {

/// A path as messages show it: relative to the current directory when inside it, else as is.
std::string shown_path(const std::string& path);

/// The files of one training run in folder `dir`.
class TrainingRun {
 public:
  explicit TrainingRun(std::string dir);

  const std::string& dir() const { return dir_; }
  std::string file(const std::string& name) const;  ///< dir/name
  std::string checkpoint_file() const { return file("checkpoint.pt"); }
  std::string log_file() const { return file("log.jsonl"); }
  std::string config_file() const { return file("config.yaml"); }

  /// Creates the folder and its parents: FileError "<dir>: cannot create the output
  /// directory (<why>)".
  void create() const;

  /// The files a run writes (checkpoint, policies and their sidecars, log.jsonl,
  /// curves.png); --overwrite removes them.
  static const std::vector<std::string>& run_files();

  /// The folder of a run about to start: `resume` needs its checkpoint (FileError "--resume:
  /// no checkpoint to resume from in <dir> ..."); a fresh run refuses a folder that already
  /// holds a run (a checkpoint or a log.jsonl: Error "<dir> already holds a training run
  /// (<file>); ...") unless `overwrite`, which removes the run_files() when `remove` (in a
  /// distributed run rank 0 alone removes); other files stay.
  void open(bool resume, bool overwrite, bool remove = true) const;

  /// Writes config.yaml (creating the folder), then checks that `reads_back(config_file())`
  /// is true: the file gives back the effective configuration (std::logic_error otherwise:
  /// a bug of the configuration's writer or reader).
  void write_config(const std::string& yaml,
                    const std::function<bool(const std::string&)>& reads_back) const;

  /// Appends one JSON line to log.jsonl (creating the folder). A failed append throws
  /// FileError and leaves no torn line; the last checkpoint stays the durable state.
  void append_log(std::string_view json_line) const;
  /// An empty log.jsonl (written atomically), for a fresh run.
  void clear_log() const;
  /// Keeps the lines of log.jsonl whose "update" is <= `update` (what the checkpoint being
  /// resumed has seen); drops a torn or foreign line. No log: nothing to do.
  void cut_log(int64_t update) const;

  /// The latest checkpoint: checkpoint.pt when it and its sidecar exist, else "".
  std::string latest_checkpoint() const;
  /// latest_checkpoint(), or FileError "<checkpoint.pt>: no checkpoint to resume from
  /// (expected it and its sidecar <checkpoint.pt.meta.json>; train without resuming first)".
  std::string checkpoint_to_resume() const;

 private:
  std::string dir_;
};

/// A fingerprint: the settings a resumed run must share with the run it continues, as a JSON
/// object (nested objects give dotted keys: "net.hidden"), written into the checkpoint's
/// sidecar by the trainer.
using Fingerprint = nlohmann::ordered_json;

/// The first dotted key of `now` whose value differs in `run` (or that `run` lacks), in
/// `now`'s order; "" when they agree. Keys only `run` has are not compared.
std::string first_difference(const Fingerprint& now, const Fingerprint& run);

/// "" when `now` and `run` agree; else "<where>: cannot resume: <key> is <value now> here but
/// <value in the run> in the run (<note>)", naming the first difference. Each trainer throws
/// it as its error (gdp, placeto: ValidationError; rainbow-pp: FormatError).
std::string resume_mismatch(const Fingerprint& now, const Fingerprint& run,
                            const std::string& where, const std::string& note);

}  // namespace placer
