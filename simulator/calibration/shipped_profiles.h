#pragma once
// The cost profile shipped for a cluster's GPU (docs/calibration.md, "Which profile for which
// GPU"): `place`, `simulate` and `calibrate check` use it when --profile is not given.
//
// A cluster is matched by the device model of its first GPU (the cluster file's
// `device_types.*.model`, or the name nvidia-smi prints). Where a GPU has profiles for
// several inter-node fabrics, a multi-host cluster gets the one nearest its inter-host link
// bandwidth; a single-host cluster gets the first listed. A profile made for one GPU (its
// kernels measured there, no collectives) serves only clusters of one GPU.
//
//   const std::string file = shipped_profile_file(cluster);   // "" = none shipped
//   if (!file.empty()) profile = load_cost_profile(shipped_profiles_dir() + "/" + file);

#include <string>
#include <vector>

#include "src/cluster/cluster.h"

namespace placer {

/// One shipped profile: the GPU models it serves and the fabric it was made for.
struct ShippedProfile {
  std::vector<std::string> models;  ///< device models, compared case-insensitively
  double fabric_gbit = 0;           ///< inter-host link per GPU, Gbit/s per direction
  std::string file;                 ///< under shipped_profiles_dir()
  bool one_gpu = false;             ///< serves only a cluster of one GPU
};

/// Every shipped profile, in the order they are matched.
const std::vector<ShippedProfile>& shipped_profiles();

/// The folder of the shipped cluster and profile files: $PLACER_PROFILES_DIR when set, else
/// datasets/clusters of the source tree placer was built from.
std::string shipped_profiles_dir();

/// The file name of the profile shipped for `cluster`'s first GPU, "" when there is none.
std::string shipped_profile_file(const Cluster& cluster);

}  // namespace placer
