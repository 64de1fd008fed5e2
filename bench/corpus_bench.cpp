// Speed of the synthetic graph families and of corpus generation.
//
//   BM_Family/<family>: make_family_graph with the default ranges, a new seed each
//     iteration (graphs/s and ops/s).
//   BM_GnmtLarge: GNMT-8 unrolled over 256 steps (57,371 ops).
//   BM_GenerateCorpus1000: what `placer corpus generate --family all --count 1000` does
//     (generate 1000 graphs round robin over every family, write each *.graph.json and the
//     manifest) into a temporary folder; one iteration.
//
//   build-dir/bench/corpus_bench --benchmark_counters_tabular=true
//
// Results: docs/results.md, "Graph files, ONNX import, corpora, coarsening".

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "datasets/corpus.h"
#include "datasets/family_registry.h"

namespace placer {
namespace {

namespace fs = std::filesystem;

void BM_Family(benchmark::State& state) {
  const std::string family = family_names()[static_cast<size_t>(state.range(0))];
  state.SetLabel(family);
  uint64_t seed = 1;
  double ops = 0;
  for (auto _ : state) {
    Graph g = make_family_graph(family, seed++);
    ops += static_cast<double>(g.num_ops());
    benchmark::DoNotOptimize(g);
  }
  state.counters["graphs/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["ops/s"] = benchmark::Counter(ops, benchmark::Counter::kIsRate);
  state.counters["ops/graph"] = ops / static_cast<double>(state.iterations());
}
BENCHMARK(BM_Family)->DenseRange(0, 9)->Unit(benchmark::kMillisecond);

void BM_GnmtLarge(benchmark::State& state) {
  FamilyRanges r;
  r.size = FamilySize::kLarge;
  r.overrides["layers"] = ParamRange::fixed(8);
  r.overrides["src_len"] = ParamRange::fixed(256);
  r.overrides["tgt_len"] = ParamRange::fixed(256);
  for (auto _ : state) {
    Graph g = make_family_graph("gnmt", 1, r);
    state.counters["ops"] = static_cast<double>(g.num_ops());
    benchmark::DoNotOptimize(g);
  }
}
BENCHMARK(BM_GnmtLarge)->Unit(benchmark::kMillisecond);

void BM_GenerateCorpus1000(benchmark::State& state) {
  const fs::path dir =
      fs::temp_directory_path() / ("placer_corpus_bench_" + std::to_string(::getpid()));
  double ops = 0, bytes = 0;
  for (auto _ : state) {
    fs::remove_all(dir);
    Corpus c;
    c.name = "bench";
    c.manifest_path = (dir / "bench.corpus.yaml").string();
    CorpusGenerateOptions o;
    o.families = {"all"};
    o.count = 1000;
    o.seed = 1;
    o.progress = [&](size_t, size_t, const Graph& g) { ops += static_cast<double>(g.num_ops()); };
    generate_corpus_entries(&c, o);
    save_corpus(c, c.manifest_path);
    state.PauseTiming();
    for (const auto& f : fs::recursive_directory_iterator(dir)) {
      if (f.is_regular_file()) bytes += static_cast<double>(f.file_size());
    }
    state.ResumeTiming();
  }
  fs::remove_all(dir);
  const double it = static_cast<double>(state.iterations());
  state.counters["graphs"] = 1000;
  state.counters["ops"] = ops / it;
  state.counters["MB"] = bytes / it / 1e6;
}
BENCHMARK(BM_GenerateCorpus1000)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
}  // namespace placer

BENCHMARK_MAIN();
