#!/usr/bin/env python3
"""Train the models of scripts/step_models.py a few steps on one CUDA GPU, time the steps
and profile one of them.

  python3 scripts/gpu_train_steps.py --out OUT [--configs a,b] [--warmup 3] [--iters 10]

For each configuration, in CONFIGS order, it appends one row to OUT/steps.csv as soon as
that configuration is done (so a run cut off by a time limit keeps what it measured):
  name,family,hidden,layers,heads,seq,batch,dtype,params,iters,median_s,min_s,max_s,
  mean_s,peak_memory_bytes,profiled_step_s,trace
and writes OUT/traces/NAME.json.gz, the torch.profiler (Kineto) Chrome trace of one step
recorded with shapes and FLOPs. OUT/versions.json says GPU, driver-visible CUDA, cuDNN,
NCCL and PyTorch versions. A configuration that fails (out of memory, say) gets a row with
its error in `trace` and the run goes on.

A step is: zero_grad(set_to_none), forward, cross-entropy loss, backward, optimizer step
(AdamW for the GPT, SGD with momentum for ResNet-50), timed with the host clock around a
torch.cuda.synchronize() on each side, after `--warmup` untimed steps. bf16 configurations
hold the whole model in bf16 (parameters, gradients, optimizer state); fp32 ones run with
TF32 off in cuBLAS and cuDNN.
"""

import argparse
import csv
import gzip
import json
import os
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import step_models  # noqa: E402
from gpu_bench_util import host_seconds as timed  # noqa: E402

FIELDS = ["name", "family", "hidden", "layers", "heads", "seq", "batch", "dtype", "params",
          "iters", "median_s", "min_s", "max_s", "mean_s", "peak_memory_bytes",
          "profiled_step_s", "trace"]


def versions(device):
    if device != "cuda":
        return {"gpu": "none (--device " + device + ")", "torch": torch.__version__,
                "python": sys.version.split()[0]}
    props = torch.cuda.get_device_properties(0)
    nccl = torch.cuda.nccl.version() if hasattr(torch.cuda, "nccl") else None
    return {
        "gpu": torch.cuda.get_device_name(0),
        "multiprocessors": props.multi_processor_count,
        "memory_bytes": props.total_memory,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "nccl": ".".join(map(str, nccl)) if isinstance(nccl, tuple) else nccl,
        "python": sys.version.split()[0],
    }


def make_step(family, model, optimizer, inputs, target):
    def step():
        optimizer.zero_grad(set_to_none=True)
        out = model(inputs)
        if family == "gpt":
            loss = F.cross_entropy(out.view(-1, out.shape[-1]), target.view(-1))
        else:
            loss = F.cross_entropy(out, target)
        loss.backward()
        optimizer.step()
    return step


def build_on(device, family, kwargs):
    """The model with its parameters made on `device` directly where PyTorch can (2.x: a
    1B-parameter GPT initialised on the CPU would take longer than its steps)."""
    if hasattr(torch.device(device), "__enter__"):
        with torch.device(device):
            return step_models.build_model(family, kwargs)
    return step_models.build_model(family, kwargs).to(device)


def run_config(cfg, args, trace_dir):
    name, family, kwargs, batch, dtype = cfg
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False  # never TF32: see the docstring
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False  # the heuristic choice, as placer-calibrate makes
    device = args.device
    model = build_on(device, family, kwargs)
    model.train()
    if dtype == "bf16":
        model = model.to(torch.bfloat16)
    inputs = step_models.example_input(family, batch, device)
    target = step_models.example_target(family, batch, device)
    if family != "gpt":
        inputs = inputs.to(torch.bfloat16 if dtype == "bf16" else torch.float32)
        if dtype == "bf16":
            model = model.to(memory_format=torch.channels_last)
            inputs = inputs.contiguous(memory_format=torch.channels_last)
    if family == "gpt":
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    params = sum(p.numel() for p in model.parameters())
    step = make_step(family, model, optimizer, inputs, target)
    for _ in range(args.warmup):
        step()
    cuda = device == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    times = [timed(step, device) for _ in range(args.iters)]
    peak = torch.cuda.max_memory_allocated() if cuda else 0
    trace = os.path.join(trace_dir, name + ".json")
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities, record_shapes=True,
                                with_flops=True) as prof:
        profiled = timed(step, device)
    prof.export_chrome_trace(trace)
    with open(trace, "rb") as src, gzip.open(trace + ".gz", "wb", compresslevel=6) as dst:
        dst.write(src.read())
    os.remove(trace)
    del model, optimizer, step
    if cuda:
        torch.cuda.empty_cache()
    return {
        "name": name, "family": family, "hidden": kwargs.get("hidden", 0),
        "layers": kwargs.get("layers", 0), "heads": kwargs.get("heads", 0),
        "seq": step_models.SEQ if family == "gpt" else 0, "batch": batch, "dtype": dtype,
        "params": params, "iters": len(times), "median_s": statistics.median(times),
        "min_s": min(times), "max_s": max(times), "mean_s": statistics.fmean(times),
        "peak_memory_bytes": peak, "profiled_step_s": profiled,
        "trace": "traces/" + name + ".json.gz",
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--configs", default="all", help="comma-separated names or 'all'")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--device", default="cuda",
                        help="cuda, or cpu for a smoke test of this script without a GPU")
    parser.add_argument("--list", action="store_true", help="print the configurations and exit")
    args = parser.parse_args()
    chosen = step_models.CONFIGS
    if args.configs != "all":
        names = args.configs.split(",")
        known = {c[0] for c in chosen}
        unknown = [n for n in names if n not in known]
        if unknown:
            sys.exit(f"gpu_train_steps.py: --configs: unknown {', '.join(unknown)}")
        chosen = [c for c in chosen if c[0] in names]
    if args.list:
        for c in chosen:
            print(c[0])
        return
    if args.warmup < 1 or args.iters < 1:
        sys.exit("gpu_train_steps.py: --warmup and --iters must be >= 1")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu_train_steps.py: no CUDA GPU visible to PyTorch")
    trace_dir = os.path.join(args.out, "traces")
    os.makedirs(trace_dir, exist_ok=True)
    with open(os.path.join(args.out, "versions.json"), "w") as f:
        json.dump(versions(args.device), f, indent=1)
    path = os.path.join(args.out, "steps.csv")
    with open(path, "w", newline="") as f:
        csv.DictWriter(f, FIELDS).writeheader()
    for cfg in chosen:
        t0 = time.time()
        try:
            row = run_config(cfg, args, trace_dir)
        except Exception as e:  # keep going: one failed configuration is one row
            traceback.print_exc()
            row = {k: "" for k in FIELDS}
            row.update(name=cfg[0], family=cfg[1], batch=cfg[3], dtype=cfg[4],
                       trace="error: " + (str(e).splitlines() or ["?"])[0][:200])
            if args.device == "cuda":
                torch.cuda.empty_cache()
        with open(path, "a", newline="") as f:
            csv.DictWriter(f, FIELDS).writerow(row)
        ms = f"{row['median_s'] * 1e3:9.2f} ms" if row["median_s"] != "" else "   failed"
        print(f"{cfg[0]:28s} {ms}  ({time.time() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
