#include "datasets/family_registry.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "datasets/family_inception.h"
#include "datasets/family_modern.h"
#include "datasets/family_nas.h"
#include "datasets/family_rec.h"
#include "datasets/family_rnn.h"
#include "datasets/family_seq.h"
#include "datasets/family_util.h"
#include "datasets/synthetic.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer {

int64_t ParamRange::draw(double u) const {
  if (!one_of.empty()) {
    const size_t n = one_of.size();
    return one_of[std::min(n - 1, static_cast<size_t>(u * static_cast<double>(n)))];
  }
  const int64_t count = (hi - lo) / step + 1;  // grid points
  int64_t idx;
  if (log_scale && count > 1) {
    const double top = static_cast<double>(lo + (count - 1) * step);
    const double x = static_cast<double>(lo) * std::pow(top / static_cast<double>(lo), u);
    idx = std::llround((x - static_cast<double>(lo)) / static_cast<double>(step));
  } else {
    idx = static_cast<int64_t>(u * static_cast<double>(count));
  }
  return lo + std::clamp<int64_t>(idx, 0, count - 1) * step;
}

std::string ParamRange::check() const {
  if (!one_of.empty()) return "";
  if (lo > hi)
    return "lower bound " + std::to_string(lo) + " above upper bound " + std::to_string(hi);
  if (step < 1) return "step must be >= 1, got " + std::to_string(step);
  if (log_scale && lo < 1) return "a log-uniform range needs lo >= 1, got " + std::to_string(lo);
  return "";
}

std::string ParamRange::to_string() const {
  if (!one_of.empty()) {
    std::string s = "{";
    for (size_t i = 0; i < one_of.size(); ++i) s += (i ? ", " : "") + std::to_string(one_of[i]);
    return s + "}";
  }
  if (lo == hi) return std::to_string(lo);
  std::string s = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (log_scale) s += " log";
  if (step > 1) s += (log_scale ? ", step " : " step ") + std::to_string(step);
  return s;
}

const char* to_string(FamilySize s) { return s == FamilySize::kLarge ? "large" : "default"; }

bool parse_family_size(const std::string& s, FamilySize* out) {
  if (s == "default")
    *out = FamilySize::kDefault;
  else if (s == "large")
    *out = FamilySize::kLarge;
  else
    return false;
  return true;
}

