#!/usr/bin/env bash
# scripts/h200_fused_ops_check.py on the shipped fused_ops.csv and h200 profile: the 16
# compiled rows (4 ops x 2 shapes x 2 passes), each error (predicted - measured) / measured,
# the three summaries; the compiled sets' kernel bytes keep the median within 10% and
# SwiGLU and cross-entropy (the logits read twice forward) within 11%.
# Usage: h200_fused_ops_check.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"

(cd "$src" && python3 scripts/h200_fused_ops_check.py --placer "$placer") > "$tmp/out.txt" 2>&1
check script-runs test $? -eq 0
check sixteen-rows test "$(grep -cE '^(rmsnorm|swiglu|rotary|cross_entropy) ' "$tmp/out.txt")" -eq 16
check summaries grep -q '^fwd: rows 8, median' "$tmp/out.txt"
check figures python3 - "$tmp/out.txt" <<'PY'
import re, sys
rows, median = [], None
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) +(\S+) +(fwd|fwd_bwd) +([\d.]+)ms +([\d.]+)ms +([+-][\d.]+)%", line)
    if m:
        meas, pred, err = float(m[4]), float(m[5]), float(m[6])
        rows.append((m[1], err))
        if abs(100 * (pred - meas) / meas - err) > 0.6:  # printed to 3 decimals of a ms
            sys.exit(f"error of {line.strip()} is not (predicted - measured) / measured")
    m = re.match(r"all: rows 16, median \|error\| ([\d.]+)%", line)
    if m:
        median = float(m[1])
ok = median is not None and median <= 10
ok = ok and all(abs(e) <= 11 for op, e in rows if op in ("swiglu", "cross_entropy"))
sys.exit(0 if ok else f"median {median}, rows {rows}")
PY

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
