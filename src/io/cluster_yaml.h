#pragma once
// Reading and writing *.cluster.yaml files (format: docs/formats/cluster.md).
//
//   format_version: "1.0"
//   name: two-gpus
//   device_types:
//     v100: {kind: gpu, peak_flops: {f32: 15.7 TFLOPS}, memory: 32 GiB,
//            memory_bandwidth: 900 GB/s, launch_overhead: 5 us}
//   hosts:
//     - {name: host0, devices: {type: v100, count: 2}}
//   links:
//     intra_host: {type: nvlink, latency: 5 us, bandwidth: 25 GB/s, sharing: per_pair}
//
// Errors: FileError (cannot read/write), FormatError (malformed YAML with line/column,
// unknown or missing keys, unreadable quantities, wrong format_version), ValidationError
// (zero-bandwidth link, cluster that fails Cluster::validate) — all naming the file and
// the field.

#include <string>

#include "src/cluster/cluster.h"

namespace placer {

/// Newest version this build reads and writes: "1.1" adds `topology` (a cluster without one
/// is written as "1.0"). Readers accept any 1.x; unknown keys are errors in files of
/// version <= 1.1 (typos) and ignored in newer 1.x files.
inline constexpr int kClusterFormatMajor = 1;
inline constexpr int kClusterFormatMinor = 1;

/// Loads and validates a cluster file.
Cluster load_cluster_yaml(const std::string& path);
/// Parses cluster YAML text; `filename` is used in error messages only.
Cluster parse_cluster_yaml(const std::string& text, const std::string& filename);

/// The cluster as YAML text that parse_cluster_yaml reads back to an equal cluster.
/// Device types are deduplicated (keyed by model), runs of identical hosts named
/// <prefix>0..<prefix>k-1 become one entry with `repeat: k`. Throws Error when a device
/// name is not the derived "<host>/<gpu|cpu><i>" (the format cannot express it).
std::string cluster_to_yaml(const Cluster& c);
/// Writes cluster_to_yaml(c) to `path` (FileError on failure).
void save_cluster_yaml(const Cluster& c, const std::string& path);

}  // namespace placer
