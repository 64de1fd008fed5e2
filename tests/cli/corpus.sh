#!/usr/bin/env bash
# `placer corpus`: generate (files and manifest-only, append, determinism), add, stats on
# the generated and the shipped default corpus, a generated graph simulates, and bad input
# gives one clear line naming the file / field with a non-zero exit.
# Usage: corpus.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2; data=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0

ok() { n=$((n + 1)); echo "ok   $1"; }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL $1"; }
# check NAME COMMAND...: the command must succeed.
check() { local name=$1; shift; if "$@" > "$tmp/out.txt" 2> "$tmp/err.txt"; then ok "$name"; else bad "$name: $(cat "$tmp/err.txt")"; fi; }
# has NAME FILE STRING: FILE contains STRING.
has() { if grep -qF -- "$3" "$2"; then ok "$1"; else bad "$1: '$3' not in $(cat "$2")"; fi; }
# expect_error NAME NEEDLE... -- ARGS: non-zero exit (no crash) with every needle in the output.
expect_error() {
  local name=$1; shift
  local needles=()
  while [ "$1" != "--" ]; do needles+=("$1"); shift; done; shift
  out=$("$placer" "$@" 2>&1); rc=$?
  if [ $rc -eq 0 ]; then bad "$name: exit 0"; return; fi
  if [ $rc -ge 128 ]; then bad "$name: crashed (exit $rc): $out"; return; fi
  for s in "${needles[@]}"; do
    if ! echo "$out" | grep -qF -- "$s"; then bad "$name: message lacks '$s': $out"; return; fi
  done
  ok "$name: $(echo "$out" | tail -n 1)"
}

# Generate with files.
check generate "$placer" corpus generate --family gnmt,wavenet --count 4 --seed 3 -o "$tmp/c1"
has generate-summary "$tmp/out.txt" "c1.corpus.yaml: 4 graphs (files under graphs/"
has generate-progress "$tmp/err.txt" "corpus generate: 4/4 graphs"
[ "$(ls "$tmp/c1/graphs" | wc -l)" -eq 4 ] && ok four-graph-files || bad "four-graph-files: $(ls "$tmp/c1/graphs")"
has manifest-file-entry "$tmp/c1/c1.corpus.yaml" "file: graphs/wavenet_001.graph.json"

# Same seed, same corpus; manifest-only writes generate: entries and no graphs.
check generate-again "$placer" corpus generate --family gnmt,wavenet --count 4 --seed 3 -o "$tmp/c2" --name c1
cmp -s "$tmp/c1/c1.corpus.yaml" "$tmp/c2/c1.corpus.yaml" && ok deterministic || bad "deterministic: manifests differ"
check manifest-only "$placer" corpus generate --family all --count 11 --seed 3 -o "$tmp/m" --manifest-only
[ ! -e "$tmp/m/graphs" ] && ok no-graph-files || bad "no-graph-files"
has generate-entry "$tmp/m/m.corpus.yaml" "generate: {family: layered_random, seed:"

# Append (numbering continues) with a fixed parameter.
check append "$placer" corpus generate --family rnnlm --count 2 --seed 4 -o "$tmp/m" --manifest-only --append --set layers=4
has appended "$tmp/m/m.corpus.yaml" "name: rnnlm_002, generate: {family: rnnlm, seed:"
has appended-override "$tmp/m/m.corpus.yaml" "layers: 4}"

# Add a graph file, then stats over everything.
check add "$placer" corpus add "$tmp/m/m.corpus.yaml" "$data/mlp2.graph.json" --tags real,mlp
has added "$tmp/out.txt" "+ mlp2"
check stats "$placer" corpus stats "$tmp/m/m.corpus.yaml"
has stats-total "$tmp/out.txt" "14 graphs, 12 families"
has stats-split "$tmp/out.txt" "split   train"
has stats-family "$tmp/out.txt" "transformer_xl"
has stats-real "$tmp/out.txt" "real"
has stats-types "$tmp/out.txt" "op types (top 10 of"
check stats-filter "$placer" corpus stats "$tmp/m/m.corpus.yaml" --tag rnnlm
has stats-filtered "$tmp/out.txt" "3 graphs selected of 14"
check stats-default "$placer" corpus stats "$src/datasets/corpora/default.corpus.yaml" --split val
has stats-default-val "$tmp/out.txt" "corpus  default"

# A generated graph is a normal graph file: it simulates (expanded to a training step).
printf 'format_version: "1.0"\nplacement: {default: 0}\n' > "$tmp/one.plan.yaml"
check simulate-generated "$placer" simulate --graph "$tmp/c1/graphs/gnmt_000.graph.json" \
  --cluster "$data/two_gpus.cluster.yaml" --plan "$tmp/one.plan.yaml"
has simulate-step "$tmp/out.txt" "step time"

# Bad input.
expect_error unknown-family "unknown graph family 'nope'" -- corpus generate --family gnmt,nope --count 2 -o "$tmp/x"
[ ! -e "$tmp/x" ] && ok nothing-created-on-error || bad "nothing-created-on-error: $tmp/x exists"
expect_error unknown-param "gnmt: unknown parameter 'layer'" -- corpus generate --family gnmt --count 1 -o "$tmp/x" --set layer=3
expect_error bad-set "--set: expected NAME=VALUE" -- corpus generate --family gnmt --count 1 -o "$tmp/x" --set layers
expect_error bad-split "--split: expected three ratios" -- corpus generate --family gnmt --count 1 -o "$tmp/y" --split 0.5,0.5
expect_error bad-size "--size: expected default or large" -- corpus generate --family gnmt --count 1 -o "$tmp/y" --size huge
sed 's/format_version: "1.0"/format_version: "2.0"/' "$tmp/m/m.corpus.yaml" > "$tmp/v2.corpus.yaml"
expect_error wrong-version "v2.corpus.yaml" "unsupported format_version '2.0'" -- corpus stats "$tmp/v2.corpus.yaml"
sed 's/family: wavenet/family: wavenett/' "$tmp/m/m.corpus.yaml" > "$tmp/m/fam.corpus.yaml"
expect_error manifest-family "fam.corpus.yaml" "generate.family: unknown family 'wavenett'" -- corpus stats "$tmp/m/fam.corpus.yaml"
cp "$tmp/c1/c1.corpus.yaml" "$tmp/c1/moved.corpus.yaml"; rm "$tmp/c1/graphs/gnmt_000.graph.json"
expect_error missing-file "moved.corpus.yaml" "entries[0].file: graph file 'graphs/gnmt_000.graph.json' not found" -- corpus stats "$tmp/c1/moved.corpus.yaml"
sed 's/ops: \([0-9]*\),/ops: 1\1,/' "$tmp/m/m.corpus.yaml" > "$tmp/m/ops.corpus.yaml"  # same folder: file entries are relative to it
expect_error changed-graph "ops.corpus.yaml: entries[0]" "the family generator changed" -- corpus stats "$tmp/m/ops.corpus.yaml"
expect_error stats-missing "no/such.corpus.yaml" -- corpus stats "$tmp/no/such.corpus.yaml"

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
