#include "simulator/trace.h"

#include <nlohmann/json.hpp>

#include "src/util/files.h"

namespace placer {

namespace {

constexpr int kComputeThread = 0;
constexpr int kCommThread = 1;

nlohmann::json metadata(const char* what, int pid, int tid, const std::string& name) {
  nlohmann::json m;
  m["ph"] = "M";
  m["name"] = what;
  m["pid"] = pid;
  m["tid"] = tid;
  m["args"] = {{"name", name}};
  return m;
}

}  // namespace

std::string chrome_trace_json(const SimResult& r, const Graph& g, const Cluster& c) {
  nlohmann::json events = nlohmann::json::array();
  for (int d = 0; d < c.num_devices(); ++d) {
    events.push_back(metadata("process_name", d, 0, c.device(d).name));
    nlohmann::json sort;
    sort["ph"] = "M";
    sort["name"] = "process_sort_index";
    sort["pid"] = d;
    sort["args"] = {{"sort_index", d}};
    events.push_back(sort);
    events.push_back(metadata("thread_name", d, kComputeThread, "compute"));
    events.push_back(metadata("thread_name", d, kCommThread, "comm"));
  }
  for (const SimEvent& e : r.events) {
    nlohmann::json x;
    x["ph"] = "X";
    x["pid"] = e.device;
    x["ts"] = e.start * 1e6;
    x["dur"] = (e.end - e.start) * 1e6;
    nlohmann::json args = nlohmann::json::object();
    if (e.micro_batch >= 0) args["micro_batch"] = e.micro_batch;
    switch (e.kind) {
      case SimEvent::kCompute:
      case SimEvent::kOptimizer: {
        const Op& op = g.op(e.op);
        x["name"] = op.name;
        x["cat"] = e.kind == SimEvent::kOptimizer ? "optimizer" : "compute";
        x["tid"] = kComputeThread;
        args["type"] = op.type;
        args["flops"] = op.flops;
        args["bytes"] = g.op_bytes(e.op);
        break;
      }
      case SimEvent::kTransfer: {
        const std::string tensor = e.tensor != kNoTensor ? g.tensor(e.tensor).name : "?";
        x["name"] = tensor + " -> " + c.device(e.peer).name;
        x["cat"] = "transfer";
        x["tid"] = kCommThread;
        args["bytes"] = e.bytes;
        args["to"] = c.device(e.peer).name;
        break;
      }
      case SimEvent::kCollective: {
        std::string name = "all-reduce";
        if (e.op != kNoOp) {
          name = "partition collective " + g.op(e.op).name;
        } else if (e.tensor != kNoTensor) {
          name = "gradient all-reduce (" + g.tensor(e.tensor).name + ", ...)";
        }
        x["name"] = name;
        x["cat"] = "collective";
        x["tid"] = kCommThread;
        args["bytes"] = e.bytes;
        break;
      }
    }
    x["args"] = args;
    events.push_back(std::move(x));
  }
  nlohmann::json root;
  root["traceEvents"] = std::move(events);
  root["displayTimeUnit"] = "ms";
  root["otherData"] = {{"graph", g.name()}, {"cluster", c.name}, {"step_time_s", r.step_time}};
  return root.dump();
}

void write_chrome_trace(const SimResult& result, const Graph& graph, const Cluster& cluster,
                        const std::string& path) {
  write_file_atomic(path, chrome_trace_json(result, graph, cluster) + "\n", "trace");
}

}  // namespace placer
