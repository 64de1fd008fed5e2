#!/usr/bin/env bash
# `placer generate routing`: a routing file of each family that reads back, a corpus split,
# and one error line (flag or file and field) on bad options and bad files.
# Usage: generate_routing.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; data=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0

. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"

for f in zipf correlated drifting hot-moving lognormal; do
  out=$("$placer" generate routing --family $f --layers 3 --experts 16 --steps 4 \
    -o "$tmp/$f.routing.json" 2>&1)
  check "$f-written" grep -q "$f, 3 layers x 16 experts, top 2, 4 steps" <<<"$out"
  check "$f-format" grep -q '"format": "placer-routing"' "$tmp/$f.routing.json"
done
# Same seed, same file.
"$placer" generate routing --family zipf --layers 3 --experts 16 --steps 4 -o "$tmp/again.json" > /dev/null
check same-seed-same-file cmp -s "$tmp/zipf.routing.json" "$tmp/again.json"

out=$("$placer" generate routing --split unseen --count 4 --experts 16 -o "$tmp/unseen" 2>&1)
check split-written grep -q "4 routing files of the unseen split" <<<"$out"
check split-files test "$(ls "$tmp/unseen" | grep -cE '^(hot-moving|lognormal)-')" -eq 4

refuse bad-family "placer: error: routing: unknown family 'pareto' (zipf, correlated, drifting, hot-moving, lognormal)" \
  -- generate routing --family pareto -o "$tmp/out/r.json"
refuse bad-top-k "placer: error: routing: --top-k must be in [1, min(experts, 64)]" \
  -- generate routing --experts 4 --top-k 5 -o "$tmp/out/r.json"
refuse bad-split "placer: error: --split: unknown split 'dev' (use train, validation, test or unseen)" \
  -- generate routing --split dev -o "$tmp/out/c"

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
