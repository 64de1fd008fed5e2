#pragma once
// Rounding of fitted parameters, shared by the curve fits and the profile fit.
#include <cmath>

namespace placer {

/// `v` rounded to `digits` significant digits (profiles stay readable; the errors written
/// are those of the rounded values).
inline double round_sig(double v, int digits = 4) {
  if (!(v != 0) || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, digits - 1 - std::floor(std::log10(std::abs(v))));
  return std::round(v * scale) / scale;
}

}  // namespace placer
