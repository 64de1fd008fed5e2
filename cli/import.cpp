// `placer import`: an ONNX model -> forward graph file (*.graph.json), with a summary.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>

#include "cli/command_options.h"
#include "cli/common.h"
#include "datasets/onnx_import.h"
#include "src/io/graph_json.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer::cli {
namespace {

struct ImportArgs {
  std::string model, output, dtype = "fp32", name;
  int64_t batch_size = 0, seq_len = 0;
  std::vector<std::string> dims, data_inputs;
};

std::string default_output(const std::string& model) {
  std::string base = model;
  if (ends_with(base, ".onnx")) base.resize(base.size() - 5);
  return base + ".graph.json";
}

void run_import(const ImportArgs& a) {
  ImportOptions opts;
  opts.batch_size = a.batch_size;
  opts.seq_len = a.seq_len;
  opts.name = a.name;
  opts.data_inputs = a.data_inputs;
  if (!parse_dtype(a.dtype, &opts.dtype) ||
      (opts.dtype != DType::kF32 && opts.dtype != DType::kF16 && opts.dtype != DType::kBF16)) {
    throw Error("--dtype: unknown compute dtype '" + a.dtype + "' (use fp32, fp16 or bf16)");
  }
  for (const std::string& d : a.dims) {
    const size_t eq = d.find('=');
    int64_t v = 0;
    size_t used = 0;
    bool ok = eq != std::string::npos && eq > 0 && eq + 1 < d.size();
    if (ok) {
      try {
        v = std::stoll(d.substr(eq + 1), &used);
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok || used != d.size() - eq - 1 || v <= 0) {
      throw Error("--dim: expected NAME=VALUE with a positive integer VALUE, got '" + d + "'");
    }
    opts.dim_overrides[d.substr(0, eq)] = v;
  }

  std::vector<std::string> warnings;
  ImportStats st;
  Graph g = import_onnx(a.model, opts, &warnings, &st);
  const std::string out_path = a.output.empty() ? default_output(a.model) : a.output;
  ensure_parent_dir(out_path);
  save_graph_json(g, out_path);

  std::ostream& out = std::cout;
  out << "model        " << a.model << " (ONNX ir " << st.ir_version << ", opset "
      << (st.upgraded_from > 0 ? st.upgraded_from : st.opset);
  if (!st.producer.empty()) out << ", " << st.producer;
  out << ")\n";
  if (st.upgraded_from > 0) {
    out << "opset        upgraded opset " << st.upgraded_from << " -> " << st.opset
        << " with ONNX's version converter\n";
  }
  out << "inputs       ";
  for (size_t i = 0; i < st.data_input_shapes.size(); ++i) {
    out << (i ? ", " : "") << st.data_input_shapes[i];
  }
  if (st.data_input_shapes.empty()) out << "no data inputs";
  out << "; " << st.param_tensors << " parameter tensors, " << st.state_tensors << " buffers\n";
  out << "graph        " << g.name() << ": " << g.num_ops() << " ops from " << st.nodes
      << " nodes (" << st.folded_nodes << " constant / shape / weight-layout nodes folded), batch "
      << g.batch_size() << ", compute dtype " << to_string(opts.dtype) << "\n";
  out << "shapes       " << st.shape_folds << " shape computations folded to constants, "
      << st.nodes_reinferred << " nodes re-inferred after folding\n";
  const double flops = g.total_flops();
  out << "compute      " << human_count(flops, "FLOP") << " forward";
  if (g.batch_size() > 0) {
    out << " (" << human_count(flops / double(g.batch_size()), "FLOP") << " per sample)";
  }
  out << "\n";
  std::map<std::string, std::pair<size_t, double>> by_cat;
  for (const Op& o : g.ops()) {
    auto& c = by_cat[to_string(o.category)];
    ++c.first, c.second += o.flops;
  }
  std::vector<std::pair<std::string, std::pair<size_t, double>>> cats(by_cat.begin(), by_cat.end());
  std::sort(cats.begin(), cats.end(), [](const auto& x, const auto& y) {
    return x.second.second != y.second.second ? x.second.second > y.second.second
                                              : x.first < y.first;
  });
  out << "by category ";
  for (size_t i = 0; i < cats.size(); ++i) {
    out << (i ? ", " : " ") << cats[i].first << " " << cats[i].second.first << " ops "
        << human_count(cats[i].second.second, "FLOP");
  }
  out << "\n";
  std::string values = human_count(double(st.param_bytes) / dtype_bytes(opts.dtype), "");
  while (!values.empty() && values.back() == ' ') values.pop_back();
  out << "parameters   " << human_bytes(double(st.param_bytes)) << " (" << values << " "
      << to_string(opts.dtype) << " values), buffers " << human_bytes(double(st.state_bytes))
      << "\n";
  if (warnings.empty()) {
    out << "warnings     none\n";
  } else {
    out << "warnings     " << warnings.size() << "\n";
    for (const std::string& w : warnings) out << "  - " << w << "\n";
  }
  out << "wrote        " << out_path << "\n";
}

void import_options(CLI::App* sub, ImportArgs& a) {
  sub->add_option("model", a.model, "ONNX model (*.onnx)")->required();
  add_output_option(sub, a.output, "Graph file to write (default: the model path with .graph.json)");
  sub->add_option("--batch-size", a.batch_size,
                  "Batch (first dim of the data inputs); default: the model's, 1 if symbolic")
      ->check(CLI::PositiveNumber);
  sub->add_option("--seq-len", a.seq_len,
                  "Value of symbolic sequence dims (names with seq / len / time / step)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--dtype", a.dtype,
                  "Compute precision: fp32, fp16, bf16 (op dtype and float tensor bytes)")
      ->capture_default_str();
  // One value per occurrence, so `--dim seq=8 model.onnx` leaves the model positional alone.
  sub->add_option("--dim", a.dims, "Value of a symbolic dim, NAME=VALUE (repeatable)")
      ->allow_extra_args(false);
  sub->add_option("--data-input", a.data_inputs,
                  "Treat this graph input as data, not as a parameter (repeatable)")
      ->allow_extra_args(false);
  sub->add_option("--name", a.name, "Graph name (default: the file name)");
}

}  // namespace

static CommandRegistrar import_registrar = define_command<ImportArgs>(
    20, "import",
    "Import an ONNX model as a forward graph (*.graph.json): shape inference with symbolic\n"
    "dims substituted, per-op FLOPs and bytes, parameters, module scopes (docs/import.md).",
    import_options, run_import);

}  // namespace placer::cli