namespace {

using Values = std::vector<std::pair<std::string, int64_t>>;
using BuildFn = std::function<Graph(const Values&, uint64_t seed, const std::string& name)>;

int64_t get(const Values& v, const char* name) {
  for (const auto& [k, x] : v) {
    if (k == name) return x;
  }
  throw Error(std::string("family registry: no parameter '") + name + "'");  // a bug
}
int geti(const Values& v, const char* name) { return static_cast<int>(get(v, name)); }

// Attention heads of a d_model-wide layer: one per 64 channels, one when that does not
// divide d_model.
int64_t heads_of_width(int64_t d_model) {
  const int64_t heads = std::max<int64_t>(1, d_model / 64);
  return d_model % heads == 0 ? heads : 1;
}

using R = ParamRange;
const R kBatchCnn = R::log_uniform(16, 128);

struct Entry {
  FamilyInfo info;
  BuildFn build;
};

Entry enas_cnn_entry() {
  return {
      {"enas_cnn",
       "ENAS micro-search CNN on CIFAR-10: stacked normal / reduction cells of separable "
       "convs and pools, a random DAG inside each cell",
       "Pham et al. 2018 (ENAS); Placeto's cifar10 (Addanki et al. 2019)",
       {{"cells_per_stage", R::uniform(1, 6), R::uniform(10, 20),
         "normal cells per stage (3 stages)"},
        {"cell_nodes", R::uniform(3, 7), R::uniform(5, 8), "nodes per cell"},
        {"filters", R::log_uniform(16, 64, 4), R::log_uniform(32, 128, 4), "channels of stage 0"},
        {"batch", kBatchCnn, kBatchCnn, "batch size"}}},
      [](const Values& v, uint64_t seed, const std::string& name) {
        EnasCnnOptions o;
        o.cells_per_stage = geti(v, "cells_per_stage");
        o.cell_nodes = geti(v, "cell_nodes");
        o.filters = get(v, "filters");
        o.batch = get(v, "batch");
        o.seed = seed;
        o.name = name;
        return make_enas_cnn(o);
      }};
}

Entry amoebanet_entry() {
  return {
      {"amoebanet",
       "AmoebaNet-like ImageNet CNN: NASNet-space cells (separable convs applied twice, "
       "dilated and 1x7-7x1 convs, pools), ImageNet stem with two reduction cells",
       "Real et al. 2019 (AmoebaNet); a GDP benchmark (Zhou et al. 2019)",
       {{"cells_per_stage", R::uniform(2, 6), R::uniform(6, 18),
         "normal cells per stage (AmoebaNet-D: 6)"},
        {"cell_nodes", R::uniform(4, 6), R::uniform(5, 7), "nodes per cell (AmoebaNet: 5)"},
        {"filters", R::log_uniform(32, 256, 8), R::log_uniform(128, 512, 8), "channels of stage 0"},
        {"image", R::choice({224}), R::choice({224, 331}), "input height = width"},
        {"batch", R::log_uniform(8, 64), R::log_uniform(8, 64), "batch size"}}},
      [](const Values& v, uint64_t seed, const std::string& name) {
        AmoebaNetOptions o;
        o.cells_per_stage = geti(v, "cells_per_stage");
        o.cell_nodes = geti(v, "cell_nodes");
        o.filters = get(v, "filters");
        o.image = get(v, "image");
        o.batch = get(v, "batch");
        o.seed = seed;
        o.name = name;
        return make_amoebanet(o);
      }};
}

Entry inception_entry() {
  return {
      {"inception",
       "Inception-like branchy CNN: stem, inception modules of 3-6 conv / pool branches "
       "concatenated, grid-reduction modules",
       "Szegedy et al. 2016 (Inception-v3); a GDP / ColocRL benchmark",
       {{"modules_stage0", R::uniform(1, 5), R::uniform(4, 12), "modules at the 1st resolution"},
        {"modules_stage1", R::uniform(1, 6), R::uniform(4, 12), "modules at the 2nd resolution"},
        {"modules_stage2", R::uniform(1, 4), R::uniform(4, 12), "modules at the 3rd resolution"},
        {"max_branches", R::uniform(3, 6), R::uniform(4, 6),
         "branches per module drawn in [3, this]"},
        {"width", R::log_uniform(32, 96, 16), R::log_uniform(64, 128, 16),
         "branch width of stage 0"},
        {"batch", kBatchCnn, kBatchCnn, "batch size"}}},
      [](const Values& v, uint64_t seed, const std::string& name) {
        InceptionOptions o;
        o.modules_per_stage = {geti(v, "modules_stage0"), geti(v, "modules_stage1"),
                               geti(v, "modules_stage2")};
        o.max_branches = geti(v, "max_branches");
        o.min_branches = std::min(3, o.max_branches);
        o.width = get(v, "width");
        o.batch = get(v, "batch");
        o.seed = seed;
        o.name = name;
        return make_inception(o);
      }};
}

Entry enas_rnn_entry() {
  return {{"enas_rnn",
           "ENAS recurrent cell on Penn Treebank: a random DAG of highway nodes with tanh / relu / "
           "identity / sigmoid activations, unrolled over the sequence",
           "Pham et al. 2018 (ENAS); Placeto's ptb (Addanki et al. 2019)",
           {{"cell_nodes", R::uniform(4, 12), R::uniform(8, 12), "nodes per cell (ENAS: 12)"},
            {"hidden", R::log_uniform(200, 1000, 8), R::log_uniform(400, 1000, 8),
             "hidden = embedding width"},
            {"seq_len", R::uniform(10, 35), R::uniform(70, 150), "unrolled steps"},
            {"batch", R::log_uniform(16, 128), R::log_uniform(16, 128), "batch size"},
            {"vocab", R::choice({10000}), R::choice({10000}), "vocabulary (PTB: 10k)"}}},
          [](const Values& v, uint64_t seed, const std::string& name) {
            EnasRnnOptions o;
            o.cell_nodes = geti(v, "cell_nodes");
            o.hidden = get(v, "hidden");
            o.seq_len = get(v, "seq_len");
            o.batch = get(v, "batch");
            o.vocab = get(v, "vocab");
            o.seed = seed;
            o.name = name;
            return make_enas_rnn(o);
          }};
}

Entry rnnlm_entry() {
  return {{"rnnlm",
           "LSTM language model with 2, 4 or 8 layers unrolled over time, per-step softmax "
           "projection",
           "GDP's RNNLM-2/4/8 (Zhou et al. 2019)",
           {{"layers", R::choice({2, 4, 8}), R::choice({2, 4, 8}), "LSTM layers"},
            {"hidden", R::log_uniform(256, 2048, 64), R::log_uniform(512, 2048, 64), "LSTM width"},
            {"seq_len", R::uniform(20, 40), R::uniform(80, 200), "unrolled steps"},
            {"batch", R::log_uniform(16, 128), R::log_uniform(16, 128), "batch size"},
            {"vocab", R::log_uniform(10000, 50000, 1000), R::log_uniform(10000, 50000, 1000),
             "vocabulary"},
            {"fused_cells", R::uniform(0, 1), R::fixed(0), "1 = one LSTM op per cell and step"}}},
          [](const Values& v, uint64_t, const std::string& name) {
            RnnlmOptions o;
            o.layers = geti(v, "layers");
            o.hidden = get(v, "hidden");
            o.seq_len = get(v, "seq_len");
            o.batch = get(v, "batch");
            o.vocab = get(v, "vocab");
            o.fused_cells = get(v, "fused_cells") != 0;
            o.name = name;
            return make_rnnlm(o);
          }};
}

Entry gnmt_entry() {
  return {{"gnmt",
           "GNMT-style translation: LSTM encoder (bidirectional first layer) and decoder with "
           "residual connections and attention, unrolled over source and target length",
           "Wu et al. 2016 (GNMT); Placeto's nmt, GDP's GNMT (Zhou et al. 2019)",
           {{"layers", R::uniform(2, 8), R::uniform(4, 8), "encoder and decoder layers"},
            {"hidden", R::log_uniform(256, 1024, 64), R::log_uniform(512, 1024, 64), "LSTM width"},
            {"src_len", R::uniform(8, 32), R::uniform(100, 256), "unrolled encoder steps"},
            {"tgt_len", R::uniform(8, 32), R::uniform(100, 256), "unrolled decoder steps"},
            {"batch", R::log_uniform(16, 128), R::log_uniform(16, 128), "batch size"},
            {"vocab", R::log_uniform(8000, 32000, 1000), R::log_uniform(8000, 32000, 1000),
             "vocabulary"},
            {"fused_cells", R::uniform(0, 1), R::fixed(0), "1 = one LSTM op per cell and step"}}},
          [](const Values& v, uint64_t, const std::string& name) {
            GnmtOptions o;
            o.layers = geti(v, "layers");
            o.hidden = get(v, "hidden");
            o.src_len = get(v, "src_len");
            o.tgt_len = get(v, "tgt_len");
            o.batch = get(v, "batch");
            o.vocab = get(v, "vocab");
            o.fused_cells = get(v, "fused_cells") != 0;
            o.name = name;
            return make_gnmt(o);
          }};
}

Entry transformer_xl_entry() {
  return {
      {"transformer_xl",
       "Transformer-XL stack: attention over the cached memory and the segment with "
       "relative positions, post-norm feed-forward",
       "Dai et al. 2019 (Transformer-XL); a GDP benchmark (Zhou et al. 2019)",
       {{"layers", R::uniform(5, 16), R::uniform(16, 48), "layers"},
        {"d_model", R::log_uniform(256, 1024, 64), R::log_uniform(512, 1024, 64),
         "width (heads = d_model / 64)"},
        {"seq_len", R::log_uniform(64, 512, 32), R::log_uniform(128, 512, 32), "segment length"},
        {"mem_len", R::uniform(64, 512, 64), R::uniform(128, 512, 64), "memory length"},
        {"batch", R::log_uniform(4, 32), R::log_uniform(4, 32), "batch size"},
        {"vocab", R::log_uniform(10000, 32000, 1000), R::log_uniform(10000, 32000, 1000),
         "vocabulary"}}},
      [](const Values& v, uint64_t, const std::string& name) {
        TransformerXlOptions o;
        o.layers = geti(v, "layers");
        o.d_model = get(v, "d_model");
        o.heads = heads_of_width(o.d_model);
        o.seq_len = get(v, "seq_len");
        o.mem_len = get(v, "mem_len");
        o.batch = get(v, "batch");
        o.vocab = get(v, "vocab");
        o.name = name;
        return make_transformer_xl(o);
      }};
}

Entry wavenet_entry() {
  return {{"wavenet",
           "WaveNet: stacks of dilated causal conv residual blocks with gated activations and "
           "skip connections",
           "van den Oord et al. 2016 (WaveNet); a GDP benchmark (Zhou et al. 2019)",
           {{"stacks", R::uniform(2, 4), R::uniform(4, 16), "stacks of blocks"},
            {"layers_per_stack", R::uniform(8, 12), R::uniform(10, 12),
             "blocks per stack (dilation 1..2^(n-1))"},
            {"residual_channels", R::log_uniform(32, 128, 16), R::log_uniform(64, 256, 16),
             "residual = dilation channels"},
            {"skip_channels", R::log_uniform(128, 512, 64), R::log_uniform(256, 512, 64),
             "skip channels"},
            {"samples", R::log_uniform(2000, 16000, 1000), R::log_uniform(4000, 16000, 1000),
             "audio samples"},
            {"batch", R::log_uniform(1, 8), R::log_uniform(1, 8), "batch size"}}},
          [](const Values& v, uint64_t, const std::string& name) {
            WaveNetOptions o;
            o.stacks = geti(v, "stacks");
            o.layers_per_stack = geti(v, "layers_per_stack");
            o.residual_channels = get(v, "residual_channels");
            o.skip_channels = get(v, "skip_channels");
            o.samples = get(v, "samples");
            o.batch = get(v, "batch");
            o.name = name;
            return make_wavenet(o);
          }};
}

Entry transformer_entry() {
  return {
      {"transformer",
       "BERT / GPT-style pre-norm Transformer encoder with an LM head (datasets/synthetic.h)",
       "Vaswani et al. 2017; Devlin et al. 2019",
       {{"layers", R::uniform(6, 24), R::uniform(24, 96), "layers"},
        {"d_model", R::log_uniform(256, 1024, 64), R::log_uniform(512, 2048, 64),
         "width (heads = d_model / 64)"},
        {"seq_len", R::log_uniform(64, 1024, 64), R::log_uniform(128, 2048, 64), "sequence length"},
        {"batch", R::log_uniform(1, 32), R::log_uniform(1, 32), "batch size"},
        {"vocab", R::log_uniform(8000, 50000, 1000), R::log_uniform(8000, 50000, 1000),
         "vocabulary"}}},
      [](const Values& v, uint64_t, const std::string& name) {
        TransformerOptions o;
        o.layers = geti(v, "layers");
        o.d_model = get(v, "d_model");
        o.heads = heads_of_width(o.d_model);
        o.seq_len = get(v, "seq_len");
        o.batch = get(v, "batch");
        o.vocab = get(v, "vocab");
        o.name = name;
        return make_transformer(o);
      }};
}

Entry rec_entry() {
  return {{"rec",
           "DLRM-style recommendation model: bottom MLP, large embedding tables pooled per "
           "feature, dot-product interaction, top MLP",
           "Naumov et al. 2019 (DLRM); AutoSync's recommendation models (Zhang et al. 2020)",
           {{"tables", R::uniform(13, 26), R::uniform(26, 64), "embedding tables (Criteo: 26)"},
            {"rows", R::log_uniform(100000, 2000000, 1000), R::log_uniform(1000000, 10000000, 1000),
             "rows per table"},
            {"dim", R::choice({16, 32, 64, 128}), R::choice({64, 128}), "embedding width"},
            {"lookups", R::uniform(1, 20), R::uniform(1, 40), "ids per sample and table"},
            {"batch", R::log_uniform(256, 4096), R::log_uniform(1024, 16384), "batch size"}}},
          [](const Values& v, uint64_t, const std::string& name) {
            RecOptions o;
            o.tables = geti(v, "tables");
            o.rows = get(v, "rows");
            o.dim = get(v, "dim");
            o.lookups = get(v, "lookups");
            o.batch = get(v, "batch");
            o.name = name;
            return make_rec(o);
          }};
}

Entry resnet_entry() {
  return {{"resnet",
           "ResNet-style CNN: bottleneck blocks with projection shortcuts in four stages "
           "(blocks b, b + 1, 2b, b; b = 3 is ResNet-50)",
           "He et al. 2016; torchvision's resnet50 (scripts/export_corpus_models.py)",
           {{"blocks", R::uniform(1, 4), R::uniform(3, 8), "blocks of stage 0 (b)"},
            {"width", R::choice({32, 64}), R::choice({64, 128}), "bottleneck channels of stage 0"},
            {"image", R::choice({128, 224}), R::choice({224, 320}), "input height = width"},
            {"batch", kBatchCnn, kBatchCnn, "batch size"}}},
          [](const Values& v, uint64_t, const std::string& name) {
            ResNetOptions o;
            const int b = geti(v, "blocks");
            o.blocks = {b, b + 1, 2 * b, b};
            o.width = get(v, "width");
            o.image = get(v, "image");
            o.batch = get(v, "batch");
            o.name = name;
            return make_resnet(o);
          }};
}

Entry vit_entry() {
  return {{"vit",
           "Vision Transformer: patch embedding, pre-norm encoder blocks, class-token head",
           "Dosovitskiy et al. 2021; torchvision's vit_b_32 (scripts/export_corpus_models.py)",
           {{"layers", R::uniform(4, 12), R::uniform(12, 32), "encoder blocks"},
            {"d_model", R::log_uniform(256, 768, 64), R::log_uniform(768, 1280, 64),
             "width (heads = d_model / 64)"},
            {"patch", R::choice({16, 32}), R::choice({14, 16}), "patch side (image 224)"},
            {"batch", R::log_uniform(8, 64), R::log_uniform(8, 64), "batch size"}}},
          [](const Values& v, uint64_t, const std::string& name) {
            VitOptions o;
            o.layers = geti(v, "layers");
            o.d_model = get(v, "d_model");
            o.heads = heads_of_width(o.d_model);
            o.patch = get(v, "patch");
            o.batch = get(v, "batch");
            o.name = name;
            return make_vit(o);
          }};
}

Entry encdec_entry() {
  return {{"encdec",
           "Encoder-decoder Transformer: post-norm encoder, decoder blocks with self and cross "
           "attention over the encoder output, generator",
           "Vaswani et al. 2017; nn.Transformer (scripts/export_corpus_models.py)",
           {{"layers", R::uniform(2, 6), R::uniform(6, 16), "encoder and decoder layers"},
            {"d_model", R::log_uniform(256, 1024, 64), R::log_uniform(512, 2048, 64),
             "width (heads = d_model / 64)"},
            {"seq_len", R::log_uniform(32, 256, 16), R::log_uniform(128, 1024, 16),
             "source and target length"},
            {"batch", R::log_uniform(4, 64), R::log_uniform(4, 64), "batch size"},
            {"vocab", R::log_uniform(8000, 40000, 1000), R::log_uniform(8000, 40000, 1000),
             "vocabulary"}}},
          [](const Values& v, uint64_t, const std::string& name) {
            EncDecOptions o;
            o.encoder_layers = o.decoder_layers = geti(v, "layers");
            o.d_model = get(v, "d_model");
            o.heads = heads_of_width(o.d_model);
            o.seq_len = get(v, "seq_len");
            o.batch = get(v, "batch");
            o.vocab = get(v, "vocab");
            o.name = name;
            return make_encdec(o);
          }};
}

Entry gnn_entry() {
  return {
      {"gnn",
       "Multi-head message-passing GNN over batches of graphs: parallel head branches "
       "(projection, neighbour aggregation), residual, mean readout",
       "Kipf & Welling 2017; Velickovic et al. 2018 (scripts/export_corpus_models.py's GCNs)",
       {{"layers", R::uniform(4, 8), R::uniform(8, 16), "message-passing layers"},
        {"heads", R::choice({4, 8}), R::choice({4, 8}), "parallel branches per layer"},
        {"hidden", R::log_uniform(64, 512, 32), R::log_uniform(256, 1024, 32),
         "width (a multiple of heads)"},
        {"nodes", R::log_uniform(32, 512, 16), R::log_uniform(256, 4096, 16), "nodes per graph"},
        {"batch", R::log_uniform(4, 64), R::log_uniform(4, 64), "graphs per batch"}}},
      [](const Values& v, uint64_t, const std::string& name) {
        GnnOptions o;
        o.layers = geti(v, "layers");
        o.heads = get(v, "heads");
        o.hidden = get(v, "hidden");
        o.nodes = get(v, "nodes");
        o.batch = get(v, "batch");
        o.name = name;
        return make_gnn(o);
      }};
}

Entry swin_entry() {
  return {{"swin",
           "Swin Transformer: patch embedding, four stages of windowed-attention blocks joined "
           "by patch merging, pooled head (depths 2, 2, d, 2; heads = width / 32)",
           "Liu et al. 2021; torchvision's swin_t (d = 6, embed 96)",
           {{"embed", R::choice({64, 96, 128}), R::choice({128, 192}), "width of stage 0"},
            {"depth", R::uniform(2, 6), R::uniform(6, 18), "blocks of stage 2 (d)"},
            {"image", R::choice({224}), R::choice({224, 384}), "input height = width"},
            {"batch", R::log_uniform(8, 64), R::log_uniform(8, 64), "batch size"}}},
          [](const Values& v, uint64_t, const std::string& name) {
            SwinOptions o;
            o.embed = get(v, "embed");
            o.depths = {2, 2, geti(v, "depth"), 2};
            o.heads.clear();
            for (int s = 0; s < 4; ++s) o.heads.push_back((o.embed << s) / 32);
            o.image = get(v, "image");
            o.batch = get(v, "batch");
            o.name = name;
            return make_swin(o);
          }};
}

Entry layered_random_entry() {
  return {
      {"layered_random",
       "Layered random DAG with log-uniform op costs (datasets/synthetic.h), for scale",
       "synthetic layered DAGs for scale tests (this project)",
       {{"ops", R::log_uniform(100, 5000), R::log_uniform(10000, 50000), "ops (the loss included)"},
        {"width", R::log_uniform(4, 64), R::log_uniform(8, 128), "ops per level"},
        {"max_fan_in", R::uniform(1, 4), R::uniform(1, 4), "inputs per op drawn in [1, this]"},
        {"max_skip", R::uniform(1, 4), R::uniform(1, 4), "levels an input may skip back"},
        {"batch", R::log_uniform(8, 128), R::log_uniform(8, 128), "batch size"}}},
      [](const Values& v, uint64_t seed, const std::string& name) {
        LayeredRandomOptions o;
        o.n_ops = geti(v, "ops");
        o.width = geti(v, "width");
        o.max_fan_in = geti(v, "max_fan_in");
        o.max_skip = geti(v, "max_skip");
        o.batch = get(v, "batch");
        o.seed = seed;
        o.name = name;
        return make_layered_random(o);
      }};
}

// The families in registry order, one entry function each (a constant table: no
// initialization-order issue for callers during static initialization).
using EntryFn = Entry (*)();
constexpr EntryFn kFamilies[] = {enas_cnn_entry,
                                 amoebanet_entry,
                                 inception_entry,
                                 enas_rnn_entry,
                                 rnnlm_entry,
                                 gnmt_entry,
                                 transformer_xl_entry,
                                 wavenet_entry,
                                 transformer_entry,
                                 rec_entry,
                                 layered_random_entry,
                                 resnet_entry,
                                 vit_entry,
                                 encdec_entry,
                                 gnn_entry,
                                 swin_entry};

std::vector<Entry> make_registry() {
  std::vector<Entry> r;
  for (EntryFn f : kFamilies) r.push_back(f());
  return r;
}

const std::vector<Entry>& registry() {
  static const std::vector<Entry> r = make_registry();
  return r;
}

const Entry& entry(const std::string& family) {
  for (const Entry& e : registry()) {
    if (e.info.name == family) return e;
  }
  std::string known;
  for (const Entry& e : registry()) known += (known.empty() ? "" : ", ") + e.info.name;
  throw Error("unknown graph family '" + family + "' (known: " + known + ")");
}

}  // namespace

