#!/usr/bin/env python3
"""Time the kernels of current LLM training stacks on one CUDA GPU.

  python3 scripts/gpu_kernels_modern.py --section sdpa|fp8|fused|machine --out FILE
                                        [--budget-seconds N] [--device cuda] [--tiny]

Sections (each writes one CSV, a row per timed kernel, appended as soon as it is timed, so
a section stopped by its time limit keeps what it measured):
  sdpa   torch.nn.functional.scaled_dot_product_attention in bf16 with each backend forced in
         turn (flash, efficient, cuDNN), forward and backward, causal and not, over sequence
         512-32768 (batch x sequence = 16384 tokens, at least one sequence), head dim 64 and
         128, 8-64 query heads, GQA ratios 1/4/8 (gqa_mode: native = enable_gqa; expanded
         = the backend refused it, so key/value heads were repeated before the timed call;
         mha = ratio 1).
  fp8    torch._scaled_mm (e4m3 x e4m3 -> bf16; tensor-wise scales with and without fast
         accumulation, row-wise scales) against bf16 torch.mm on the same operands, over the
         forward, input-gradient and weight-gradient GEMMs of Llama 3 8B / 70B / 405B layers
         at 2048-16384 tokens. rel_err: |out - ref| / |ref| against the exact product of the
         same e4m3 values taken in bf16.
  fused  RMSNorm, SwiGLU, rotary embedding and cross-entropy, eager against torch.compile
         (inductor's fused Triton kernels), training forward and forward+backward.
  machine  FILE gets the machine facts (GPU, SMs, L2, versions) as JSON.

Times come from gpu_bench_util.KernelTimer (CUDA events, L2 overwritten before each call,
median of up to 20 calls). flops and bytes per row are the arithmetic of the operation and
the fewest bytes it must move (each input read once, each output written once), so a fit can
place it against the rate and the bandwidth. A configuration that cannot run (backend does
not support it, out of memory) gets a row whose `status` says why; the others say "ok".
Configurations run in a seeded shuffled order, so a run cut by its budget keeps an even
sample of the grid. --device cpu --tiny runs a few small configurations on the CPU (a smoke
test of this script without a GPU).
"""

import argparse
import json
import math
import os
import random
import sys
import warnings

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_bench_util as util  # noqa: E402

SDPA_FIELDS = ["backend", "pass", "causal", "batch", "seq", "heads_q", "heads_kv", "head_dim",
               "gqa_ratio", "gqa_mode", "dtype", "flops", "bytes", "reps", "median_ms", "min_ms",
               "tflops", "first_call_s", "status"]
FP8_FIELDS = ["model", "layer", "pass", "m", "n", "k", "variant", "flops", "bytes", "reps",
              "median_ms", "min_ms", "tflops", "rel_err", "first_call_s", "status"]
FUSED_FIELDS = ["op", "mode", "pass", "shape", "elements", "dtype", "flops", "bytes", "reps",
                "median_ms", "min_ms", "gbps", "first_call_s", "status"]

# (query heads, key/value heads, head dim): Llama 2 7B, Llama 3 8B, Llama 3 70B, GPT-2-like
# d64 shapes, and two GQA shapes with other head counts.
SDPA_HEADS = [(32, 8, 128), (32, 32, 128), (64, 8, 128), (16, 16, 64), (8, 8, 64),
              (16, 4, 64), (24, 3, 128)]
SDPA_SEQS = [512, 1024, 2048, 4096, 8192, 16384, 32768]
SDPA_TOKENS = 16384
SDPA_BACKENDS = ["flash", "efficient", "cudnn"]

# Llama 3 layers: hidden, FFN, query heads, key/value heads (head dim 128).
LLAMA_LAYERS = {"llama3_8b": (4096, 14336, 32, 8), "llama3_70b": (8192, 28672, 64, 8),
                "llama3_405b": (16384, 53248, 128, 8)}
FP8_TOKENS = [2048, 4096, 8192, 16384]
FP8_VARIANTS = ["bf16", "fp8_tensorwise", "fp8_tensorwise_fastacc", "fp8_rowwise"]


# ---- attention ----------------------------------------------------------------------------
def sdpa_backend(name):
    from torch.nn.attention import SDPBackend
    return {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}[name]


