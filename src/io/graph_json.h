#pragma once
// The native graph file, `*.graph.json` (documented in docs/formats/graph.md).
//
// Machine-written and fast to load: tensors and ops are arrays referring to each other by
// index; fields equal to their defaults are left out. Every Op and Tensor field round trips
// exactly (doubles are written in their shortest exact form).
//
// Errors: FileError (cannot open / write, names the path), FormatError ("file: ops[12].inputs[0]:
// tensor index 99 out of range (graph has 40 tensors)", malformed JSON with its byte position,
// unknown major format_version), ValidationError from GraphBuilder (cycle, duplicate op name,
// tensor written twice) prefixed with the file name.

#include <string>

#include "src/graph/graph.h"

namespace placer {

/// Version written by save_graph_json: 1.1 when the graph has graph-level attrs (added in
/// 1.1), else 1.0. Readers accept any 1.x; fields unknown to this reader are errors in files
/// of version <= 1.1 (they are typos) and ignored in newer 1.x files.
inline constexpr int kGraphFormatMajor = 1;
inline constexpr int kGraphFormatMinor = 1;

/// Reads a graph file.
Graph load_graph_json(const std::string& path);
/// Parses graph JSON text; `filename` is only used in error messages.
Graph parse_graph_json(const std::string& text, const std::string& filename = "<graph json>");

/// Writes a graph file (one tensor / op per line). Throws FileError when it cannot be written,
/// ValidationError for values JSON cannot hold (non-finite flops).
void save_graph_json(const Graph& g, const std::string& path);
/// The text save_graph_json writes.
std::string graph_to_json(const Graph& g);

}  // namespace placer
