// `placer generate <family>`: seeded synthetic model graphs.
#include <CLI/CLI.hpp>
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/generate_routing.h"
#include "datasets/gpt.h"
#include "datasets/hf_config.h"
#include "datasets/synthetic.h"
#include "src/graph/foreach_update.h"
#include "src/graph/training_step.h"
#include "src/io/graph_json.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer::cli {
namespace {

struct GenerateArgs {
  std::string output, name, dtype = "f32", optimizer = "adam";
  std::string gpt_dtype = "f16", llama_dtype = "bf16";  // their own defaults
  bool training_step = false;
  bool foreach_optimizer = false;  ///< update ops as torch.optim's foreach kernels run them
  /// --master-weights / --no-master-weights; when neither is given, on for gpt / llama with
  /// a 16-bit dtype and off otherwise.
  bool master_weights = false;
  CLI::Option* master_weights_flag = nullptr;  // of the subcommand that runs
  MlpOptions mlp;
  TransformerOptions transformer;
  LayeredRandomOptions random;
  ChainOptions chain;
  GptOptions gpt;
  LlamaOptions llama;
  std::string hf_config, hf_dtype = "bf16";
  bool params_only = false;
  HfGraphOptions hf;
};

DType dtype_of(const std::string& s) {
  DType t;
  if (!parse_dtype(s, &t)) throw Error("--dtype: unknown dtype '" + s + "' (use f32, f16 or bf16)");
  return t;
}

/// `master_default`: --master-weights when neither it nor --no-master-weights is given.
void write(const GenerateArgs& a, Graph g, bool master_default = false) {
  if (a.training_step) {
    TrainingOptions opts;
    if (!parse_optimizer(a.optimizer, &opts.optimizer)) {
      throw Error("--optimizer: unknown optimizer '" + a.optimizer + "'");
    }
    const bool given = a.master_weights_flag != nullptr && a.master_weights_flag->count() > 0;
    opts.master_weights = given ? a.master_weights : master_default;
    if (a.foreach_optimizer && opts.master_weights) {
      throw Error(
          "--foreach-optimizer: needs --no-master-weights (states in the parameters' dtype)");
    }
    g = expand_training_step(g, opts);
    if (a.foreach_optimizer) g = with_foreach_updates(g, opts.optimizer);
  } else if (a.foreach_optimizer) {
    throw Error("--foreach-optimizer: needs --training-step");
  }
  ensure_parent_dir(a.output);
  save_graph_json(g, a.output);
  std::cout << a.output << ": " << g.name() << ", " << g.num_ops() << " ops, "
            << human_count(g.total_flops(), "FLOP") << ", params "
            << human_bytes(double(g.total_param_bytes())) << ", batch " << g.batch_size()
            << (g.is_training_step() ? " (training step)\n" : " (forward)\n");
}

/// `dtype`: where --dtype goes (families differ in their default). Returns the
/// --master-weights flag.
CLI::Option* add_common(CLI::App* sub, GenerateArgs* a, std::string* dtype,
                        const char* master_default = "off") {
  sub->add_option("-o,--output", a->output, "Graph file to write (*.graph.json)")->required();
  sub->add_option("--name", a->name, "Graph name (default: the family's)");
  sub->add_option("--dtype", *dtype, "Element type: f32, f16, bf16")->capture_default_str();
  sub->add_flag("--training-step", a->training_step,
                "Write the training step (backward + optimizer) instead of the forward graph");
  sub->add_option("--optimizer", a->optimizer, "Optimizer for --training-step: sgd, momentum, adam")
      ->capture_default_str();
  sub->add_flag("--foreach-optimizer", a->foreach_optimizer,
                "With --training-step: the update as torch.optim's foreach kernels run it, one "
                "pass per step of the rule (AdamW 20 passes over the parameters' size); needs "
                "--no-master-weights");
  return sub->add_flag("--master-weights,!--no-master-weights", a->master_weights,
                       std::string("With --training-step: fp32 master weights and optimizer "
                                   "state for 16-bit parameters (Adam 12 B/param; default: ") +
                           master_default + ")");
}

/// Runs before a subcommand's callback: remembers which --master-weights flag was parsed.
void use_flag(CLI::App* sub, GenerateArgs* a, CLI::Option* flag) {
  sub->preparse_callback([a, flag](size_t) { a->master_weights_flag = flag; });
}

bool is_16bit(DType t) { return t == DType::kF16 || t == DType::kBF16; }

/// The callback of a family's subcommand: its options (a->*family) with --dtype (a->*dtype)
/// and --name, made into a graph by `make` and written; with `master_if_16bit`, fp32 master
/// weights are the default for a 16-bit dtype.
template <class O>
void write_on_run(CLI::App* sub, const std::shared_ptr<GenerateArgs>& a, O GenerateArgs::*family,
                  std::string GenerateArgs::*dtype, Graph (*make)(const O&),
                  bool master_if_16bit = false) {
  sub->callback([a, family, dtype, make, master_if_16bit]() {
    O o = (*a).*family;
    o.dtype = dtype_of((*a).*dtype);
    if (!a->name.empty()) o.name = a->name;
    write(*a, make(o), master_if_16bit && is_16bit(o.dtype));
  });
}

/// --layers, --hidden and --heads of a GPT or LLaMA (O = GptOptions or LlamaOptions).
template <class O>
void add_decoder_size(CLI::App* sub, O& o) {
  sub->add_option("--layers", o.layers, "Transformer layers")->capture_default_str();
  sub->add_option("--hidden", o.hidden, "Hidden size h")->capture_default_str();
  sub->add_option("--heads", o.heads, "Attention heads (divides hidden)")->capture_default_str();
}

/// --seq-len, --batch, --vocab, --pad-vocab-multiple, --tp and --tied / --untied of a GPT or
/// LLaMA; `tied_doc` says which is the family's default.
template <class O>
void add_decoder_shape(CLI::App* sub, O& o, const std::string& tied_doc) {
  sub->add_option("--seq-len", o.seq_len, "Sequence length")->capture_default_str();
  sub->add_option("--batch", o.batch, "Global batch size")->capture_default_str();
  sub->add_option("--vocab", o.vocab, "Vocabulary size (before padding)")->capture_default_str();
  sub->add_option("--pad-vocab-multiple", o.pad_vocab_multiple,
                  "Pad the vocabulary to a multiple of this x tp")
      ->capture_default_str();
  sub->add_option("--tp", o.tp, "Tensor-parallel size the vocabulary is padded for")
      ->capture_default_str();
  sub->add_flag("--tied,!--untied", o.tied_embeddings, tied_doc);
}

/// --dropout of a GPT or LLaMA.
template <class O>
void add_dropout(CLI::App* sub, O& o) {
  sub->add_option("--dropout", o.dropout, "Dropout probability (0 omits the Dropout ops)")
      ->capture_default_str();
}

/// An option whose value is parsed by `parse` (datasets/gpt.h); a bad one is an error naming
/// the flag and the accepted values.
template <class E>
void add_choice(CLI::App* sub, const std::string& flag, E& target,
                bool (*parse)(const std::string&, E*), const std::string& values,
                const std::string& doc) {
  sub->add_option_function<std::string>(
         flag,
         [&target, parse, flag, values](const std::string& v) {
           if (!parse(v, &target)) {
             throw Error(flag + ": unknown value '" + v + "' (use " + values + ")");
           }
         },
         doc)
      ->default_str(to_string(target));
}

/// --attention, --sliding-window and --kernels of a GPT or LLaMA: how the stack runs it.
template <class O>
void add_stack(CLI::App* sub, O& o) {
  add_choice(sub, "--attention", o.attention, parse_attention_impl, "unfused or flash",
             "Attention core: unfused (Megatron's scores / softmax / context ops over "
             "b x a x s x s) or flash (one FlashAttention op)");
  sub->add_option("--sliding-window", o.sliding_window,
                  "Keys each query attends to, itself included (0 = all); needs --attention flash")
      ->capture_default_str();
  add_choice(sub, "--kernels", o.kernels, parse_kernel_preset,
             "megatron-2021, te, compile, eager or compile-blocks",
             "Kernels of the other ops: megatron-2021 (one op per module), te (fused RoPE), "
             "compile (fused RoPE, residual add fused into the next norm), eager (plain "
             "PyTorch in Hugging Face style, LLaMA only) or compile-blocks (each LLaMA block "
             "compiled, final norm and loss eager)");
}

/// One line of the --params-only table: the exact count and its billions.
void print_count(const char* what, int64_t n) {
  std::cout << "  " << std::left << std::setw(30) << what << std::right << std::setw(18) << n
            << "  (" << std::fixed << std::setprecision(2) << double(n) / 1e9 << " B)\n";
}

/// `placer generate hf --params-only`: the description and its parameter counts by part.
void print_hf_params(const HfModel& m) {
  const HfParamCounts c = hf_param_counts(m);
  std::cout << m.file << ": " << m.model_type << ", " << m.layers << " layers";
  if (m.is_moe()) {
    std::cout << " (" << m.moe_layers() << " MoE: " << m.moe.experts << " experts, top "
              << m.moe.experts_per_token << ")";
  }
  std::cout << ", hidden " << m.hidden << ", " << m.heads << " heads (" << m.kv_heads
            << " kv), vocab " << m.vocab << (m.mla ? ", multi-head latent attention" : "") << "\n";
  print_count("embedding", c.embedding);
  print_count("output layer", c.output_layer);
  print_count("attention", c.attention);
  print_count("norms", c.norms);
  print_count("dense MLPs", c.dense_mlp);
  print_count("routed experts", c.routed_experts);
  print_count("shared experts", c.shared_experts);
  print_count("routers", c.routers);
  print_count("total", c.total);
  print_count("active per token", c.active);
  print_count("active without the embedding", c.active_without_embedding);
}

/// The callback of `placer generate hf`.
void run_hf(const GenerateArgs& a) {
  const HfModel m = load_hf_config(a.hf_config);
  if (a.params_only) return print_hf_params(m);
  if (a.output.empty()) throw Error("generate hf: --output is required (or --params-only)");
  HfGraphOptions o = a.hf;
  o.dtype = dtype_of(a.hf_dtype);
  o.name = a.name;
  write(a, make_hf_graph(m, o), is_16bit(o.dtype));
}

/// `placer generate hf CONFIG`: a model from a Hugging Face config.json.
void add_hf(CLI::App* gen, const std::shared_ptr<GenerateArgs>& a) {
  CLI::App* hf = gen->add_subcommand(
      "hf",
      "A model from a Hugging Face config.json (llama, mistral, qwen2, mixtral, "
      "qwen2_moe, deepseek_v3)");
  use_flag(hf, a.get(), add_common(hf, a.get(), &a->hf_dtype, "on for f16 / bf16"));
  hf->get_option("--output")->required(false);
  hf->add_option("config,--hf-config", a->hf_config, "The model's config.json")->required();
  hf->add_option("--seq-len", a->hf.seq_len, "Sequence length")->capture_default_str();
  hf->add_option("--batch", a->hf.batch, "Global batch size")->capture_default_str();
  hf->add_option("--pad-vocab-multiple", a->hf.pad_vocab_multiple,
                 "Pad the vocabulary to a multiple of this x tp (1: as in the config)")
      ->capture_default_str();
  hf->add_option("--tp", a->hf.tp, "Tensor-parallel size the vocabulary is padded for")
      ->capture_default_str();
  hf->add_option("--capacity-factor", a->hf.capacity_factor,
                 "MoE models: each expert takes at most this x its even share of the tokens, "
                 "padded to that capacity (0: no dropping)")
      ->capture_default_str();
  hf->add_flag("--params-only", a->params_only,
               "Print the parameter counts (total, active per token, by part); write nothing");
  hf->callback([a]() { run_hf(*a); });
}

}  // namespace

