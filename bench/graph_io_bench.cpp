// Load / save speed of the native graph file (*.graph.json) on layered transformer-like
// graphs of 10k and 50k ops (about 2 tensors per op). The graphs are generated once by a
// seeded generator, saved to a temporary file, then loaded repeatedly.
//
//   build-dir/graph_io_bench --benchmark_min_time=1
//
// Results: docs/results.md, "Graph files, ONNX import, corpora, coarsening".

#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "src/graph/graph.h"
#include "src/io/graph_json.h"

namespace placer {
namespace {

// Stacks encoder layers (attention + MLP, ~24 ops each) until `num_ops` ops. Every op writes
// one activation; matmuls and norms read fresh weight/bias tensors, dropouts also write a
// mask, so there are about two tensors per op. Sizes and FLOPs vary with the seed.
class LayeredGraphGenerator {
 public:
  LayeredGraphGenerator(int num_ops, uint64_t seed) : target_(num_ops), rng_(seed), b_("bench") {}

  Graph generate() {
    b_.set_batch_size(batch_);
    hidden_ = 64 * static_cast<int64_t>(8 + rng_() % 13);  // 512 .. 1280
    x_ = activation("embeddings/out", hidden_);
    for (int layer = 0; static_cast<int>(b_.num_ops()) < target_; ++layer) {
      attention(layer);
      mlp(layer);
    }
    return b_.build();
  }

 private:
  TensorId activation(const std::string& name, int64_t width) {
    Tensor t;
    t.name = name;
    t.dtype = DType::kF16;
    t.shape = {batch_, seq_, width};
    t.bytes = static_cast<uint64_t>(batch_ * seq_ * width * 2);
    return b_.add_tensor(std::move(t));
  }
  TensorId parameter(const std::string& name, std::vector<int64_t> shape) {
    Tensor t;
    t.name = name;
    t.dtype = DType::kF16;
    t.bytes = 2;
    for (int64_t d : shape) t.bytes *= static_cast<uint64_t>(d);
    t.shape = std::move(shape);
    t.batch_scaled = false;
    return b_.add_tensor(std::move(t));
  }
  // Adds op "<path>/<type>_<k>" reading `in`; returns its (first) output.
  TensorId op(const std::string& type, std::vector<TensorId> in, int64_t out_width, double flops,
              uint64_t param_bytes = 0, bool mask = false) {
    const std::string name = path_ + "/" + type + "_" + std::to_string(count_[type]++);
    Op o;
    o.name = name;
    o.type = type;
    o.category = category_of_op_type(type);
    o.dtype = DType::kF16;
    o.scope = scope_;
    o.layer = layer_;
    // +-5% jitter gives full-precision doubles; bits of mt19937_64 are the same everywhere.
    o.flops = flops * (0.95 + 0.1 * static_cast<double>(rng_() >> 11) * 0x1.0p-53);
    o.param_bytes = param_bytes;
    o.inputs = std::move(in);
    o.outputs = {activation(name + ":0", out_width)};
    if (mask) {
      o.outputs.push_back(activation(name + ":mask", out_width));
      o.attrs = {{"ratio", "0.1"}};
    }
    if (type == "Softmax") o.attrs = {{"axis", "-1"}};
    if (type == "Transpose") o.attrs = {{"perm", "0,2,1,3"}};
    const TensorId out = o.outputs[0];
    b_.add_op(std::move(o));
    return out;
  }
  // Starts a block: scope "encoder.layer.12.attn", op names "encoder/layer.12/attn/...".
  void begin(int layer, const std::string& part) {
    layer_ = layer;
    scope_ = "encoder.layer." + std::to_string(layer) + "." + part;
    path_ = "encoder/layer." + std::to_string(layer) + "/" + part;
    count_.clear();
  }
  TensorId linear(TensorId in, int64_t in_w, int64_t out_w) {
    const std::string k = std::to_string(count_["Gemm"]);
    const TensorId w = parameter(path_ + "/dense_" + k + ".weight", {in_w, out_w});
    const TensorId bias = parameter(path_ + "/dense_" + k + ".bias", {out_w});
    const double flops = 2.0 * batch_ * seq_ * in_w * out_w;
    return op("Gemm", {in, w, bias}, out_w, flops,
              static_cast<uint64_t>((in_w * out_w + out_w) * 2));
  }
  TensorId norm(TensorId in) {
    const std::string k = std::to_string(count_["LayerNormalization"]);
    const TensorId gamma = parameter(path_ + "/norm_" + k + ".weight", {hidden_});
    const TensorId beta = parameter(path_ + "/norm_" + k + ".bias", {hidden_});
    return op("LayerNormalization", {in, gamma, beta}, hidden_, 8.0 * batch_ * seq_ * hidden_,
              static_cast<uint64_t>(hidden_ * 4));
  }
  void attention(int layer) {
    begin(layer, "attn");
    const double elems = static_cast<double>(batch_) * seq_ * hidden_;
    const double scores = static_cast<double>(batch_) * seq_ * seq_;
    const TensorId h = norm(x_);
    TensorId q = linear(h, hidden_, hidden_);
    TensorId k = linear(h, hidden_, hidden_);
    TensorId v = linear(h, hidden_, hidden_);
    q = op("Transpose", {op("Reshape", {q}, hidden_, 0)}, hidden_, 0);
    k = op("Transpose", {op("Reshape", {k}, hidden_, 0)}, hidden_, 0);
    v = op("Transpose", {op("Reshape", {v}, hidden_, 0)}, hidden_, 0);
    TensorId s = op("MatMul", {q, k}, seq_, 2.0 * scores * hidden_);
    s = op("Div", {s}, seq_, scores);
    s = op("Softmax", {s}, seq_, 5.0 * scores);
    s = op("Dropout", {s}, seq_, scores, 0, true);
    TensorId c = op("MatMul", {s, v}, hidden_, 2.0 * scores * hidden_);
    c = op("Reshape", {op("Transpose", {c}, hidden_, 0)}, hidden_, 0);
    c = linear(c, hidden_, hidden_);
    x_ = op("Add", {x_, c}, hidden_, elems);
  }
  void mlp(int layer) {
    begin(layer, "mlp");
    const double elems = static_cast<double>(batch_) * seq_ * hidden_;
    TensorId h = norm(x_);
    h = linear(h, hidden_, 4 * hidden_);
    h = op("Gelu", {h}, 4 * hidden_, 8 * 4 * elems);
    h = linear(h, 4 * hidden_, hidden_);
    h = op("Dropout", {h}, hidden_, elems, 0, true);
    x_ = op("Add", {x_, h}, hidden_, elems);
  }