const std::vector<FamilyInfo>& family_infos() {
  static const std::vector<FamilyInfo> infos = [] {
    std::vector<FamilyInfo> v;
    for (const Entry& e : registry()) v.push_back(e.info);
    return v;
  }();
  return infos;
}

std::vector<std::string> family_names() {
  std::vector<std::string> v;
  for (const Entry& e : registry()) v.push_back(e.info.name);
  return v;
}

const FamilyInfo* find_family(const std::string& name) {
  for (const FamilyInfo& f : family_infos()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

void check_family_ranges(const std::string& family, const FamilyRanges& ranges) {
  const FamilyInfo& info = entry(family).info;
  for (const auto& [key, range] : ranges.overrides) {
    bool found = false;
    for (const FamilyParam& p : info.params) found = found || p.name == key;
    if (!found) {
      std::string names;
      for (const FamilyParam& p : info.params) names += (names.empty() ? "" : ", ") + p.name;
      throw Error(family + ": unknown parameter " + quote_short(key) + " (parameters: " + names +
                  ")");
    }
    const std::string bad = range.check();
    if (!bad.empty()) throw Error(family + ": " + key + ": " + bad);
  }
}

std::vector<std::pair<std::string, int64_t>> draw_family_params(const std::string& family,
                                                                uint64_t seed,
                                                                const FamilyRanges& ranges) {
  check_family_ranges(family, ranges);
  const FamilyInfo& info = entry(family).info;
  FamilyRng rng(seed);
  Values v;
  for (const FamilyParam& p : info.params) {
    const double u = rng.uniform();  // drawn even when overridden (see the header)
    auto it = ranges.overrides.find(p.name);
    const ParamRange& r = it != ranges.overrides.end()        ? it->second
                          : ranges.size == FamilySize::kLarge ? p.large
                                                              : p.normal;
    v.emplace_back(p.name, r.draw(u));
  }
  return v;
}

Graph make_family_graph(const std::string& family, uint64_t seed, const FamilyRanges& ranges,
                        const std::string& name) {
  const Entry& e = entry(family);
  const Values v = draw_family_params(family, seed, ranges);
  // The generator's own seed: the draw after the parameters'.
  FamilyRng rng(seed);
  for (size_t i = 0; i < v.size(); ++i) rng.next();
  const uint64_t sub_seed = rng.next();
  return e.build(v, sub_seed, name.empty() ? family + "_" + std::to_string(seed) : name);
}

}  // namespace placer
