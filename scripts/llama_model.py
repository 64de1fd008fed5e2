"""A Llama-style decoder whose training steps scripts/gpu_llama_steps.py measures.

Pre-RMSNorm blocks (statistics in fp32), rotary position embedding (rotate-half, base
500000), grouped-query attention through torch.nn.functional.scaled_dot_product_attention
(causal; key/value heads repeated to the query heads first, as Hugging Face's Llama does, so
the default backend choice sees plain multi-head attention), a SwiGLU feed-forward of width
8/3 hidden rounded up to a multiple of 256, no biases, an untied vocabulary head. On PyTorch
1.13 (no SDPA) the attention is written out, so the module can be smoke-tested on a CPU.
"""

import math

import torch
from torch import nn
import torch.nn.functional as F

VOCAB = 32000


def ffn_width(hidden):
    return 256 * math.ceil(int(8 * hidden / 3) / 256)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) \
            * self.weight


def rotary_tables(seq, head_dim, base=500000.0):
    inv = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
    angle = torch.outer(torch.arange(seq).float(), inv)
    angle = torch.cat((angle, angle), dim=-1)
    return angle.cos(), angle.sin()


def apply_rotary(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def causal_attention(q, k, v):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    seq = q.shape[-2]
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    mask = torch.triu(torch.ones(seq, seq, dtype=torch.bool, device=q.device), diagonal=1)
    return torch.matmul(torch.softmax(scores.masked_fill(mask, float("-inf")), -1), v)


class Attention(nn.Module):
    def __init__(self, hidden, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.wq = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.wk = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(heads * self.head_dim, hidden, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        repeat = self.heads // self.kv_heads
        if repeat > 1:
            k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        y = causal_attention(q, k, v)
        return self.wo(y.transpose(1, 2).reshape(b, s, -1))


class FeedForward(nn.Module):
    def __init__(self, hidden, width):
        super().__init__()
        self.w1 = nn.Linear(hidden, width, bias=False)
        self.w3 = nn.Linear(hidden, width, bias=False)
        self.w2 = nn.Linear(width, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, hidden, heads, kv_heads):
        super().__init__()
        self.attention_norm = RMSNorm(hidden)
        self.attention = Attention(hidden, heads, kv_heads)
        self.ffn_norm = RMSNorm(hidden)
        self.feed_forward = FeedForward(hidden, ffn_width(hidden))

    def forward(self, x, cos, sin):
        x = x + self.attention(self.attention_norm(x), cos, sin)
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    """forward(tokens [batch, seq]) -> logits [batch, seq, vocab]. `layers` is a ModuleList
    whose entries may be replaced by wrappers (checkpointing, torch.compile) taking
    (x, cos, sin)."""

    def __init__(self, hidden, layers, heads, kv_heads, seq, vocab=VOCAB):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(Block(hidden, heads, kv_heads) for _ in range(layers))
        self.norm = RMSNorm(hidden)
        self.output = nn.Linear(hidden, vocab, bias=False)
        cos, sin = rotary_tables(seq, hidden // heads)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, tokens):
        x = self.embedding(tokens)
        s = tokens.shape[1]
        cos, sin = self.cos[:s].to(x.dtype), self.sin[:s].to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.output(self.norm(x))


def step_flops(hidden, layers, heads, kv_heads, seq, batch, vocab=VOCAB):
    """Model FLOPs of one training step (forward + backward = 3 forwards; a checkpointed
    step recomputes a forward on top, not counted): 2 per multiply-add of every linear and
    of causal attention's two products."""
    d = hidden // heads
    linear = hidden * heads * d * 2 + 2 * hidden * kv_heads * d + 3 * hidden * ffn_width(hidden)
    tokens = batch * seq
    attention = 4 * batch * heads * d * (seq * (seq + 1) // 2)
    return 3 * (2 * tokens * (layers * linear + hidden * vocab) + layers * attention)
