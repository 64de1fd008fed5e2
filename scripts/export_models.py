#!/usr/bin/python3
"""Export model architectures to ONNX without parameters, for placer's real-model corpus.

Uses Debian's python3-torch / python3-torchvision (bash scripts/setup.sh --no-build --python).
Run it with /usr/bin/python3: a pyenv or venv python3 on PATH usually lacks those packages.

  /usr/bin/python3 scripts/export_models.py --dynamic-batch --out datasets/models/onnx   # corpus
  /usr/bin/python3 scripts/export_models.py --models resnet50 --batch-size 1 --out tests/data/onnx
  /usr/bin/python3 scripts/export_models.py --list

Weights are random (seeded) and never downloaded; export_params=False keeps them out of the
file, so each parameter is a graph input carrying only its name and shape. Export runs in
training mode, so BatchNormalization and Dropout stay in the graph (an eval export folds
BatchNormalization into Conv) and nn.MultiheadAttention takes its decomposed path. Node
names keep the module scope, e.g. /encoder/layers.0/self_attn/MatMul.

Shapes are static unless --dynamic-batch: the batch defaults per family (CNNs 32, ViT/Swin
and nn.Transformer stacks 16, LSTM seq2seq 32) unless --batch-size is given. With
--dynamic-batch the batch dimension of inputs and output is the symbol 'batch' (`placer
import --batch-size N` sets it; scripts/import_models.sh passes the family batch); that is
how datasets/models/onnx is made. The sequence length (--seq-len) is always static.
"""

import argparse
import os
import sys
import time
import warnings

try:
    import onnx
    import torch
    import torchvision
    from torch import nn
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import step_models
except ImportError as e:  # pragma: no cover - environment problem, say how to fix it
    sys.exit(f"export_models.py: {e}; install Debian's python3-torch, python3-torchvision and "
             f"python3-onnx (bash scripts/setup.sh --no-build --python) and run with /usr/bin/python3")

SEED = 0
DEFAULT_OPSET = 14  # torch 1.13 exports 7..17; 14 has BatchNormalization training_mode
VOCAB = 32000  # shared source/target vocabulary of the sequence models (typical NMT/BPE size)


# --- Sequence models built here (module attribute names become ONNX node scopes) ---------

class TransformerEncoderLM(nn.Module):
    """Token embedding + learned positions + nn.TransformerEncoder + vocabulary projection."""

    def __init__(self, layers, d_model, heads, ff, seq_len, vocab=VOCAB):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model)
        self.position = nn.Embedding(seq_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d_model),
                                             enable_nested_tensor=False)
        self.lm_head = nn.Linear(d_model, vocab)
        self.register_buffer("positions", torch.arange(seq_len).unsqueeze(0), persistent=False)

    def forward(self, tokens):
        x = self.embedding(tokens) + self.position(self.positions)
        return self.lm_head(self.encoder(x))


class TransformerSeq2Seq(nn.Module):
    """nn.Transformer encoder-decoder with embeddings and a generator, causal target mask."""

    def __init__(self, enc_layers, dec_layers, d_model, heads, ff, seq_len, vocab=VOCAB):
        super().__init__()
        self.src_embedding = nn.Embedding(vocab, d_model)
        self.tgt_embedding = nn.Embedding(vocab, d_model)
        self.position = nn.Embedding(seq_len, d_model)
        self.transformer = nn.Transformer(d_model, heads, enc_layers, dec_layers, ff,
                                          dropout=0.1, batch_first=True)
        self.generator = nn.Linear(d_model, vocab)
        self.register_buffer("positions", torch.arange(seq_len).unsqueeze(0), persistent=False)
        mask = torch.triu(torch.full((seq_len, seq_len), float("-inf")), diagonal=1)
        self.register_buffer("tgt_mask", mask, persistent=False)

    def forward(self, src, tgt):
        pos = self.position(self.positions)
        x = self.transformer(self.src_embedding(src) + pos, self.tgt_embedding(tgt) + pos,
                             tgt_mask=self.tgt_mask)
        return self.generator(x)


class LstmSeq2Seq(nn.Module):
    """Encoder LSTM; decoder LSTM starts from the encoder's final state; vocabulary
    projection (no attention), as in Sutskever et al. 2014."""

    def __init__(self, layers, hidden, vocab=VOCAB):
        super().__init__()
        self.src_embedding = nn.Embedding(vocab, hidden)
        self.tgt_embedding = nn.Embedding(vocab, hidden)
        self.encoder = nn.LSTM(hidden, hidden, layers, batch_first=True)
        self.decoder = nn.LSTM(hidden, hidden, layers, batch_first=True)
        self.projection = nn.Linear(hidden, vocab)

    def forward(self, src, tgt):
        _, state = self.encoder(self.src_embedding(src))
        out, _ = self.decoder(self.tgt_embedding(tgt), state)
        return self.projection(out)


