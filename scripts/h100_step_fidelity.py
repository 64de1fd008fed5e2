#!/usr/bin/env python3
"""Predicted vs measured training-step time on one GPU: for each row of a
steps.csv written by scripts/gpu_train_steps.py, import the model's ONNX export
(datasets/models/onnx/h100_steps/gpt_h*_l*.onnx, datasets/models/onnx/resnet50.onnx) at the
row's batch and dtype, place it on the one-GPU cluster and simulate a training step with the
given cost profile; print measured, predicted and error per row, then MAPE, the median
error and the Spearman rank correlation. Needs only the placer binary (no PyTorch).

  python3 scripts/h100_step_fidelity.py --steps datasets/measurements/h100/training_steps.csv \\
      --profile datasets/clusters/h100.profile.yaml [--cluster ...] [--placer build/placer]
      [--work /tmp/h100_fidelity] [--csv OUT.csv] [--memory]

GPT rows use AdamW (placer --optimizer adam), ResNet-50 rows SGD with momentum (momentum),
as the measured steps did. Imported graphs and plans are cached under --work.
"""

import argparse
import os
import sys

import step_fidelity_util as util

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(cmd):
    return util.run(cmd, "h100_step_fidelity.py")


def onnx_of(row):
    if row["family"] == "gpt":
        return os.path.join(ROOT, "datasets/models/onnx/h100_steps",
                            f"gpt_h{row['hidden']}_l{row['layers']}.onnx")
    return os.path.join(ROOT, "datasets/models/onnx/resnet50.onnx")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", required=True, nargs="+", help="steps.csv file(s)")
    ap.add_argument("--profile", required=True)
    ap.add_argument("--cluster", default=os.path.join(ROOT, "datasets/clusters/h100_sxm_1gpu.cluster.yaml"))
    util.add_run_options(ap, ROOT, "/tmp/h100_fidelity")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rows = []
    for path in args.steps:
        rows += [r for r in util.read_csv(path, "h100_step_fidelity.py", ("median_s",), ("median_s",))
                 if r["median_s"]]
    rows = util.keep_configs(rows, args.configs)
    if not rows:
        sys.exit("h100_step_fidelity.py: no measured rows")
    out = []
    print(f"{'config':28s} {'measured':>10s} {'predicted':>10s} {'error':>8s} "
          f"{'mem meas':>9s} {'mem pred':>9s}")
    for r in rows:
        dtype = "bf16" if r["dtype"] == "bf16" else "fp32"
        stem = os.path.join(args.work, r["name"])
        graph = stem + ".graph.json"
        if not os.path.exists(graph):
            run([args.placer, "import", onnx_of(r), "--batch-size", r["batch"], "--dtype", dtype,
                 "-o", graph])
        optimizer = "adam" if r["family"] == "gpt" else "momentum"
        text = run([args.placer, "place", "-g", graph, "-c", args.cluster, "--profile",
                    args.profile, "--optimizer", optimizer, "--method", "single",
                    "-o", stem + ".plan.yaml"])
        pred = util.parse_seconds(text, "step time")
        mem = util.parse_gib(text)
        meas = float(r["median_s"])
        err = (pred - meas) / meas
        mem_meas = float(r["peak_memory_bytes"]) / 2**30 if r["peak_memory_bytes"] else 0
        out.append(dict(name=r["name"], measured_s=meas, predicted_s=pred, rel_error=err,
                        peak_memory_gib=mem_meas, predicted_memory_gib=mem))
        print(f"{r['name']:28s} {meas * 1e3:8.2f}ms {pred * 1e3:8.2f}ms {err * 100:+7.1f}% "
              f"{mem_meas:7.2f}Gi {mem:7.2f}Gi", flush=True)
    print(util.summary("configs", [o["measured_s"] for o in out],
                       [o["predicted_s"] for o in out]))
    if args.csv:
        util.write_csv(args.csv, out)

if __name__ == "__main__":
    main()
