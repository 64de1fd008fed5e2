#!/usr/bin/env python3
"""Fits a profile's `fsdp_hook_host_time` (docs/parallelism.md, "FSDP, FSDP2 and HSDP") on
the FIT rows of datasets/measurements/h200/llama_steps.csv: for each FIT row with FSDP2 and
its plain row (the same name without `_fsdp2`), the measured step difference (FSDP2 minus
plain) against the simulated one, for each hook time of a grid; prints them and the grid
value with the least sum of squared differences. Only FIT rows are read (the fixed split of
scripts/h200_llama_fidelity.py); the FSDP2 copies are simulated whatever the hook time.

  python3 scripts/fit_fsdp_hook_time.py [--profile datasets/clusters/h200.profile.yaml]
      [--grid-us 0,50,...] [--placer build/placer] [--work DIR]
"""

import argparse
import json
import os
import re
import sys

import h200_llama_fidelity as fidelity
import step_fidelity_util as util

WHO = "fit_fsdp_hook_time.py"
CLUSTER = os.path.join(fidelity.ROOT, "datasets/clusters/h200_sxm_1gpu.cluster.yaml")


def fit_pairs(steps):
    """(plain row, FSDP2 row) of every FIT shape measured both ways."""
    rows = util.read_csv(steps, WHO, fidelity.STEP_COLUMNS, ("median_s",))
    rows = {r["name"]: r for r in rows if r["status"] == "ok"}
    pairs = []
    for name, row in sorted(rows.items()):
        plain = rows.get(name.replace("_fsdp2", ""))
        if row["fsdp2"] == "1" and fidelity.is_fit(row) and plain is not None:
            pairs.append((plain, row))
    if not pairs:
        sys.exit(f"{WHO}: {steps}: no FIT row with FSDP2 and its plain row")
    return pairs


def with_hook_time(profile, us, path):
    """A copy of `profile` whose fsdp_hook_host_time is `us` microseconds."""
    with open(profile) as f:
        text = re.sub(r"(?m)^fsdp_hook_host_time:.*\n", "", f.read())
    with open(path, "w") as f:
        f.write(text.rstrip("\n") + f"\nfsdp_hook_host_time: {us:g} us\n")


def simulate(args, row, profile):
    stem = os.path.join(args.work, row["name"])
    out = stem + ".predicted.json"
    util.run([args.placer, "simulate", "--graph", stem + ".graph.json", "--cluster", CLUSTER,
              "--plan", stem + ".plan.yaml", "--profile", profile, "-o", out], WHO)
    with open(out) as f:
        return json.load(f)["predicted"]["step_time"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", default=os.path.join(fidelity.ROOT, "datasets/measurements/h200/llama_steps.csv"))
    ap.add_argument("--profile", default=os.path.join(fidelity.ROOT, "datasets/clusters/h200.profile.yaml"))
    ap.add_argument("--grid-us", default=",".join(str(50 * k) for k in range(31)))
    ap.add_argument("--placer", default=os.path.join(fidelity.ROOT, "build/placer"))
    ap.add_argument("--work", default="/tmp/fit_fsdp_hook_time")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    pairs = fit_pairs(args.steps)
    for plain, fsdp in pairs:
        for row in (plain, fsdp):
            stem = os.path.join(args.work, row["name"])
            fidelity.generate(args, row, stem + ".graph.json")
            fidelity.write_plan(row, stem + ".plan.yaml")
    # The hooks run only under FSDP: the plain steps are simulated once.
    plain_step = {plain["name"]: simulate(args, plain, args.profile) for plain, _ in pairs}
    profile = os.path.join(args.work, "hook.profile.yaml")
    best = None
    for us in (float(x) for x in args.grid_us.split(",")):
        with_hook_time(args.profile, us, profile)
        sse, parts = 0.0, []
        for plain, fsdp in pairs:
            measured = float(fsdp["median_s"]) - float(plain["median_s"])
            predicted = simulate(args, fsdp, profile) - plain_step[plain["name"]]
            sse += (predicted - measured) ** 2
            parts.append(f"{fsdp['name']} {measured * 1e3:.2f} / {predicted * 1e3:.2f} ms")
        print(f"{us:7g} us  " + "; ".join(parts) + f"  (measured / simulated FSDP2 - plain)")
        if best is None or sse < best[1]:
            best = (us, sse)
    print(f"least squares: fsdp_hook_host_time {best[0]:g} us")


if __name__ == "__main__":
    main()
