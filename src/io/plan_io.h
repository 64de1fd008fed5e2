#pragma once
// Reading and writing *.plan.yaml / *.plan.json files (format: docs/formats/plan.md).
//
// A plan file names ops and devices (devices also by global index), so reading needs the
// graph and the cluster it was made for. Placement is written compactly: a default
// device, colocation-group devices, and per-op entries only where an op differs from what
// it would inherit. An op that is not named takes, in this order: the device of its
// forward op (backward / optimizer ops), its group's device, the first device of its
// pipeline stage, the default device.
//
// load(save(p)) == p exactly, for YAML and JSON.
//
// Errors name the file and the field: FileError (cannot read/write), FormatError
// (malformed YAML/JSON, unknown keys, wrong types, wrong format_version), ValidationError
// (unknown op / device / group, index out of range, and everything Plan::validate finds).

#include <string>
#include <vector>

#include "src/plan/plan.h"

namespace placer {

class Graph;
class Cluster;

/// Newest version this build writes ("1.2"; a plan is written with the oldest version that
/// holds its fields: "1.0", "1.1" or "1.2"). Readers accept any 1.x; unknown keys are errors in
/// files of version <= 1.0 (typos) and ignored in newer 1.x files.
inline constexpr int kPlanFormatMajor = 1;
inline constexpr int kPlanFormatMinor = 2;

/// Loads a plan (JSON when `path` ends in ".json", YAML otherwise) and validates it
/// against `g` and `c`. Non-fatal findings (the plan was made for a graph of another
/// name) go to `warnings` when given, else to stderr.
Plan load_plan(const std::string& path, const Graph& g, const Cluster& c,
               std::vector<std::string>* warnings = nullptr);
/// Parses plan text; `filename` is used in messages only.
Plan parse_plan_yaml(const std::string& text, const std::string& filename, const Graph& g,
                     const Cluster& c, std::vector<std::string>* warnings = nullptr);
Plan parse_plan_json(const std::string& text, const std::string& filename, const Graph& g,
                     const Cluster& c, std::vector<std::string>* warnings = nullptr);

/// The plan as text. Validates `p` first (ValidationError when it does not fit g / c).
std::string plan_to_yaml(const Plan& p, const Graph& g, const Cluster& c);
std::string plan_to_json(const Plan& p, const Graph& g, const Cluster& c);
void save_plan_yaml(const Plan& p, const Graph& g, const Cluster& c, const std::string& path);
void save_plan_json(const Plan& p, const Graph& g, const Cluster& c, const std::string& path);
/// JSON when `path` ends in ".json", YAML otherwise.
void save_plan(const Plan& p, const Graph& g, const Cluster& c, const std::string& path);

}  // namespace placer
