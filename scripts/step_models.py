"""The models and configurations whose training steps placer measures on a GPU.

Shared by scripts/gpu_train_steps.py (trains and profiles them on CUDA, PyTorch 2.x) and
scripts/export_models.py (exports the same modules to ONNX without weights, Debian's
PyTorch 1.13 on the CPU), so the graph placer simulates is the module that was timed.
Nothing here needs a GPU; it runs on PyTorch 1.13 and 2.x alike.

The GPT is written out (no fused attention): QKV projection, scores = QK^T / sqrt(d),
causal mask, softmax, dropout, PV, output projection, pre-LayerNorm, GELU MLP, tied-free
vocabulary head. That is the op sequence placer's ONNX import sees, so per-op comparisons
line up; a FlashAttention kernel would be one op the graph does not have.
"""

import math

import torch
from torch import nn

VOCAB = 32000
SEQ = 1024


class CausalSelfAttention(nn.Module):
    def __init__(self, hidden, heads, seq, dropout):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        mask = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        b, s, h = x.shape
        d = h // self.heads
        q, k, v = self.qkv(x).split(h, dim=2)
        q = q.view(b, s, self.heads, d).transpose(1, 2)
        k = k.view(b, s, self.heads, d).transpose(1, 2)
        v = v.view(b, s, self.heads, d).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
        scores = scores.masked_fill(self.mask[:s, :s], float("-inf"))
        probs = self.attn_dropout(torch.softmax(scores, dim=-1))
        y = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, h)
        return self.resid_dropout(self.proj(y))


class Block(nn.Module):
    def __init__(self, hidden, heads, seq, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = CausalSelfAttention(hidden, heads, seq, dropout)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.act = nn.GELU()
        self.out = nn.Linear(4 * hidden, hidden)
        self.mlp_dropout = nn.Dropout(dropout)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp_dropout(self.out(self.act(self.fc(self.ln2(x)))))


class GPT(nn.Module):
    """Decoder-only transformer LM: token + learned position embeddings, pre-LN blocks,
    final LayerNorm, vocabulary head. forward(tokens) -> logits [batch, seq, vocab]."""

    def __init__(self, hidden, layers, heads, seq=SEQ, vocab=VOCAB, dropout=0.1):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(seq, hidden)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(hidden, heads, seq, dropout) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        self.register_buffer("positions", torch.arange(seq).unsqueeze(0), persistent=False)

    def forward(self, tokens):
        x = self.drop(self.embedding(tokens) + self.position(self.positions[:, :tokens.shape[1]]))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# name: family, model arguments, micro-batch, dtype. Ordered cheapest first so a run cut off
# by its time limit still returns most configurations. fp32 runs without TF32 (cuBLAS and
# cuDNN): placer's fp32 peak is the plain FP32 rate.
CONFIGS = [
    ("gpt_h1024_l12_mb1_bf16", "gpt", dict(hidden=1024, layers=12, heads=16), 1, "bf16"),
    ("gpt_h1024_l12_mb4_bf16", "gpt", dict(hidden=1024, layers=12, heads=16), 4, "bf16"),
    ("gpt_h1024_l12_mb2_fp32", "gpt", dict(hidden=1024, layers=12, heads=16), 2, "fp32"),
    ("resnet50_b32_fp32", "resnet50", {}, 32, "fp32"),
    ("resnet50_b64_bf16", "resnet50", {}, 64, "bf16"),
    ("gpt_h1024_l12_mb8_bf16", "gpt", dict(hidden=1024, layers=12, heads=16), 8, "bf16"),
    ("gpt_h1536_l16_mb2_bf16", "gpt", dict(hidden=1536, layers=16, heads=16), 2, "bf16"),
    ("gpt_h2048_l24_mb1_bf16", "gpt", dict(hidden=2048, layers=24, heads=16), 1, "bf16"),
    ("resnet50_b128_fp32", "resnet50", {}, 128, "fp32"),
    ("gpt_h2048_l12_mb2_fp32", "gpt", dict(hidden=2048, layers=12, heads=16), 2, "fp32"),
    ("gpt_h2048_l24_mb4_bf16", "gpt", dict(hidden=2048, layers=24, heads=16), 4, "bf16"),
    # Added for the second run (held out from fits made on the first run's eleven).
    ("gpt_h768_l12_mb2_bf16", "gpt", dict(hidden=768, layers=12, heads=12), 2, "bf16"),
    ("gpt_h1024_l24_mb2_fp32", "gpt", dict(hidden=1024, layers=24, heads=16), 2, "fp32"),
    ("resnet50_b256_bf16", "resnet50", {}, 256, "bf16"),
    ("gpt_h2560_l20_mb2_bf16", "gpt", dict(hidden=2560, layers=20, heads=20), 2, "bf16"),
    ("gpt_h1024_l12_mb2_bf16", "gpt", dict(hidden=1024, layers=12, heads=16), 2, "bf16"),
    ("resnet50_b16_bf16", "resnet50", {}, 16, "bf16"),
]


def build_model(family, kwargs):
    if family == "gpt":
        return GPT(**kwargs)
    if family == "resnet50":
        import torchvision  # only the CNN needs it
        return torchvision.models.resnet50(weights=None)
    raise ValueError(f"unknown family {family}")


def example_input(family, batch, device="cpu"):
    """Seeded input of the right shape (token ids or an image batch)."""
    g = torch.Generator().manual_seed(0)
    if family == "gpt":
        return torch.randint(0, VOCAB, (batch, SEQ), generator=g).to(device)
    return torch.randn(batch, 3, 224, 224, generator=g).to(device)


def example_target(family, batch, device="cpu"):
    g = torch.Generator().manual_seed(1)
    if family == "gpt":
        return torch.randint(0, VOCAB, (batch, SEQ), generator=g).to(device)
    return torch.randint(0, 1000, (batch,), generator=g).to(device)