def skip_matrix_math():
    """Replace the CPU kernels of mm/addmm/bmm/baddbmm by ones that return zeros of the right
    shape. Tracing records the op before its CPU kernel runs, so the exported graph is the
    same; only the arithmetic (on random weights, never saved) is skipped. Debian's torch
    calls the reference BLAS (single-threaded sgemm_), with which one forward pass of the
    24-layer Transformer at batch 16 takes minutes; with this it takes seconds."""
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("mm", lambda a, b: a.new_zeros((a.shape[0], b.shape[1])), "CPU")
    lib.impl("addmm", lambda c, a, b, beta=1, alpha=1: a.new_zeros((a.shape[0], b.shape[1])),
             "CPU")
    lib.impl("bmm", lambda a, b: a.new_zeros((a.shape[0], a.shape[1], b.shape[2])), "CPU")
    lib.impl("baddbmm", lambda c, a, b, beta=1, alpha=1:
             a.new_zeros((a.shape[0], a.shape[1], b.shape[2])), "CPU")
    return lib  # the registrations last as long as this object


# --- Registry -----------------------------------------------------------------------------

def tv(name, **kwargs):
    """A torchvision classifier with random init (weights=None never downloads)."""
    return lambda seq_len: getattr(torchvision.models, name)(weights=None, **kwargs)


def swin_t(seq_len):
    # Stochastic depth off: its training-mode bernoulli draw does not export in torch 1.13
    # ("Unsupported: ONNX export of operator Bernoulli"); it costs nothing in a step anyway.
    model = torchvision.models.swin_t(weights=None)
    for module in model.modules():
        if isinstance(module, torchvision.ops.StochasticDepth):
            module.p = 0.0
    return model


# name -> (family, builder(seq_len), input kind)
MODELS = {
    "resnet18": ("cnn", tv("resnet18"), "image"),
    "resnet34": ("cnn", tv("resnet34"), "image"),
    "resnet50": ("cnn", tv("resnet50"), "image"),
    "alexnet": ("cnn", tv("alexnet"), "image"),
    "vgg11": ("cnn", tv("vgg11"), "image"),
    "vgg13": ("cnn", tv("vgg13"), "image"),
    "vgg19": ("cnn", tv("vgg19"), "image"),
    "googlenet": ("cnn", tv("googlenet", aux_logits=False, init_weights=True), "image"),
    "mobilenet_v2": ("cnn", tv("mobilenet_v2"), "image"),
    "squeezenet1_0": ("cnn", tv("squeezenet1_0"), "image"),
    "shufflenet_v2_x1_0": ("cnn", tv("shufflenet_v2_x1_0"), "image"),
    "densenet121": ("cnn", tv("densenet121"), "image"),
    "vit_b_32": ("vision_transformer", tv("vit_b_32"), "image"),
    "swin_t": ("vision_transformer", swin_t, "image"),
    "transformer_enc6_d512": (
        "transformer", lambda s: TransformerEncoderLM(6, 512, 8, 2048, s), "tokens"),
    "transformer_enc12_d768": (
        "transformer", lambda s: TransformerEncoderLM(12, 768, 12, 3072, s), "tokens"),
    "transformer_enc24_d1024": (
        "transformer", lambda s: TransformerEncoderLM(24, 1024, 16, 4096, s), "tokens"),
    "transformer_encdec6_d512": (
        "transformer", lambda s: TransformerSeq2Seq(6, 6, 512, 8, 2048, s), "src_tgt"),
    "transformer_encdec6_d1024": (
        "transformer", lambda s: TransformerSeq2Seq(6, 6, 1024, 16, 4096, s), "src_tgt"),
    "lstm_seq2seq_l2_h512": ("lstm", lambda s: LstmSeq2Seq(2, 512), "src_tgt"),
    "lstm_seq2seq_l2_h1024": ("lstm", lambda s: LstmSeq2Seq(2, 1024), "src_tgt"),
    "lstm_seq2seq_l4_h512": ("lstm", lambda s: LstmSeq2Seq(4, 512), "src_tgt"),
    "lstm_seq2seq_l4_h1024": ("lstm", lambda s: LstmSeq2Seq(4, 1024), "src_tgt"),
}
# The GPTs whose training steps were measured on a GPU (scripts/step_models.py);
# exported with --seq-len 1024 --opset 17 (LayerNormalization as one op).
for _hidden, _layers, _heads in ((1024, 12, 16), (1536, 16, 16), (2048, 24, 16), (2048, 12, 16),
                                 (768, 12, 12), (1024, 24, 16), (2560, 20, 20)):
    MODELS[f"gpt_h{_hidden}_l{_layers}"] = (
        "gpt_step", lambda s, h=_hidden, n=_layers, a=_heads: step_models.GPT(h, n, a, seq=s),
        "tokens")

