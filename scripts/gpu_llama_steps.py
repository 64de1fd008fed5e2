#!/usr/bin/env python3
"""Time and profile training steps of the Llama-style model of scripts/llama_model.py on one
CUDA GPU: eager or torch.compile (each block compiled on its own, the way large models are
compiled), with or without activation checkpointing (per block, non-reentrant), and under
FSDP2 (torch.distributed.fsdp.fully_shard per block and on the root) in a one-process
group, the code path a data-parallel user runs, on one GPU.

  python3 scripts/gpu_llama_steps.py --csv FILE --traces DIR [--configs a,b|all]
                                     [--budget-seconds N] [--warmup 2] [--iters 6]
                                     [--device cuda] [--tiny]

Appends one row per configuration to FILE as soon as it is done (columns: FIELDS below;
`status` ok or why it was skipped), and writes DIR/NAME.json.gz, a torch.profiler trace
of one step (CPU and CUDA, shapes and FLOPs recorded). A step: zero_grad(set_to_none),
forward, cross-entropy in fp32, backward, AdamW step; the whole model in bf16 (parameters,
gradients, optimizer state); timed with the host clock around a synchronize on each side
after `--warmup` steps (the first of which compiles; its time is `first_step_s`).
`model_flops` counts forward + backward (no recompute); `tflops` = model_flops / median.
"""

import argparse
import datetime
import gc
import gzip
import os
import statistics
import sys
import traceback

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_bench_util as util  # noqa: E402
import llama_model  # noqa: E402

FIELDS = ["name", "hidden", "layers", "heads", "kv_heads", "ffn", "seq", "batch", "vocab",
          "mode", "checkpointing", "fsdp2", "params", "model_flops", "warmup", "iters",
          "median_s", "min_s", "max_s", "first_step_s", "tflops", "peak_memory_bytes",
          "profiled_step_s", "trace", "status"]

# name: hidden, layers, heads, kv heads, seq, batch, mode, checkpointing, fsdp2. Cheapest
# first, and every variant (checkpointing, compile, FSDP2) on the first two shapes before
# the large ones, so a run cut by its budget still compares them.
SHAPES = {"h2048_l8_s2k": (2048, 8, 16, 4, 2048, 4), "h4096_l8_s4k": (4096, 8, 32, 8, 4096, 2),
          "h3072_l12_s8k": (3072, 12, 24, 8, 8192, 1),
          "h2048_l16_s16k": (2048, 16, 16, 4, 16384, 1),
          "h4096_l16_s16k": (4096, 16, 32, 8, 16384, 1)}
VARIANTS = [("h2048_l8_s2k", "eager", 0, 0), ("h2048_l8_s2k", "eager", 1, 0),
            ("h2048_l8_s2k", "eager", 0, 1), ("h4096_l8_s4k", "eager", 0, 0),
            ("h4096_l8_s4k", "eager", 1, 0), ("h4096_l8_s4k", "eager", 0, 1),
            ("h2048_l8_s2k", "compiled", 0, 0), ("h2048_l8_s2k", "compiled", 1, 0),
            ("h4096_l8_s4k", "compiled", 0, 0), ("h3072_l12_s8k", "eager", 0, 0),
            ("h2048_l16_s16k", "eager", 0, 0), ("h4096_l16_s16k", "eager", 1, 0),
            ("h4096_l16_s16k", "eager", 0, 0), ("h3072_l12_s8k", "compiled", 1, 0)]
TINY_SHAPES = {"tiny": (64, 2, 4, 2, 32, 2)}


def config_name(shape, mode, ckpt, fsdp):
    return "llama_" + shape + "_" + mode + ("_ckpt" if ckpt else "") + ("_fsdp2" if fsdp else "")


def configurations(tiny):
    shapes = TINY_SHAPES if tiny else SHAPES
    variants = VARIANTS if not tiny else [("tiny", m, c, f) for m, c, f in
                                          [("eager", 0, 0), ("eager", 1, 0), ("compiled", 0, 0),
                                           ("compiled", 1, 0), ("eager", 0, 1)]]
    return [(config_name(s, m, c, f), shapes[s], m, c, f) for s, m, c, f in variants]


class Checkpointed(torch.nn.Module):
    """A block whose activations are recomputed in the backward (non-reentrant)."""

    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x, cos, sin):
        return checkpoint(self.block, x, cos, sin, use_reentrant=False)


def process_group(device):
    """A one-process group on this host, made once (FSDP2 needs one even at world size 1)."""
    import torch.distributed as dist
    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29531")
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
        dist.init_process_group("nccl" if device == "cuda" else "gloo", rank=0, world_size=1,
                                timeout=datetime.timedelta(seconds=60))


def fully_shard_fn():
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard
    return fully_shard


