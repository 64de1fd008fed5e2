#pragma once
// The cost profile of `place`, `compare`, `simulate` and `calibrate check`: --profile when
// given, else the profile shipped for the cluster's GPU (simulator/calibration/
// shipped_profiles.h), else the built-in default.

#include <string>

#include "simulator/cost_profile.h"
#include "src/cluster/cluster.h"

namespace placer::cli {

/// The profile file the command uses: `given` when not empty, else the shipped one for
/// `cluster` when it exists on disk, else "" (the built-in default).
std::string profile_path_for(const std::string& given, const Cluster& cluster);

/// What the command's output calls that profile: its path, or "built-in default".
std::string profile_label(const std::string& given, const Cluster& cluster);

/// Loads profile_path_for(given, cluster) (the built-in default for ""); when it is a shipped
/// profile, says so on stderr: "placer: profile <path> (shipped for <model>; --profile
/// overrides)".
CostProfile load_profile_for(const std::string& given, const Cluster& cluster);

}  // namespace placer::cli
