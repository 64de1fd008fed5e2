#!/usr/bin/env python3
"""What the simulator charges for torch.compile's fused ops against the measured ones.

The compiled rows of datasets/measurements/h200/fused_ops.csv (RMSNorm, SwiGLU, rotary,
cross-entropy; training forward and forward + backward, two shapes each) against the ops
that stand for them in a one-layer `placer generate llama --kernels compile
--training-step` graph of the same shape, simulated on one GPU with a profile: the plain
RMSNorm before layer 0 (`input_layernorm`), `rotary`, `swiglu`, the `loss` and their
backward ops (`<op>/grad`). A forward row is compared with the forward op's simulated time
(launch + roofline, as the trace of `placer simulate` gives it), a forward + backward row
with the sum of both. None of these rows is in the profile's fit.

    python3 scripts/h200_fused_ops_check.py [--placer build/placer]
        [--profile datasets/clusters/h200.profile.yaml]
        [--cluster datasets/clusters/h200_sxm_1gpu.cluster.yaml]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

import step_fidelity_util as util

WHO = "h200_fused_ops_check.py"

# One graph per group of shapes: (placer generate llama options, {(op, shape): graph op}).
GRAPHS = [
    (dict(hidden=4096, heads=32, kv_heads=8, ffn=14336, seq_len=8192, vocab=32000),
     {("rmsnorm", "8192x4096"): "language_model.encoder.layers.0.input_layernorm",
      ("swiglu", "8192x14336"): "language_model.encoder.layers.0.mlp.swiglu",
      ("rotary", "8192x32x8x128"): "language_model.encoder.layers.0.self_attention.rotary",
      ("cross_entropy", "8192x32000"): "loss"}),
    (dict(hidden=1024, heads=8, kv_heads=8, ffn=28672, seq_len=8192, vocab=128256),
     {("swiglu", "8192x28672"): "language_model.encoder.layers.0.mlp.swiglu",
      ("cross_entropy", "8192x128256"): "loss"}),
    (dict(hidden=8192, heads=64, kv_heads=8, ffn=256, seq_len=16384, vocab=128),
     {("rmsnorm", "16384x8192"): "language_model.encoder.layers.0.input_layernorm",
      ("rotary", "16384x64x8x128"): "language_model.encoder.layers.0.self_attention.rotary"}),
]


def simulated_op_ms(placer, options, profile, cluster, work):
    """{op name: simulated duration in ms} of one generated graph's training step."""
    graph = os.path.join(work, "g.graph.json")
    plan = os.path.join(work, "one.plan.yaml")
    trace = os.path.join(work, "t.json")
    args = [placer, "generate", "llama", "--layers", "1", "--batch", "1", "--kernels", "compile",
            "--training-step", "-o", graph]
    for key, value in options.items():
        args += ["--" + key.replace("_", "-"), str(value)]
    util.run(args, WHO)
    with open(plan, "w") as f:
        f.write('format_version: "1.0"\nplacement:\n  default: 0\n')
    util.run([placer, "simulate", "--graph", graph, "--cluster", cluster, "--profile", profile,
              "--plan", plan, "--trace", trace], WHO)
    with open(trace) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    return {e["name"]: e["dur"] / 1e3 for e in events if e.get("ph") == "X"}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--placer", default="build/placer")
    p.add_argument("--profile", default="datasets/clusters/h200.profile.yaml")
    p.add_argument("--cluster", default="datasets/clusters/h200_sxm_1gpu.cluster.yaml")
    p.add_argument("--csv", default="datasets/measurements/h200/fused_ops.csv")
    a = p.parse_args()
    fused = util.read_csv(a.csv, WHO, ("op", "shape", "pass", "mode", "median_ms"), ("median_ms",))
    measured = {(r["op"], r["shape"], r["pass"]): float(r["median_ms"])
                for r in fused if r["mode"] == "compiled" and r["median_ms"]}
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for options, ops in GRAPHS:
            times = simulated_op_ms(a.placer, options, a.profile, a.cluster, work)
            for (op, shape), name in ops.items():
                fwd = times[name]
                for pass_, pred in (("fwd", fwd), ("fwd_bwd", fwd + times[name + "/grad"])):
                    meas = measured[(op, shape, pass_)]
                    rows.append((op, shape, pass_, meas, pred, (pred - meas) / meas))
    print(f"{'op':14} {'shape':16} {'pass':8} {'measured':>9} {'predicted':>9} {'error':>7}")
    for op, shape, pass_, meas, pred, err in rows:
        print(f"{op:14} {shape:16} {pass_:8} {meas:8.3f}ms {pred:8.3f}ms {100 * err:+6.1f}%")
    for label, sel in (("fwd", "fwd"), ("fwd_bwd", "fwd_bwd"), ("all", None)):
        errs = [abs(r[5]) for r in rows if sel is None or r[2] == sel]
        print(f"{label}: rows {len(errs)}, median |error| {100 * statistics.median(errs):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