def build(dims, mode, ckpt, fsdp, device):
    """The model in bf16 on `device`, wrapped as the configuration says, and its AdamW."""
    hidden, layers, heads, kv_heads, seq, _ = dims
    torch.manual_seed(0)
    if device == "cuda":
        with torch.device(device):
            model = llama_model.Llama(hidden, layers, heads, kv_heads, seq)
    else:
        model = llama_model.Llama(hidden, layers, heads, kv_heads, seq)
    model = model.to(torch.bfloat16).train()
    for i, block in enumerate(model.layers):
        wrapped = Checkpointed(block) if ckpt else block
        if mode == "compiled":
            if not hasattr(torch, "compile"):
                raise RuntimeError("this PyTorch has no torch.compile")
            wrapped = torch.compile(wrapped, dynamic=False)
        model.layers[i] = wrapped
    if fsdp:
        process_group(device)
        shard = fully_shard_fn()
        for block in model.layers:
            shard(block)
        shard(model)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4)


def make_step(model, optimizer, tokens, target):
    def step():
        optimizer.zero_grad(set_to_none=True)
        logits = model(tokens)
        loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), target.view(-1))
        loss.backward()
        optimizer.step()
    return step


def profile_step(step, device, path):
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities, record_shapes=True,
                                with_flops=True) as prof:
        seconds = util.host_seconds(step, device)
    prof.export_chrome_trace(path)
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=6) as dst:
        dst.write(src.read())
    os.remove(path)
    return seconds


def measure(cfg, args):
    """Builds, warms up, times and profiles one configuration; returns its row."""
    name, dims, mode, ckpt, fsdp = cfg
    hidden, layers, heads, kv_heads, seq, batch = dims
    model, optimizer = build(dims, mode, ckpt, fsdp, args.device)
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, llama_model.VOCAB, (batch, seq), generator=gen).to(args.device)
    target = torch.randint(0, llama_model.VOCAB, (batch, seq), generator=gen).to(args.device)
    step = make_step(model, optimizer, tokens, target)
    first = util.host_seconds(step, args.device)
    for _ in range(args.warmup - 1):
        step()
    if args.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times = [util.host_seconds(step, args.device) for _ in range(args.iters)]
    row = {"params": sum(p.numel() for p in model.parameters()),
           "peak_memory_bytes": torch.cuda.max_memory_allocated() if args.device == "cuda" else 0,
           "median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
           "first_step_s": first, "iters": len(times), "warmup": args.warmup}
    row["profiled_step_s"] = profile_step(step, args.device,
                                          os.path.join(args.traces, name + ".json"))
    row["trace"] = "traces/" + name + ".json.gz"
    row["tflops"] = llama_model.step_flops(hidden, layers, heads, kv_heads, seq, batch) \
        / row["median_s"] / 1e12
    return row


def describe(cfg):
    name, (hidden, layers, heads, kv_heads, seq, batch), mode, ckpt, fsdp = cfg
    return {"name": name, "hidden": hidden, "layers": layers, "heads": heads,
            "kv_heads": kv_heads, "ffn": llama_model.ffn_width(hidden), "seq": seq,
            "batch": batch, "vocab": llama_model.VOCAB, "mode": mode, "checkpointing": ckpt,
            "fsdp2": fsdp,
            "model_flops": llama_model.step_flops(hidden, layers, heads, kv_heads, seq, batch)}


def release(device):
    gc.collect()
    if hasattr(torch, "_dynamo"):
        torch._dynamo.reset()
    util.free_memory(device)


def run(configs, args):
    log = util.CsvLog(args.csv, FIELDS)
    budget = util.Budget(args.budget_seconds)
    for done, cfg in enumerate(configs):
        if budget.exhausted():
            print(f"llama: budget reached after {done} of {len(configs)} configurations",
                  flush=True)
            break
        start = budget.spent()
        row = describe(cfg)
        try:
            row.update(measure(cfg, args), status="ok")
        except Exception as e:  # one failed configuration is one row
            traceback.print_exc()
            row["status"] = util.skip_reason(e)
        release(args.device)
        log.write(row)
        ms = f"{row['median_s'] * 1e3:9.2f} ms" if "median_s" in row else "   failed"
        print(f"{cfg[0]:36s} {ms}  ({budget.spent() - start:.0f} s)", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--csv", required=True)
    parser.add_argument("--traces", required=True)
    parser.add_argument("--configs", default="all", help="comma-separated names or 'all'")
    parser.add_argument("--budget-seconds", type=float, default=0, help="0: no limit")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--iters", type=int, default=6)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true", help="one small model on each path")
    parser.add_argument("--list", action="store_true", help="print the configurations and exit")
    args = parser.parse_args()
    configs = configurations(args.tiny)
    if args.configs != "all":
        names = args.configs.split(",")
        unknown = sorted(set(names) - {c[0] for c in configs})
        if unknown:
            sys.exit("gpu_llama_steps.py: --configs: unknown " + ", ".join(unknown))
        configs = [c for c in configs if c[0] in names]
    if args.list:
        print("\n".join(c[0] for c in configs))
        return
    if args.warmup < 1 or args.iters < 1:
        sys.exit("gpu_llama_steps.py: --warmup and --iters must be >= 1")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu_llama_steps.py: no CUDA GPU visible to PyTorch")
    os.makedirs(args.traces, exist_ok=True)
    if args.device == "cuda":
        torch.cuda.set_device(0)
    run(configs, args)
    if "torch.distributed" in sys.modules and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
