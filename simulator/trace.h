#pragma once
// Chrome / Perfetto trace of a simulated step (open in https://ui.perfetto.dev or
// chrome://tracing). One process per device with two threads, "compute" and "comm"; ops,
// transfers and collectives are complete ("X") events in microseconds.

#include <string>

#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"

namespace placer {

/// Writes `result.events` (run the simulator with SimOptions::record_events) as Chrome trace
/// JSON. Throws FileError when `path` cannot be written.
void write_chrome_trace(const SimResult& result, const Graph& graph, const Cluster& cluster,
                        const std::string& path);

/// The same trace as a JSON string (for tests and in-memory use).
std::string chrome_trace_json(const SimResult& result, const Graph& graph, const Cluster& cluster);

}  // namespace placer