  int target_;
  std::mt19937_64 rng_;
  GraphBuilder b_;
  int64_t batch_ = 32, seq_ = 512, hidden_ = 0;
  TensorId x_ = kNoTensor;
  int layer_ = 0;
  std::string scope_, path_;
  std::map<std::string, int> count_;  // per op type within the current block
};

struct Fixture {
  Graph graph;
  std::string path;
  std::string text;
};

const Fixture& fixture(int num_ops) {
  static std::map<int, Fixture> cache;
  auto it = cache.find(num_ops);
  if (it != cache.end()) return it->second;
  Fixture f;
  f.graph = LayeredGraphGenerator(num_ops, /*seed=*/42).generate();
  f.path = (std::filesystem::temp_directory_path() /
            ("placer_graph_io_bench_" + std::to_string(num_ops) + ".graph.json"))
               .string();
  save_graph_json(f.graph, f.path);
  f.text = graph_to_json(f.graph);
  return cache.emplace(num_ops, std::move(f)).first->second;
}

void set_counters(benchmark::State& state, const Fixture& f) {
  state.counters["ops"] = static_cast<double>(f.graph.num_ops());
  state.counters["tensors"] = static_cast<double>(f.graph.num_tensors());
  state.counters["MB"] = static_cast<double>(f.text.size()) / 1e6;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * f.text.size()));
}

void BM_LoadGraphJson(benchmark::State& state) {
  const Fixture& f = fixture(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    Graph g = load_graph_json(f.path);
    benchmark::DoNotOptimize(g.num_ops());
  }
  set_counters(state, f);
}

// Parsing from memory: load time without the file read.
void BM_ParseGraphJson(benchmark::State& state) {
  const Fixture& f = fixture(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    Graph g = parse_graph_json(f.text, "bench.graph.json");
    benchmark::DoNotOptimize(g.num_ops());
  }
  set_counters(state, f);
}

void BM_SaveGraphJson(benchmark::State& state) {
  const Fixture& f = fixture(static_cast<int>(state.range(0)));
  const std::string out = f.path + ".out";
  for (auto _ : state) save_graph_json(f.graph, out);
  std::remove(out.c_str());
  set_counters(state, f);
}

BENCHMARK(BM_LoadGraphJson)->Arg(10000)->Arg(50000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParseGraphJson)->Arg(10000)->Arg(50000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SaveGraphJson)->Arg(10000)->Arg(50000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace placer

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (int n : {10000, 50000}) {
    std::remove((std::filesystem::temp_directory_path() /
                 ("placer_graph_io_bench_" + std::to_string(n) + ".graph.json"))
                    .c_str());
  }
  return 0;
}
