// Speed of `import_onnx` (datasets/onnx_import.h) on 10,000-node ONNX models built here with
// the ONNX protobuf API and written once to a temporary file:
//
//  - dense:      2,000 blocks of MatMul -> Add (bias) -> Relu -> LayerNormalization -> Add
//                (residual), weights as graph inputs (export_params=False style), x [batch,
//                128, 256] with a symbolic batch: 10,000 ops.
//  - torch_like: 834 blocks of Shape -> Gather -> Div -> Unsqueeze -> Concat -> Reshape (with
//                their 4 Constant nodes) -> MatMul -> Relu, the run-time shape arithmetic
//                torch writes: 10,008 nodes, 2,502 ops, 7,506 nodes folded. Div defeats
//                ONNX's data propagation, so every block after the first is sized by the
//                importer's sweep (folding + per-node re-inference): the worst case.
//
// Each iteration parses the file, substitutes the batch (8), runs ONNX shape inference
// (with data propagation) and the folding passes, and builds the Graph.
//
//   build-dir/onnx_import_bench --benchmark_min_time=2
//
// Target: <= 2 s for 10k nodes. Results: docs/results.md, "Graph files, ONNX import, corpora, coarsening".

#include <benchmark/benchmark.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "datasets/onnx_import.h"

namespace placer {
namespace {

constexpr int64_t kSeq = 128, kWidth = 256;

class ModelWriter {
 public:
  ModelWriter() {
    m_.set_ir_version(8);
    m_.set_producer_name("onnx_import_bench");
    auto* op = m_.add_opset_import();
    op->set_domain("");
    op->set_version(17);
    g_ = m_.mutable_graph();
    g_->set_name("bench");
  }

  void input(const std::string& name, const std::vector<int64_t>& dims, int elem,
             const std::string& first_symbol = "") {
    auto* in = g_->add_input();
    in->set_name(name);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* d = tt->mutable_shape()->add_dim();
      if (i == 0 && !first_symbol.empty()) {
        d->set_dim_param(first_symbol);
      } else {
        d->set_dim_value(dims[i]);
      }
    }
  }
  void weight(const std::string& name, const std::vector<int64_t>& dims) {
    input(name, dims, onnx::TensorProto::FLOAT);
  }

