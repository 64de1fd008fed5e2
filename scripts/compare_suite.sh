#!/usr/bin/env bash
# Runs `placer compare` on every shipped real model (datasets/models/*.graph.json) on one
# cluster and prints one Markdown table: speed-up over one device per method (OOM marked),
# and the best method per model. Usage:
#   bash scripts/compare_suite.sh [CLUSTER] [PLACER]     (defaults: dgx1_p100, build/placer)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cluster=${1:-datasets/clusters/dgx1_p100.cluster.yaml}
placer=${2:-build/placer}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
first=1
for g in datasets/models/*.graph.json; do
  name=$(basename "$g" .graph.json)
  echo "compare: $name" >&2
  "$placer" compare --graph "$g" --cluster "$cluster" --csv 2>/dev/null > "$tmp/$name.csv"
done
python3 - "$tmp" "$cluster" <<'PY'
import csv, glob, os, sys
tmp, cluster = sys.argv[1], sys.argv[2]
rows = {}
methods = []
for path in sorted(glob.glob(os.path.join(tmp, "*.csv"))):
    name = os.path.basename(path)[:-4]
    with open(path) as f:
        r = list(csv.DictReader(f))
    rows[name] = r
    for x in r:
        if x["method"] not in methods:
            methods.append(x["method"])
print(f"Speed-up over one device ({os.path.basename(cluster)}); '!' = out of memory, 'err' = method failed\n")
print("| model | " + " | ".join(methods) + " | best |")
print("|---" * (len(methods) + 2) + "|")
for name, r in rows.items():
    by = {x["method"]: x for x in r}
    cells, best, best_v = [], "", 0.0
    for m in methods:
        x = by.get(m)
        if x is None or x.get("error"):
            cells.append("err"); continue
        v = float(x["speedup"])
        oom = x["oom"] in ("1", "true", "yes")
        cells.append(f"{v:.2f}" + ("!" if oom else ""))
        if not oom and v > best_v:
            best, best_v = m, v
    print(f"| {name} | " + " | ".join(cells) + f" | {best} {best_v:.2f}x |")
PY
