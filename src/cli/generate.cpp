// `placer generate <family>`: seeded synthetic model graphs.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "datasets/synthetic.h"
#include "src/cli/commands.h"
#include "src/cli/common.h"
#include "src/graph/training_step.h"
#include "src/io/graph_json.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer::cli {
namespace {

struct GenerateArgs {
  std::string output, name, dtype = "f32", optimizer = "adam";
  bool training_step = false;
  MlpOptions mlp;
  TransformerOptions transformer;
  LayeredRandomOptions random;
  ChainOptions chain;
};

DType dtype_of(const std::string& s) {
  DType t;
  if (!parse_dtype(s, &t)) throw Error("--dtype: unknown dtype '" + s + "' (use f32, f16 or bf16)");
  return t;
}

void write(const GenerateArgs& a, Graph g) {
  if (a.training_step) {
    TrainingOptions opts;
    if (!parse_optimizer(a.optimizer, &opts.optimizer)) {
      throw Error("--optimizer: unknown optimizer '" + a.optimizer + "'");
    }
    g = expand_training_step(g, opts);
  }
  ensure_parent_dir(a.output);
  save_graph_json(g, a.output);
  std::cout << a.output << ": " << g.name() << ", " << g.num_ops() << " ops, "
            << human_count(g.total_flops(), "FLOP") << ", params "
            << human_bytes(double(g.total_param_bytes())) << ", batch " << g.batch_size()
            << (g.is_training_step() ? " (training step)\n" : " (forward)\n");
}

void add_common(CLI::App* sub, GenerateArgs* a) {
  sub->add_option("-o,--output", a->output, "Graph file to write (*.graph.json)")->required();
  sub->add_option("--name", a->name, "Graph name (default: the family's)");
  sub->add_option("--dtype", a->dtype, "Element type: f32, f16, bf16")->capture_default_str();
  sub->add_flag("--training-step", a->training_step,
                "Write the training step (backward + optimizer) instead of the forward graph");
  sub->add_option("--optimizer", a->optimizer, "Optimizer for --training-step: sgd, momentum, adam")
      ->capture_default_str();
}

}  // namespace

void register_generate(CLI::App& app);
static CommandRegistrar generate_registrar(40, "generate", register_generate);

void register_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* gen = app.add_subcommand("generate", "Write a seeded synthetic model graph.");
  gen->require_subcommand(1);

  CLI::App* mlp = gen->add_subcommand("mlp", "Multi-layer perceptron (Linear + Relu layers)");
  add_common(mlp, a.get());
  mlp->add_option("--layers", a->mlp.layers, "Linear layers")->capture_default_str()->check(CLI::PositiveNumber);
  mlp->add_option("--input", a->mlp.input, "Input features")->capture_default_str()->check(CLI::PositiveNumber);
  mlp->add_option("--hidden", a->mlp.hidden, "Hidden width")->capture_default_str()->check(CLI::PositiveNumber);
  mlp->add_option("--classes", a->mlp.classes, "Output features")->capture_default_str()->check(CLI::PositiveNumber);
  mlp->add_option("--batch", a->mlp.batch, "Batch size")->capture_default_str()->check(CLI::PositiveNumber);
  mlp->callback([a]() {
    MlpOptions o = a->mlp;
    o.dtype = dtype_of(a->dtype);
    if (!a->name.empty()) o.name = a->name;
    write(*a, make_mlp(o));
  });

  CLI::App* tr = gen->add_subcommand("transformer", "Transformer encoder stack with an LM head");
  add_common(tr, a.get());
  tr->add_option("--layers", a->transformer.layers, "Layers")->capture_default_str()->check(CLI::PositiveNumber);
  tr->add_option("--d-model", a->transformer.d_model, "Model width")->capture_default_str()->check(CLI::PositiveNumber);
  tr->add_option("--heads", a->transformer.heads, "Attention heads (divides d-model)")->capture_default_str()->check(CLI::PositiveNumber);
  tr->add_option("--ffn", a->transformer.ffn, "FFN width (0 = 4 x d-model)")->capture_default_str();
  tr->add_option("--seq-len", a->transformer.seq_len, "Sequence length")->capture_default_str()->check(CLI::PositiveNumber);
  tr->add_option("--batch", a->transformer.batch, "Batch size")->capture_default_str()->check(CLI::PositiveNumber);
  tr->add_option("--vocab", a->transformer.vocab, "Vocabulary size")->capture_default_str()->check(CLI::PositiveNumber);
  tr->callback([a]() {
    TransformerOptions o = a->transformer;
    o.dtype = dtype_of(a->dtype);
    if (!a->name.empty()) o.name = a->name;
    write(*a, make_transformer(o));
  });

  CLI::App* rnd = gen->add_subcommand("random", "Layered random DAG (scale tests)");
  add_common(rnd, a.get());
  rnd->add_option("--ops", a->random.n_ops, "Number of ops")->capture_default_str()->check(CLI::Range(2, 100000000));
  rnd->add_option("--width", a->random.width, "Ops per level")->capture_default_str()->check(CLI::PositiveNumber);
  rnd->add_option("--seed", a->random.seed, "Random seed")->capture_default_str();
  rnd->add_option("--batch", a->random.batch, "Batch size")->capture_default_str()->check(CLI::PositiveNumber);
  rnd->callback([a]() {
    LayeredRandomOptions o = a->random;
    o.dtype = dtype_of(a->dtype);
    if (!a->name.empty()) o.name = a->name;
    write(*a, make_layered_random(o));
  });

  CLI::App* ch = gen->add_subcommand("chain", "Chain of equal ops (pipeline tests)");
  add_common(ch, a.get());
  ch->add_option("--ops", a->chain.n, "Number of ops")->capture_default_str()->check(CLI::PositiveNumber);
  ch->add_option("--flops", a->chain.flops, "FLOPs per op")->capture_default_str();
  ch->add_option("--activation-bytes", a->chain.activation_bytes, "Bytes of each op's output")->capture_default_str();
  ch->add_option("--param-bytes", a->chain.param_bytes, "Parameter bytes per op")->capture_default_str();
  ch->callback([a]() {
    ChainOptions o = a->chain;
    o.dtype = dtype_of(a->dtype);
    if (!a->name.empty()) o.name = a->name;
    write(*a, make_chain(o));
  });
}

}  // namespace placer::cli