void register_generate(CLI::App& app);
static CommandRegistrar generate_registrar(40, "generate", register_generate);

void register_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* gen = app.add_subcommand("generate", "Write a seeded synthetic model graph.");
  gen->require_subcommand(1);

  CLI::App* mlp = gen->add_subcommand("mlp", "Multi-layer perceptron (Linear + Relu layers)");
  use_flag(mlp, a.get(), add_common(mlp, a.get(), &a->dtype));
  mlp->add_option("--layers", a->mlp.layers, "Linear layers")->capture_default_str()->check(CLI::PositiveNumber);
  mlp->add_option("--input", a->mlp.input, "Input features")->capture_default_str()->check(CLI::PositiveNumber);
  mlp->add_option("--hidden", a->mlp.hidden, "Hidden width")->capture_default_str()->check(CLI::PositiveNumber);
  mlp->add_option("--classes", a->mlp.classes, "Output features")->capture_default_str()->check(CLI::PositiveNumber);
  mlp->add_option("--batch", a->mlp.batch, "Batch size")->capture_default_str()->check(CLI::PositiveNumber);
  write_on_run(mlp, a, &GenerateArgs::mlp, &GenerateArgs::dtype, make_mlp);

  CLI::App* tr = gen->add_subcommand("transformer", "Transformer encoder stack with an LM head");
  use_flag(tr, a.get(), add_common(tr, a.get(), &a->dtype));
  tr->add_option("--layers", a->transformer.layers, "Layers")->capture_default_str()->check(CLI::PositiveNumber);
  tr->add_option("--d-model", a->transformer.d_model, "Model width")->capture_default_str()->check(CLI::PositiveNumber);
  tr->add_option("--heads", a->transformer.heads, "Attention heads (divides d-model)")->capture_default_str()->check(CLI::PositiveNumber);
  tr->add_option("--ffn", a->transformer.ffn, "FFN width (0 = 4 x d-model)")->capture_default_str();
  tr->add_option("--seq-len", a->transformer.seq_len, "Sequence length")->capture_default_str()->check(CLI::PositiveNumber);
  tr->add_option("--batch", a->transformer.batch, "Batch size")->capture_default_str()->check(CLI::PositiveNumber);
  tr->add_option("--vocab", a->transformer.vocab, "Vocabulary size")->capture_default_str()->check(CLI::PositiveNumber);
  write_on_run(tr, a, &GenerateArgs::transformer, &GenerateArgs::dtype, make_transformer);

  CLI::App* rnd = gen->add_subcommand("random", "Layered random DAG (scale tests)");
  use_flag(rnd, a.get(), add_common(rnd, a.get(), &a->dtype));
  rnd->add_option("--ops", a->random.n_ops, "Number of ops")->capture_default_str()->check(CLI::Range(2, 100000000));
  rnd->add_option("--width", a->random.width, "Ops per level")->capture_default_str()->check(CLI::PositiveNumber);
  rnd->add_option("--seed", a->random.seed, "Random seed")->capture_default_str();
  rnd->add_option("--batch", a->random.batch, "Batch size")->capture_default_str()->check(CLI::PositiveNumber);
  write_on_run(rnd, a, &GenerateArgs::random, &GenerateArgs::dtype, make_layered_random);

  CLI::App* ch = gen->add_subcommand("chain", "Chain of equal ops (pipeline tests)");
  use_flag(ch, a.get(), add_common(ch, a.get(), &a->dtype));
  ch->add_option("--ops", a->chain.n, "Number of ops")->capture_default_str()->check(CLI::PositiveNumber);
  ch->add_option("--flops", a->chain.flops, "FLOPs per op")->capture_default_str();
  ch->add_option("--activation-bytes", a->chain.activation_bytes, "Bytes of each op's output")->capture_default_str();
  ch->add_option("--param-bytes", a->chain.param_bytes, "Parameter bytes per op")->capture_default_str();
  write_on_run(ch, a, &GenerateArgs::chain, &GenerateArgs::dtype, make_chain);

  // Megatron-style GPT and LLaMA (datasets/gpt.h). No CLI11 range checks: make_gpt /
  // make_llama validate every option with a one-line message naming it.
  CLI::App* gpt = gen->add_subcommand(
      "gpt", "Megatron-LM GPT (learned positions, LayerNorm, GeLU, tied embeddings)");
  use_flag(gpt, a.get(), add_common(gpt, a.get(), &a->gpt_dtype, "on for f16 / bf16"));
  add_decoder_size(gpt, a->gpt);
  gpt->add_option("--ffn", a->gpt.ffn, "MLP width (0 = 4 x hidden)")->capture_default_str();
  add_decoder_shape(gpt, a->gpt, "Output layer shares the word embeddings (default: tied)");
  gpt->add_flag("--position-embeddings,!--no-position-embeddings", a->gpt.position_embeddings,
                "Learned position embeddings (default: on)");
  add_dropout(gpt, a->gpt);
  add_stack(gpt, a->gpt);
  write_on_run(gpt, a, &GenerateArgs::gpt, &GenerateArgs::gpt_dtype, make_gpt, true);

  CLI::App* llama = gen->add_subcommand(
      "llama", "LLaMA in Megatron's layout (RMSNorm, rotary, SwiGLU, GQA, no biases)");
  use_flag(llama, a.get(), add_common(llama, a.get(), &a->llama_dtype, "on for f16 / bf16"));
  add_decoder_size(llama, a->llama);
  llama->add_option("--kv-heads", a->llama.kv_heads,
                    "Key/value heads (0 = heads; fewer = grouped-query attention; divides heads)")
      ->capture_default_str();
  llama->add_option("--ffn", a->llama.ffn,
                    "MLP width (0 = 8/3 x hidden rounded up to a multiple of 256)")
      ->capture_default_str();
  add_decoder_shape(llama, a->llama, "Output layer shares the word embeddings (default: untied)");
  add_dropout(llama, a->llama);
  add_stack(llama, a->llama);
  write_on_run(llama, a, &GenerateArgs::llama, &GenerateArgs::llama_dtype, make_llama, true);

  add_hf(gen, a);
  add_routing_generator(gen);
}

}  // namespace placer::cli
