// `placer simulate`: one training step of a plan on a cluster, reported on stdout.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/command_options.h"
#include "cli/common.h"
#include "cli/profile_choice.h"
#include "simulator/breakdown.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "simulator/trace.h"
#include "src/io/plan_io.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer::cli {
namespace {

struct SimulateArgs {
  std::string graph, cluster, plan, profile, trace, output, optimizer = "adam";
  bool no_expand = false;
  bool breakdown = false;
};

std::string describe_plan(const Plan& p) {
  std::string s = "method " + (p.method.empty() ? std::string("unknown") : p.method);
  if (p.pipeline.enabled()) {
    s += "; pipeline " + std::to_string(p.pipeline.stages.size()) + " stages x " +
         std::to_string(p.pipeline.micro_batches) + " micro-batches (" +
         to_string(p.pipeline.schedule) + ")";
  }
  if (p.data_parallel.replicas > 1) {
    s += "; " + std::to_string(p.data_parallel.replicas) + " data-parallel replicas (" +
         (p.synchronization.enabled ? std::string("per-variable")  // docs/sync.md
                                    : std::string(to_string(p.data_parallel.sync))) +
         " sync)";
  }
  if (!p.partitions.empty()) s += "; " + std::to_string(p.partitions.size()) + " partitioned ops";
  return s;
}

void report(const SimulateArgs& a, const Graph& g, const Cluster& c, const Plan& plan,
            const SimResult& r) {
  std::ostream& out = std::cout;
  out << "graph        " << g.name() << " (" << (g.is_training_step() ? "training step" : "forward")
      << ", " << g.num_ops() << " ops, " << human_count(g.total_flops(), "FLOP") << ", params "
      << human_bytes(double(g.total_param_bytes())) << ", batch " << g.batch_size() << ")\n";
  out << "cluster      " << c.name << " (" << c.num_devices() << " devices on " << c.num_hosts()
      << (c.num_hosts() == 1 ? " host)\n" : " hosts)\n");
  out << "profile      " << profile_label(a.profile, c) << "\n";
  out << "plan         " << a.plan << " (" << describe_plan(plan) << ")\n\n";

  out << "step time    " << human_time(r.step_time) << "\n";
  if (g.batch_size() > 0 && r.step_time > 0) {
    out << "throughput   " << fixed(double(g.batch_size()) / r.step_time, 1) << " samples/s\n";
  }
  int worst = 0;
  double worst_frac = -1;
  for (int d = 0; d < c.num_devices(); ++d) {
    const double frac = double(r.peak_memory[d]) / double(c.device(d).spec.memory_bytes);
    if (frac > worst_frac) worst_frac = frac, worst = d;
  }
  out << "peak memory  " << human_bytes(double(r.peak_memory[worst])) << " on "
      << c.device(worst).name << " (" << fixed(100 * worst_frac, 0) << "% of "
      << human_bytes(double(c.device(worst).spec.memory_bytes)) << ")";
  if (r.oom) {
    out << "; OUT OF MEMORY on";
    for (int d : r.oom_devices) out << " " << c.device(d).name;
  } else {
    out << "; fits";
  }
  out << "\n\n";

  size_t w = 8;
  for (const Device& d : c.devices()) w = std::max(w, d.name.size() + 2);
  out << pad_right("device", w) << pad_left("compute", 11) << pad_left("comm", 11)
      << pad_left("idle", 11) << pad_left("util", 7) << pad_left("peak mem", 12)
      << pad_left("capacity", 12) << "\n";
  int busiest = 0;
  for (int d = 0; d < c.num_devices(); ++d) {
    const double util = r.step_time > 0 ? r.compute_time[d] / r.step_time : 0;
    if (r.compute_time[d] > r.compute_time[busiest]) busiest = d;
    out << pad_right(c.device(d).name, w) << pad_left(human_time(r.compute_time[d]), 11)
        << pad_left(human_time(r.comm_time[d]), 11) << pad_left(human_time(r.idle_time[d]), 11)
        << pad_left(fixed(100 * util, 0) + "%", 7)
        << pad_left(human_bytes(double(r.peak_memory[d])), 12)
        << pad_left(human_bytes(double(c.device(d).spec.memory_bytes)), 12) << "\n";
  }
  out << "\n";

  // Bottleneck: the busiest device's compute, or communication / dependencies when no
  // device computes most of the step.
  const double util = r.step_time > 0 ? r.compute_time[busiest] / r.step_time : 0;
  double comm_max = 0;
  int comm_dev = 0;
  for (int d = 0; d < c.num_devices(); ++d) {
    if (r.comm_time[d] > comm_max) comm_max = r.comm_time[d], comm_dev = d;
  }
  out << "bottleneck   ";
  if (r.oom) {
    out << "memory: the plan does not fit (see above)\n";
  } else if (util >= 0.8) {
    out << "compute on " << c.device(busiest).name << " (busy " << fixed(100 * util, 0)
        << "% of the step)\n";
  } else if (r.step_time > 0 && comm_max / r.step_time >= 0.5) {
    out << "communication on " << c.device(comm_dev).name << " ("
        << fixed(100 * comm_max / r.step_time, 0) << "% of the step moving data)\n";
  } else {
    out << "dependencies / load imbalance (busiest device " << c.device(busiest).name
        << " computes " << fixed(100 * util, 0) << "% of the step)\n";
  }
  if (!r.critical_path.empty()) {
    out << "critical     " << r.critical_path.size() << " ops, from '"
        << g.op(r.critical_path.front()).name << "' to '" << g.op(r.critical_path.back()).name
        << "'\n";
  }
}

// Columns of the breakdown table: header and the value of a row.
struct BreakdownColumn {
  const char* name;
  double (*value)(const DeviceBreakdown&);
};

const BreakdownColumn kBreakdownColumns[] = {
    {"forward", [](const DeviceBreakdown& b) { return b.forward; }},
    {"backward", [](const DeviceBreakdown& b) { return b.backward; }},
    {"optimizer", [](const DeviceBreakdown& b) { return b.optimizer; }},
    {"tp-allred", [](const DeviceBreakdown& b) { return b.collective[0]; }},
    {"tp-allgath", [](const DeviceBreakdown& b) { return b.collective[1]; }},
    {"tp-redscat", [](const DeviceBreakdown& b) { return b.collective[2]; }},
    {"tp-bcast", [](const DeviceBreakdown& b) { return b.collective[3]; }},
    {"all-to-all", [](const DeviceBreakdown& b) { return b.collective[4]; }},
    {"fsdp-gath", [](const DeviceBreakdown& b) { return b.fsdp_gather; }},
    {"cp-exch", [](const DeviceBreakdown& b) { return b.context_exchange; }},
    {"dp-sync", [](const DeviceBreakdown& b) { return b.gradient_sync; }},
    {"barrier", [](const DeviceBreakdown& b) { return b.barrier; }},
    {"transfers", [](const DeviceBreakdown& b) { return b.transfer; }},
    {"host-wait", [](const DeviceBreakdown& b) { return b.host_wait; }},
    {"idle", [](const DeviceBreakdown& b) { return b.idle; }},
};

// `--breakdown`: per device, where the step goes; columns that are zero everywhere are left
// out, and at most 64 devices are listed.
void print_breakdown(const Graph& g, const Cluster& c, const Plan& plan, const SimResult& r) {
  const std::vector<DeviceBreakdown> rows = step_breakdown(r, g, plan);
  std::vector<const BreakdownColumn*> cols;
  for (const BreakdownColumn& col : kBreakdownColumns) {
    for (const DeviceBreakdown& b : rows) {
      if (col.value(b) > 0) {
        cols.push_back(&col);
        break;
      }
    }
  }
  std::ostream& out = std::cout;
  out << "\nbreakdown    exposed time per device (each instant counted once, first of: compute,\n"
         "             tensor-parallel collectives, expert-parallel all-to-all, data-parallel "
         "sync,\n"
         "             barrier, transfers, host wait; idle = pipeline bubble and waiting for "
         "inputs)\n";
  size_t w = 8;
  for (const DeviceBreakdown& b : rows) w = std::max(w, c.device(b.device).name.size() + 2);
  out << pad_right("device", w) << pad_right("stages", 8);
  for (const BreakdownColumn* col : cols) out << pad_left(col->name, 11);
  out << "\n";
  const size_t shown = std::min<size_t>(rows.size(), 64);
  for (size_t i = 0; i < shown; ++i) {
    const DeviceBreakdown& b = rows[i];
    std::string stages;
    for (int s : b.stages) stages += (stages.empty() ? "" : ",") + std::to_string(s);
    out << pad_right(c.device(b.device).name, w) << pad_right(stages.empty() ? "-" : stages, 8);
    for (const BreakdownColumn* col : cols) out << pad_left(human_time(col->value(b)), 11);
    out << "\n";
  }
  if (rows.size() > shown) out << "... " << rows.size() - shown << " more devices\n";
}

// `--breakdown` under expert parallelism: each EP rank's routed tokens relative to an even
// share (mean and max over the MoE layers); the largest sets each layer's expert GEMMs.
void print_expert_load(const SimResult& r) {
  if (r.expert_load.empty()) return;
  const size_t ranks = r.expert_load[0].size();
  std::ostream& out = std::cout;
  out << "\nexpert load  routed tokens per EP rank relative to an even share, over "
      << r.expert_load.size() << " MoE layers (1.00 = balanced)\n"
      << pad_right("ep-rank", 9) << pad_left("mean", 8) << pad_left("max", 8) << "\n";
  for (size_t k = 0; k < ranks && k < 64; ++k) {
    double sum = 0, mx = 0;
    for (const std::vector<double>& layer : r.expert_load) {
      sum += layer[k];
      mx = std::max(mx, layer[k]);
    }
    out << pad_right(std::to_string(k), 9)
        << pad_left(fixed(sum / double(r.expert_load.size()), 2), 8) << pad_left(fixed(mx, 2), 8)
        << "\n";
  }
  if (ranks > 64) out << "... " << ranks - 64 << " more EP ranks\n";
}

void run_simulate(const SimulateArgs& a) {
  Graph g = load_graph_for_step(a.graph, !a.no_expand, a.optimizer);
  Cluster c = load_cluster(a.cluster);
  CostProfile profile = load_profile_for(a.profile, c);
  CostModel cost(c, profile);
  Plan plan = load_plan(a.plan, g, c);
  plan.validate(g, c);

  Simulator sim(g, c, cost);
  SimOptions opts;
  opts.record_events = !a.trace.empty() || a.breakdown;
  SimResult r = sim.run(plan, opts);
  report(a, g, c, plan, r);
  if (a.breakdown) {
    print_breakdown(g, c, plan, r);
    print_expert_load(r);
  }

  if (!a.trace.empty()) {
    ensure_parent_dir(a.trace);
    write_chrome_trace(r, g, c, a.trace);
    std::cout << "trace        " << a.trace << " (open in https://ui.perfetto.dev or chrome://tracing)\n";
  }
  if (!a.output.empty()) {
    plan.predicted.valid = true;
    plan.predicted.step_time = r.step_time;
    plan.predicted.peak_memory = r.peak_memory;
    plan.predicted.oom = r.oom;
    ensure_parent_dir(a.output);
    if (ends_with(a.output, ".json")) {
      save_plan_json(plan, g, c, a.output);
    } else {
      save_plan_yaml(plan, g, c, a.output);
    }
    std::cout << "plan         " << a.output << " (with the predicted step time and memory)\n";
  }
}

void simulate_options(CLI::App* sub, SimulateArgs& a) {
  add_graph_option(sub, a.graph);
  add_cluster_option(sub, a.cluster);
  add_input_file(sub, "-p,--plan", a.plan, "Plan (*.plan.yaml or *.plan.json)");
  add_profile_option(sub, a.profile);
  sub->add_option("--trace", a.trace, "Write a Chrome/Perfetto trace (JSON) of the step");
  add_output_option(sub, a.output,
                    "Write the plan with its predicted step time and peak memory (.yaml or .json)");
  add_optimizer_option(sub, a.optimizer);
  sub->add_flag("--breakdown", a.breakdown,
                "Print where each device's step goes: compute, exposed collectives by kind,\n"
                "data-parallel sync, barrier, transfers, host wait, idle (bubble)");
  sub->add_flag("--no-expand", a.no_expand,
                "Simulate a forward graph as it is (no backward / optimizer ops)");
}

}  // namespace

static CommandRegistrar simulate_registrar = define_command<SimulateArgs>(
    10, "simulate",
    "Simulate one training step of a plan: step time, throughput, per-device utilization\n"
    "and memory, the bottleneck; optionally a Chrome/Perfetto trace of the step.",
    simulate_options, run_simulate);

}  // namespace placer::cli
