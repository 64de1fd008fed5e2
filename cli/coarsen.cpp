// `placer coarsen`: groups of ops (colocation, element-wise fusion, merging to a target
// count) and the coarse graph with one op per group and phase (docs/coarsening.md).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>
#include <memory>

#include "cli/command_options.h"
#include "cli/common.h"
#include "datasets/coarsen.h"
#include "src/graph/training_step.h"
#include "src/io/graph_json.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer::cli {
namespace {

struct CoarsenArgs {
  std::string graph, output, annotate, optimizer = "adam";
  int groups = 0;
  bool no_fuse = false, no_colocate = false, no_expand = false;
};

void run_coarsen(const CoarsenArgs& a) {
  Graph g = load_graph_json(a.graph);
  if (!a.no_expand && !g.is_training_step()) {
    TrainingOptions t;
    if (!parse_optimizer(a.optimizer, &t.optimizer)) {
      throw Error("--optimizer: unknown optimizer '" + a.optimizer +
                  "' (use sgd, momentum or adam)");
    }
    const size_t fwd = g.num_ops();
    g = expand_training_step(g, t);
    std::cerr << "placer: " << a.graph << " is a forward graph; coarsening its training step ("
              << fwd << " forward ops -> " << g.num_ops() << " ops with backward and "
              << a.optimizer << " updates; --no-expand keeps the forward graph)\n";
  }
  CoarsenOptions o;
  o.colocate = !a.no_colocate;
  o.fuse_elementwise = !a.no_fuse;
  o.target_groups = a.groups;
  const auto t0 = std::chrono::steady_clock::now();
  const Coarsening c = coarsen(g, o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::ostream& out = std::cout;
  const CoarsenStats& s = c.stats;
  out << "graph        " << g.name() << " (" << (g.is_training_step() ? "training step" : "forward")
      << ", " << g.num_ops() << " ops, " << human_count(g.total_flops(), "FLOP") << ")\n";
  out << "groups       " << s.ops << " ops";
  if (o.colocate) out << " -> " << s.groups_after_colocation << " after colocation";
  if (o.fuse_elementwise) out << " -> " << s.groups_after_fusion << " after fusion";
  if (o.target_groups > 0) {
    out << " -> " << s.groups << " after merging (target " << o.target_groups << ")";
  }
  out << "\n";
  if (o.target_groups > 0 && s.groups > size_t(o.target_groups)) {
    out << "note         " << s.groups << " groups is the fewest this graph allows without a "
        << "cycle between groups (docs/coarsening.md)\n";
  }
  size_t largest = 0;
  std::vector<double> flops(c.num_groups(), 0);
  for (size_t k = 0; k < c.num_groups(); ++k) {
    for (OpId i : c.ops_of_group[k]) flops[k] += g.op(i).flops;
    if (flops[k] > flops[largest] ||
        (flops[k] == flops[largest] && c.ops_of_group[k].size() > c.ops_of_group[largest].size())) {
      largest = k;
    }
  }
  if (c.num_groups() > 0) {
    const double total = g.total_flops();
    out << "largest      '" << c.group_names[largest] << "': " << c.ops_of_group[largest].size()
        << " ops, " << human_count(flops[largest], "FLOP");
    if (total > 0) out << " (" << fixed(100 * flops[largest] / total, 1) << "% of the step)";
    out << "\n";
  }
  out << "coarse graph " << c.coarse.num_ops() << " ops (one per group and phase), "
      << c.coarse.num_tensors() << " tensors, in " << human_time(secs) << "\n";
  if (s.rejected_merges > 0) {
    out << "             " << s.rejected_merges
        << " candidate merges refused (would close a cycle)\n";
  }

  ensure_parent_dir(a.output);
  save_graph_json(c.coarse, a.output);
  out << "wrote        " << a.output << "\n";
  if (!a.annotate.empty()) {
    ensure_parent_dir(a.annotate);
    save_graph_json(with_group_names(g, c), a.annotate);
    out << "wrote        " << a.annotate
        << " (every op's group = its coarse group: plans can use placement.groups)\n";
  }
}

void coarsen_options(CLI::App* sub, CoarsenArgs& a) {
  add_graph_option(sub, a.graph);
  add_output_option(sub, a.output, "Coarse graph to write (*.graph.json)")->required();
  sub->add_option("--groups", a.groups, "Merge down to this many groups (0 = no merging)")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()))
      ->capture_default_str();
  sub->add_flag("--no-fuse", a.no_fuse, "Do not fuse element-wise / data-movement chains");
  sub->add_flag("--no-colocate", a.no_colocate,
                "Do not keep an op with its gradient ops, its update and its Op::group");
  sub->add_option("--annotate", a.annotate,
                  "Also write the fine graph with every op's group set to its coarse group");
  add_optimizer_option(sub, a.optimizer);
  sub->add_flag("--no-expand", a.no_expand,
                "Coarsen a forward graph as it is (no backward / optimizer ops)");
}

}  // namespace

static CommandRegistrar coarsen_registrar = define_command<CoarsenArgs>(
    70, "coarsen",
    "Group ops for placement (an op with its gradient and update, element-wise chains,\n"
    "then merges down to --groups) and write the coarse graph: one op per group and phase.",
    coarsen_options, run_coarsen);

}  // namespace placer::cli
