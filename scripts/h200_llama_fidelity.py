#!/usr/bin/env python3
"""Predicted vs measured Llama training steps on one H200: for each row of
datasets/measurements/h200/llama_steps.csv (written by scripts/gpu_llama_steps.py), generate
the Llama training-step graph of the row's shape (bf16 without fp32 master weights, AdamW
as PyTorch's foreach implementation runs it, FlashAttention-style SDPA, the kernel set of
the row's mode: `eager` for eager PyTorch, `compile-blocks` for torch.compile of each
block), write a one-GPU plan (`recompute: full` for activation checkpointing, as
torch.utils.checkpoint re-runs each block; an FSDP schedule over the one device for FSDP2
at world size 1), simulate it, and print measured, predicted and error per row, with the
peak memory, then the error summary over the fit rows and the held-out rows apart. Needs
only the placer binary.

  python3 scripts/h200_llama_fidelity.py [--steps CSV] [--profile PROFILE] [--cluster ...]
      [--placer build/placer] [--work DIR] [--csv OUT.csv] [--configs a,b]

The fit / held-out split is by shape: rows of the shapes in FIT_SHAPES may be used to fit
parameters, the others are held out. Without --profile the simulator picks the shipped
profile of the cluster's GPU. Graphs and plans are written under --work.
"""

import argparse
import os
import sys

import step_fidelity_util as util

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WHO = "h200_llama_fidelity.py"
# Shapes (the name's h<hidden>_l<layers>_s<seq>) whose rows a fit may see.
FIT_SHAPES = ("h2048_l8_s2k", "h4096_l8_s4k")
# The generator's kernel set for each measured mode.
KERNELS = {"eager": "eager", "compiled": "compile-blocks"}
# The llama_steps.csv columns the prediction reads.
STEP_COLUMNS = ("name", "hidden", "layers", "heads", "kv_heads", "ffn", "seq", "batch", "vocab",
                "mode", "checkpointing", "fsdp2", "median_s", "peak_memory_bytes", "status")


def is_fit(row):
    return any(f"_{shape}_" in row["name"] + "_" for shape in FIT_SHAPES)


def generate(args, row, graph):
    if row["mode"] not in KERNELS:
        sys.exit(f"{WHO}: {row['name']}: unknown mode '{row['mode']}' (eager, compiled)")
    cmd = [args.placer, "generate", "llama", "--layers", row["layers"], "--hidden", row["hidden"],
           "--heads", row["heads"], "--kv-heads", row["kv_heads"], "--ffn", row["ffn"],
           "--seq-len", row["seq"], "--batch", row["batch"], "--vocab", row["vocab"],
           "--dtype", "bf16", "--attention", "flash", "--kernels", KERNELS[row["mode"]],
           "--training-step", "--optimizer", "adam", "--no-master-weights",
           "--foreach-optimizer", "-o", graph]
    util.run(cmd, WHO)


def write_plan(row, path):
    """One device; full recompute for checkpointing; FSDP2 as an FSDP schedule on one rank."""
    lines = ['format_version: "1.1"', "method: manual", "placement: {default: 0}"]
    if row["checkpointing"] == "1":
        lines.append("recompute: full")
    if row["fsdp2"] == "1":
        lines.append("data_parallel: {replicas: 1, zero_stage: 3, fsdp: {}}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def predict(args, row):
    stem = os.path.join(args.work, row["name"])
    generate(args, row, stem + ".graph.json")
    write_plan(row, stem + ".plan.yaml")
    cmd = [args.placer, "simulate", "--graph", stem + ".graph.json", "--cluster", args.cluster,
           "--plan", stem + ".plan.yaml"]
    if args.profile:
        cmd += ["--profile", args.profile]
    text = util.run(cmd, WHO)
    seconds = util.parse_seconds(text, "step time")
    if seconds is None:
        sys.exit(f"{WHO}: {row['name']}: no step time in the simulator's report")
    return seconds, util.parse_gib(text)


def read_rows(args):
    rows = util.read_csv(args.steps, WHO, STEP_COLUMNS, ("median_s", "peak_memory_bytes"))
    rows = [r for r in rows if r["status"] == "ok" and r["median_s"]]
    rows = util.keep_configs(rows, args.configs)
    if not rows:
        sys.exit(f"{WHO}: {args.steps}: no measured rows")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", default=os.path.join(ROOT, "datasets/measurements/h200/llama_steps.csv"))
    ap.add_argument("--profile", help="cost profile (default: the cluster's shipped one)")
    ap.add_argument("--cluster", default=os.path.join(ROOT, "datasets/clusters/h200_sxm_1gpu.cluster.yaml"))
    util.add_run_options(ap, ROOT, "/tmp/h200_llama_fidelity")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rows = read_rows(args)
    out = []
    print(f"{'config':34s} {'set':8s} {'measured':>10s} {'predicted':>10s} {'error':>7s} "
          f"{'mem meas':>9s} {'mem pred':>9s}")
    for r in rows:
        pred, mem = predict(args, r)
        meas = float(r["median_s"])
        mem_meas = float(r["peak_memory_bytes"]) / 2**30
        out.append(dict(name=r["name"], split="fit" if is_fit(r) else "held-out", measured_s=meas,
                        predicted_s=pred, rel_error=(pred - meas) / meas,
                        peak_memory_gib=mem_meas, predicted_memory_gib=mem))
        o = out[-1]
        print(f"{o['name']:34s} {o['split']:8s} {meas * 1e3:8.1f}ms {pred * 1e3:8.1f}ms "
              f"{o['rel_error'] * 100:+6.1f}% {mem_meas:7.2f}Gi {mem or 0:7.2f}Gi", flush=True)
    for split in ("fit", "held-out"):
        part = [o for o in out if o["split"] == split]
        if part:
            print(util.summary(split, [o["measured_s"] for o in part],
                               [o["predicted_s"] for o in part]))
    if args.csv:
        util.write_csv(args.csv, out)

if __name__ == "__main__":
    main()