FAMILY_BATCH = {"cnn": 32, "vision_transformer": 16, "transformer": 16, "lstm": 32,
                "gpt_step": 1}


def example_inputs(kind, batch, seq_len, image_size):
    if kind == "image":
        return (torch.randn(batch, 3, image_size, image_size),), ["input"]
    if kind == "tokens":
        return (torch.randint(0, VOCAB, (batch, seq_len)),), ["tokens"]
    return ((torch.randint(0, VOCAB, (batch, seq_len)),
             torch.randint(0, VOCAB, (batch, seq_len))), ["src", "tgt"])


def export_one(name, args):
    family, build, kind = MODELS[name]
    batch = args.batch_size if args.batch_size else FAMILY_BATCH[family]
    if args.dynamic_batch and not args.batch_size:
        batch = 2  # only traced; 2 rather than 1 so no size-1 special case is recorded
    torch.manual_seed(SEED)
    model = build(args.seq_len)
    params = sum(p.numel() for p in model.parameters())
    inputs, input_names = example_inputs(kind, batch, args.seq_len, args.image_size)
    dynamic_axes = None
    if args.dynamic_batch:
        dynamic_axes = {n: {0: "batch"} for n in input_names + ["output"]}
    path = os.path.join(args.out, name + ".onnx")
    with warnings.catch_warnings():
        # Training-mode export warns once per BatchNorm about num_batches_tracked.
        warnings.simplefilter("ignore")
        torch.onnx.export(model, inputs, path, export_params=False, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.TRAINING, opset_version=args.opset,
                          input_names=input_names, output_names=["output"],
                          dynamic_axes=dynamic_axes)
    proto = onnx.load(path)
    onnx.checker.check_model(proto)
    nodes = len(proto.graph.node)
    size = os.path.getsize(path)
    batch_text = "dynamic" if args.dynamic_batch else str(batch)
    seq_text = f" seq {args.seq_len}" if kind != "image" else ""
    print(f"{name:28s} batch {batch_text:>7s}{seq_text:9s} nodes {nodes:6d}  "
          f"params {params / 1e6:8.2f}M  size {size / 1024:8.1f} KiB  {path}", flush=True)
    return size


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="all",
                        help="comma-separated model names, or 'all' (see --list)")
    parser.add_argument("--out", default="datasets/models/onnx", help="output directory")
    parser.add_argument("--batch-size", type=int, default=0,
                        help="batch of every model (default: per family, see --list)")
    parser.add_argument("--seq-len", type=int, default=128,
                        help="sequence length of Transformer / LSTM models (default 128)")
    parser.add_argument("--image-size", type=int, default=224, help="image side (default 224)")
    parser.add_argument("--opset", type=int, default=DEFAULT_OPSET,
                        help=f"ONNX opset (default {DEFAULT_OPSET})")
    parser.add_argument("--dynamic-batch", action="store_true",
                        help="export the batch dimension as the symbol 'batch'")
    parser.add_argument("--real-math", action="store_true",
                        help="run the matrix products while tracing (slow; the graph is the same)")
    parser.add_argument("--trace-dtype", choices=["fp32", "bf16"], default="fp32",
                        help="dtype the model is built and traced in: bf16 halves the memory "
                             "(the 1.3B GPTs need over 23 GiB in fp32); the exported graph is "
                             "the same (checked on gpt_h1024_l12), its float tensors typed bf16")
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    args = parser.parse_args()

    if args.list:
        for name, (family, _, kind) in MODELS.items():
            print(f"{name:28s} {family:20s} default batch {FAMILY_BATCH[family]}")
        return 0
    names = list(MODELS) if args.models == "all" else [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        parser.error(f"unknown model(s): {', '.join(unknown)} (see --list)")
    if args.batch_size < 0 or args.seq_len < 1 or args.image_size < 32:
        parser.error("--batch-size must be >= 1, --seq-len >= 1, --image-size >= 32")
    os.makedirs(args.out, exist_ok=True)
    if args.trace_dtype == "bf16":
        torch.set_default_dtype(torch.bfloat16)
    torch.set_num_threads(min(2, torch.get_num_threads()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Overriding a previously registered kernel"
        kernels = None if args.real_math else skip_matrix_math()
    start = time.time()
    total = sum(export_one(name, args) for name in names)
    print(f"{len(names)} model(s), {total / 1024:.1f} KiB, {time.time() - start:.1f} s",
          flush=True)
    del kernels  # restores the real kernels
    return 0


if __name__ == "__main__":
    sys.exit(main())
