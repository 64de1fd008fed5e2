#include "cli/profile_choice.h"

#include <filesystem>
#include <iostream>

#include "simulator/calibration/shipped_profiles.h"

namespace placer::cli {

std::string profile_path_for(const std::string& given, const Cluster& cluster) {
  if (!given.empty()) return given;
  const std::string file = shipped_profile_file(cluster);
  if (file.empty()) return "";
  const std::string path = shipped_profiles_dir() + "/" + file;
  return std::filesystem::exists(path) ? path : "";
}

std::string profile_label(const std::string& given, const Cluster& cluster) {
  const std::string path = profile_path_for(given, cluster);
  return path.empty() ? "built-in default" : path;
}

CostProfile load_profile_for(const std::string& given, const Cluster& cluster) {
  const std::string path = profile_path_for(given, cluster);
  if (path.empty()) return default_profile();
  if (given.empty()) {
    std::string model;
    for (const Device& d : cluster.devices()) {
      if (d.spec.kind == DeviceKind::kGpu) {
        model = d.spec.model;
        break;
      }
    }
    std::cerr << "placer: profile " << path << " (shipped for " << model
              << "; --profile overrides)\n";
  }
  return load_cost_profile(path);
}

}  // namespace placer::cli