  onnx::NodeProto* node(const std::string& type, const std::string& name,
                        const std::vector<std::string>& in, const std::string& out) {
    auto* n = g_->add_node();
    n->set_op_type(type);
    n->set_name(name);
    for (const auto& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  }
  // A Constant node holding int64 values (shape literals, as torch writes them).
  void constant(const std::string& name, const std::vector<int64_t>& values, bool scalar) {
    auto* n = node("Constant", name, {}, name);
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    auto* t = a->mutable_t();
    t->set_data_type(onnx::TensorProto::INT64);
    if (!scalar) t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  }
  void output(const std::string& name) {
    auto* o = g_->add_output();
    o->set_name(name);
    o->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }

  std::string write(const std::string& tag) {
    const std::string path =
        (std::filesystem::temp_directory_path() / ("placer_onnx_bench_" + tag + ".onnx")).string();
    std::ofstream f(path, std::ios::binary);
    m_.SerializeToOstream(&f);
    return path;
  }

  int nodes() const { return g_->node_size(); }

 private:
  onnx::ModelProto m_;
  onnx::GraphProto* g_;
};

std::string dense_model(int blocks) {
  ModelWriter w;
  w.input("x", {1, kSeq, kWidth}, onnx::TensorProto::FLOAT, "batch");
  std::string x = "x";
  for (int i = 0; i < blocks; ++i) {
    const std::string p = "blocks." + std::to_string(i);
    const std::string s = "/blocks/" + p;
    w.weight(p + ".fc.weight", {kWidth, kWidth});
    w.weight(p + ".fc.bias", {kWidth});
    w.weight(p + ".norm.weight", {kWidth});
    w.weight(p + ".norm.bias", {kWidth});
    w.node("MatMul", s + "/fc/MatMul", {x, p + ".fc.weight"}, s + "/fc/MatMul_output_0");
    w.node("Add", s + "/fc/Add", {s + "/fc/MatMul_output_0", p + ".fc.bias"},
           s + "/fc/Add_output_0");
    w.node("Relu", s + "/act/Relu", {s + "/fc/Add_output_0"}, s + "/act/Relu_output_0");
    w.node("LayerNormalization", s + "/norm/LayerNormalization",
           {s + "/act/Relu_output_0", p + ".norm.weight", p + ".norm.bias"},
           s + "/norm/LayerNormalization_output_0");
    w.node("Add", s + "/Add", {x, s + "/norm/LayerNormalization_output_0"}, s + "/Add_output_0");
    x = s + "/Add_output_0";
  }
  w.output(x);
  return w.write("dense");
}

std::string torch_like_model(int blocks) {
  ModelWriter w;
  w.input("x", {1, kSeq, kWidth}, onnx::TensorProto::FLOAT, "batch");
  std::string x = "x";
  for (int i = 0; i < blocks; ++i) {
    const std::string p = "layers." + std::to_string(i);
    const std::string s = "/layers/" + p;
    w.weight(p + ".proj.weight", {kWidth, kWidth});
    w.node("Shape", s + "/Shape", {x}, s + "/Shape_output_0");
    w.constant(s + "/Constant", {0}, true);
    w.node("Gather", s + "/Gather", {s + "/Shape_output_0", s + "/Constant"},
           s + "/Gather_output_0");
    // batch / 1: ONNX's data propagation stops at Div, so the Reshape below (and everything
    // after it) is sized by the importer's folding sweep, block after block.
    w.constant(s + "/Constant_3", {1}, true);
    w.node("Div", s + "/Div", {s + "/Gather_output_0", s + "/Constant_3"}, s + "/Div_output_0");
    w.constant(s + "/Constant_1", {0}, false);
    w.node("Unsqueeze", s + "/Unsqueeze", {s + "/Div_output_0", s + "/Constant_1"},
           s + "/Unsqueeze_output_0");
    w.constant(s + "/Constant_2", {-1, kWidth}, false);
    auto* axis = w.node("Concat", s + "/Concat", {s + "/Unsqueeze_output_0", s + "/Constant_2"},
                        s + "/Concat_output_0")
                     ->add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(0);
    w.node("Reshape", s + "/Reshape", {x, s + "/Concat_output_0"}, s + "/Reshape_output_0");
    w.node("MatMul", s + "/proj/MatMul", {s + "/Reshape_output_0", p + ".proj.weight"},
           s + "/proj/MatMul_output_0");
    w.node("Relu", s + "/act/Relu", {s + "/proj/MatMul_output_0"}, s + "/act/Relu_output_0");
    x = s + "/act/Relu_output_0";
  }
  w.output(x);
  return w.write("torch_like");
}

void BM_ImportOnnx(benchmark::State& state) {
  static const std::string dense = dense_model(2000);
  static const std::string torch_like = torch_like_model(834);
  const std::string& path = state.range(0) == 0 ? dense : torch_like;
  ImportOptions opts;
  opts.batch_size = 8;
  ImportStats st;
  size_t ops = 0;
  for (auto _ : state) {
    Graph g = import_onnx(path, opts, nullptr, &st);
    ops = g.num_ops();
    benchmark::DoNotOptimize(g.total_flops());
  }
  state.SetLabel(state.range(0) == 0 ? "dense" : "torch_like");
  state.counters["nodes"] = static_cast<double>(st.nodes);
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["folded"] = static_cast<double>(st.folded_nodes);
  state.counters["reinferred"] = static_cast<double>(st.nodes_reinferred);
  state.counters["nodes/s"] = benchmark::Counter(static_cast<double>(st.nodes),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ImportOnnx)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace placer

BENCHMARK_MAIN();
