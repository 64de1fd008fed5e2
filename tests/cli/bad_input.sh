#!/usr/bin/env bash
# Bad input to `placer simulate` gives one clear line naming the file (and field), a
# non-zero exit, and never a crash. Usage: bad_input.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2; data=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0

graph=$data/mlp2.graph.json
cluster=$data/two_gpus.cluster.yaml
cat > "$tmp/ok.plan.yaml" <<'Y'
format_version: "1.0"
placement: {default: 0}
Y

. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"

sim() { echo simulate --graph "$1" --cluster "$2" --plan "$3"; }

# Missing files.
expect missing-graph "does/not/exist.graph.json" -- $(sim does/not/exist.graph.json "$cluster" "$tmp/ok.plan.yaml")

# Malformed YAML (cluster) and JSON (graph).
printf 'format_version: "1.0"\nname: [unclosed\n' > "$tmp/malformed.cluster.yaml"
expect malformed-yaml "malformed.cluster.yaml" -- $(sim "$graph" "$tmp/malformed.cluster.yaml" "$tmp/ok.plan.yaml")
expect truncated-json "truncated.graph.json" -- $(sim "$data/bad/truncated.graph.json" "$cluster" "$tmp/ok.plan.yaml")

# Wrong format_version (graph, cluster, plan).
expect graph-version "wrong_version.graph.json" "format_version" -- $(sim "$data/bad/wrong_version.graph.json" "$cluster" "$tmp/ok.plan.yaml")
sed 's/format_version: "1.0"/format_version: "2.0"/' "$cluster" > "$tmp/v2.cluster.yaml"
expect cluster-version "v2.cluster.yaml" "format_version" -- $(sim "$graph" "$tmp/v2.cluster.yaml" "$tmp/ok.plan.yaml")
printf 'format_version: "7.1"\nplacement: {default: 0}\n' > "$tmp/v7.plan.yaml"
expect plan-version "v7.plan.yaml" "format_version" -- $(sim "$graph" "$cluster" "$tmp/v7.plan.yaml")

# Cyclic graph.
expect cyclic-graph "cyclic.graph.json" "cycle" -- $(sim "$data/bad/cyclic.graph.json" "$cluster" "$tmp/ok.plan.yaml")

# Plan that does not match the graph / cluster.
printf 'format_version: "1.0"\nplacement:\n  default: 0\n  ops: {no_such_op: 1}\n' > "$tmp/unknown_op.plan.yaml"
expect plan-unknown-op "unknown_op.plan.yaml" "no_such_op" -- $(sim "$graph" "$cluster" "$tmp/unknown_op.plan.yaml")
printf 'format_version: "1.0"\nplacement: {default: 5}\n' > "$tmp/bad_device.plan.yaml"
expect plan-device-range "bad_device.plan.yaml" "5" -- $(sim "$graph" "$cluster" "$tmp/bad_device.plan.yaml")

# Zero-bandwidth link.
sed 's/bandwidth: 10 GB\/s/bandwidth: 0/' "$cluster" > "$tmp/zero_bw.cluster.yaml"
expect zero-bandwidth "zero_bw.cluster.yaml" "bandwidth" -- $(sim "$graph" "$tmp/zero_bw.cluster.yaml" "$tmp/ok.plan.yaml")

# Unknown subcommand / missing required option: CLI11's message and a non-zero exit.
expect unknown-subcommand "frobnicate" -- frobnicate
expect missing-option "--plan" -- simulate --graph "$graph" --cluster "$cluster"

expect unknown-option "--bogus" -- simulate --graph "$graph" --cluster "$cluster" --plan "$tmp/ok.plan.yaml" --bogus

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