def attention_cost(batch, seq, hq, hkv, d, causal):
    """FLOPs and fewest bytes of the forward and the backward (FlashAttention's count: the
    backward does 5 of the 2-matmul forward's products, so 2.5 times its FLOPs)."""
    pairs = seq * (seq + 1) // 2 if causal else seq * seq
    fwd = 4 * batch * hq * d * pairs
    elem = 2 * batch * seq * d
    lse = 4 * batch * hq * seq
    return {"fwd": (fwd, elem * (2 * hq + 2 * hkv) + lse),
            "bwd": (fwd * 5 // 2, elem * (4 * hq + 4 * hkv) + lse)}


def sdpa_inputs(batch, seq, hq, hkv, d, device, dtype):
    """q, k, v in the layout a model makes them ([b, s, h, d] viewed as [b, h, s, d])."""
    def make(heads):
        t = torch.randn(batch, seq, heads, d, device=device, dtype=dtype).transpose(1, 2)
        return t.detach().requires_grad_()
    return make(hq), make(hkv), make(hkv)


def sdpa_rows(timer, q, k, v, causal, gqa):
    """Forward and backward timings of one call under the backend forced by the caller."""
    kwargs = {"is_causal": causal}
    if gqa:
        kwargs["enable_gqa"] = True
    out = F.scaled_dot_product_attention(q, k, v, **kwargs)
    dout = torch.randn_like(out)
    return [("fwd", timer(lambda: F.scaled_dot_product_attention(q, k, v, **kwargs))),
            ("bwd", timer(lambda: torch.autograd.grad(out, (q, k, v), dout,
                                                      retain_graph=True)))]


def time_sdpa(timer, backend, shape, causal, device, dtype):
    """(gqa_mode, rows) for one shape under one forced backend. GQA runs natively
    (enable_gqa) where the backend takes it, else with the key/value heads repeated before
    the call (outside the timed region), as models do for such backends."""
    from torch.nn.attention import sdpa_kernel
    batch, seq, hq, hkv, d = shape
    q, k, v = sdpa_inputs(batch, seq, hq, hkv, d, device, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a refused backend warns before it raises
        with sdpa_kernel(sdpa_backend(backend)):
            if hq == hkv:
                return "mha", sdpa_rows(timer, q, k, v, causal, False)
            try:
                return "native", sdpa_rows(timer, q, k, v, causal, True)
            except RuntimeError:
                pass
            k, v = [t.detach().repeat_interleave(hq // hkv, dim=1).requires_grad_()
                    for t in (k, v)]
            return "expanded", sdpa_rows(timer, q, k, v, causal, False)


def sdpa_configs(tiny):
    if tiny:
        shapes = [(2, 64, 4, 4, 16), (1, 128, 4, 2, 16)]
    else:
        shapes = [(max(1, SDPA_TOKENS // s), s, hq, hkv, d)
                  for s in SDPA_SEQS for hq, hkv, d in SDPA_HEADS]
    configs = [(shape, causal) for shape in shapes for causal in (False, True)]
    random.Random(0).shuffle(configs)
    return configs


def run_sdpa(args, timer, budget):
    log = util.CsvLog(args.out, SDPA_FIELDS)
    backends = SDPA_BACKENDS + (["math"] if args.device == "cpu" else [])
    dtype = torch.bfloat16
    configs = sdpa_configs(args.tiny)
    for done, (shape, causal) in enumerate(configs):
        if budget.exhausted():
            return print_budget_cut("sdpa", done, len(configs))
        batch, seq, hq, hkv, d = shape
        for backend in backends:
            base = {"backend": backend, "causal": int(causal), "batch": batch, "seq": seq,
                    "heads_q": hq, "heads_kv": hkv, "head_dim": d, "gqa_ratio": hq // hkv,
                    "dtype": "bf16"}
            try:
                mode, rows = time_sdpa(timer, backend, shape, causal, args.device, dtype)
            except Exception as e:  # one unsupported backend or shape is one row
                mode, rows = "", [(p, {"status": util.skip_reason(e)}) for p in ("fwd", "bwd")]
            util.free_memory(args.device)
            kv_read = hq if mode == "expanded" else hkv
            costs = attention_cost(batch, seq, hq, kv_read, d, causal)
            for pass_name, timing in rows:
                flops, nbytes = costs[pass_name]
                base["gqa_mode"] = mode
                log.write(finish_row(dict(base, **{"pass": pass_name}), timing, flops, nbytes))
    print(f"sdpa: all {len(configs)} shapes x causality done", flush=True)


def finish_row(row, timing, flops, nbytes, rate="tflops"):
    """Adds the timing, the operation counts and the achieved rate to a row."""
    row.update(timing)
    row.update(flops=flops, bytes=nbytes)
    row.setdefault("status", "ok")
    if "median_ms" in timing:
        seconds = timing["median_ms"] / 1e3
        row[rate] = (flops / seconds / 1e12) if rate == "tflops" else nbytes / seconds / 1e9
    return row


def print_budget_cut(section, done, total):
    print(f"{section}: budget reached after {done} of {total} configurations", flush=True)


# ---- FP8 GEMMs ----------------------------------------------------------------------------
def llama_linears(hidden, ffn, heads, kv_heads):
    """(input features, output features) of the four GEMMs of a Llama layer."""
    d = hidden // heads
    return {"qkv": (hidden, (heads + 2 * kv_heads) * d), "o": (hidden, hidden),
            "gate_up": (hidden, 2 * ffn), "down": (ffn, hidden)}


def gemm_shapes(tokens, fan_in, fan_out):
    """(m, n, k) of the forward, input-gradient and weight-gradient GEMMs of one linear."""
    return {"fwd": (tokens, fan_out, fan_in), "dgrad": (tokens, fan_in, fan_out),
            "wgrad": (fan_out, fan_in, tokens)}


def fp8_configs(tiny):
    if tiny:
        return [("tiny", "mlp", "fwd", 64, 96, 128)]
    configs = []
    for model, dims in LLAMA_LAYERS.items():
        for layer, (fan_in, fan_out) in llama_linears(*dims).items():
            for tokens in FP8_TOKENS:
                for pass_name, mnk in gemm_shapes(tokens, fan_in, fan_out).items():
                    configs.append((model, layer, pass_name) + mnk)
    random.Random(0).shuffle(configs)
    return configs


def fp8_operands(m, n, k, device):
    """a [m, k] row-major and b [k, n] column-major (the layouts cuBLASLt's FP8 GEMM takes),
    in e4m3 and the same values in bf16."""
    a = torch.randn(m, k, device=device, dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device=device, dtype=torch.bfloat16).to(torch.float8_e4m3fn).t()
    return a, b, a.to(torch.bfloat16), b.to(torch.bfloat16)


def fp8_call(variant, a, b, device):
    one = torch.ones((), device=device, dtype=torch.float32)
    if variant == "fp8_rowwise":
        sa = torch.ones(a.shape[0], 1, device=device, dtype=torch.float32)
        sb = torch.ones(1, b.shape[1], device=device, dtype=torch.float32)
        return lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    fast = variant == "fp8_tensorwise_fastacc"
    return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                    use_fast_accum=fast)


def relative_error(out, ref):
    out, ref = out.float(), ref.float()
    return ((out - ref).norm() / ref.norm()).item()


def time_gemm_variants(timer, m, n, k, device):
    a, b, a16, b16 = fp8_operands(m, n, k, device)
    ref = torch.mm(a16, b16)
    rows = []
    for variant in FP8_VARIANTS:
        fn = (lambda: torch.mm(a16, b16)) if variant == "bf16" else fp8_call(variant, a, b, device)
        try:
            out = fn()
            timing = dict(timer(fn), rel_err=relative_error(out, ref))
            del out
        except Exception as e:  # an unsupported scaling mode is one row
            timing = {"status": util.skip_reason(e)}
        width = 2 if variant == "bf16" else 1
        rows.append((variant, timing, width * (m * k + n * k) + 2 * m * n))
    return rows


def run_fp8(args, timer, budget):
    log = util.CsvLog(args.out, FP8_FIELDS)
    configs = fp8_configs(args.tiny)
    for done, (model, layer, pass_name, m, n, k) in enumerate(configs):
        if budget.exhausted():
            return print_budget_cut("fp8", done, len(configs))
        base = {"model": model, "layer": layer, "pass": pass_name, "m": m, "n": n, "k": k}
        try:
            rows = time_gemm_variants(timer, m, n, k, args.device)
        except Exception as e:  # no FP8 type, or out of memory: every variant skipped
            rows = [(v, {"status": util.skip_reason(e)}, 0) for v in FP8_VARIANTS]
        util.free_memory(args.device)
        for variant, timing, nbytes in rows:
            log.write(finish_row(dict(base, variant=variant), timing, 2 * m * n * k, nbytes))
    print(f"fp8: all {len(configs)} GEMM shapes done", flush=True)


# ---- fused element-wise ops -----------------------------------------------------------------
def rmsnorm(x, weight):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * weight


def swiglu(gate, up):
    return F.silu(gate) * up


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotary(q, k, cos, sin):
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def cross_entropy(logits, target):
    return F.cross_entropy(logits.float(), target)


def fused_inputs(op, shape, device):
    """(inputs needing gradients, other inputs, FLOPs per element of the main input)."""
    bf16 = dict(device=device, dtype=torch.bfloat16)

    def grad(*size):
        return torch.randn(*size, **bf16).requires_grad_()
    if op == "rmsnorm":
        tokens, hidden = shape
        return [grad(tokens, hidden), grad(hidden)], [], 4
    if op == "swiglu":
        tokens, ffn = shape
        return [grad(tokens, ffn), grad(tokens, ffn)], [], 5
    if op == "rotary":
        seq, hq, hkv, d = shape
        angle = torch.rand(seq, 1, d, device=device) * math.pi
        return [grad(1, seq, hq, d), grad(1, seq, hkv, d)], [angle.cos().to(torch.bfloat16),
                                                            angle.sin().to(torch.bfloat16)], 6
    tokens, vocab = shape
    target = torch.randint(0, vocab, (tokens,), device=device)
    return [grad(tokens, vocab)], [target], 5


FUSED_OPS = {"rmsnorm": rmsnorm, "swiglu": swiglu, "rotary": rotary,
             "cross_entropy": cross_entropy}
FUSED_SHAPES = {"rmsnorm": [(8192, 4096), (16384, 8192)],
                "swiglu": [(8192, 14336), (8192, 28672)],
                "rotary": [(8192, 32, 8, 128), (16384, 64, 8, 128)],
                "cross_entropy": [(8192, 32000), (8192, 128256)]}
TINY_FUSED_SHAPES = {"rmsnorm": [(64, 32)], "swiglu": [(64, 48)], "rotary": [(16, 4, 2, 8)],
                     "cross_entropy": [(16, 100)]}


def nbytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def time_fused(timer, op, shape, mode, device):
    """Rows for the training forward and the forward+backward of one op in one mode."""
    grads, others, flops_per = fused_inputs(op, shape, device)
    fn = FUSED_OPS[op]
    if mode == "compiled":
        fn = torch.compile(fn, dynamic=False)
    first = []
    first_s = util.host_seconds(lambda: first.append(fn(*grads, *others)), device)
    outputs = first.pop()
    outputs = list(outputs) if isinstance(outputs, tuple) else [outputs]
    douts = [torch.randn_like(o) for o in outputs]

    def forward():
        return fn(*grads, *others)

    def forward_backward():
        out = forward()
        return torch.autograd.grad(list(out) if isinstance(out, tuple) else [out], grads, douts)
    io_in, io_out = nbytes(grads + others), nbytes(outputs)
    elements = grads[0].numel()
    # the forward row's first call is the very first one: with torch.compile, the compile
    return elements, [("fwd", dict(timer(forward), first_call_s=first_s), elements * flops_per,
                       io_in + io_out),
                      ("fwd_bwd", timer(forward_backward), 3 * elements * flops_per,
                       2 * io_in + 2 * io_out + nbytes(grads))]


def run_fused(args, timer, budget):
    log = util.CsvLog(args.out, FUSED_FIELDS)
    shapes = TINY_FUSED_SHAPES if args.tiny else FUSED_SHAPES
    modes = ["eager", "compiled"] if hasattr(torch, "compile") else ["eager"]
    configs = [(op, shapes[op][i], mode) for i in range(2) for op in FUSED_OPS
               for mode in modes if i < len(shapes[op])]
    for done, (op, shape, mode) in enumerate(configs):
        if budget.exhausted():
            return print_budget_cut("fused", done, len(configs))
        base = {"op": op, "mode": mode, "shape": "x".join(map(str, shape)), "dtype": "bf16"}
        try:
            elements, rows = time_fused(timer, op, shape, mode, args.device)
        except Exception as e:  # a compile failure is one row
            elements, rows = 0, [(p, {"status": util.skip_reason(e)}, 0, 0)
                                 for p in ("fwd", "fwd_bwd")]
        util.free_memory(args.device)
        for pass_name, timing, flops, io in rows:
            row = dict(base, elements=elements, **{"pass": pass_name})
            log.write(finish_row(row, timing, flops, io, rate="gbps"))
    print(f"fused: all {len(configs)} op x shape x mode configurations done", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--section", required=True, choices=["sdpa", "fp8", "fused", "machine"])
    parser.add_argument("--out", required=True)
    parser.add_argument("--budget-seconds", type=float, default=0, help="0: no limit")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true", help="a few small configurations")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu_kernels_modern.py: no CUDA GPU visible to PyTorch")
    budget = util.Budget(args.budget_seconds)
    torch.manual_seed(0)
    if args.section == "machine":
        with open(args.out, "w") as f:
            json.dump(util.machine_facts(args.device), f, indent=1)
        return
    timer = util.KernelTimer(args.device)
    {"sdpa": run_sdpa, "fp8": run_fp8, "fused": run_fused}[args.section](args, timer, budget)
    print(f"{args.section}: {budget.spent():.0f} s", flush=True)


if __name__ == "__main__":
    main()
