#pragma once
// The learning curves of a training run (`placer train-policy --plot`, `--plot-only`).

#include <string>

namespace placer {

/// Writes `dir`/curves.png from `dir`/log.jsonl: mean reward and best ratio per update, and
/// the validation geomeans when there are evaluations. Returns the image's path. FileError
/// (no log), Error (gnuplot missing or failing), FormatError (a line that is not JSON).
std::string plot_curves(const std::string& dir);

}  // namespace placer
