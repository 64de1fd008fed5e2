#!/usr/bin/env bash
# `placer train-policy --agent expert-rl` from a configuration: a tiny run that chooses the
# replicas over two shapes writes policy.pt (its sidecar saying so) and config.yaml, which
# reads back as the same configuration and reruns to the same policy file; the shipped
# train.yaml parses; bad keys and shapes give one line naming the file and the key.
# Usage: train_expert_rl.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0; n=0
source "$src/tests/cli/lib/expect.bash"

cat > tiny.train.yaml <<'YAML'
agent: expert-rl
updates: 3
layers_per_update: 2
samples: 2
hidden: 8
choose_replicas: true
validate_every: 2
ranks: [8, 16]
experts: [16]
top_k: [2]
distributions: 1
validation_distributions: 1
YAML
out=$("$placer" train-policy --config tiny.train.yaml -o run1 2>&1); rc=$?
if echo "$out" | grep -q "without LibTorch"; then echo "skipped: built without LibTorch"; exit 0; fi
check trains test $rc -eq 0
check sidecar grep -q '"chooses_replicas": true' run1/policy.pt.meta.json
check config-written grep -q '^ranks: \[8, 16\]' run1/config.yaml
check reruns "$placer" train-policy --config run1/config.yaml -o run2
check same-policy cmp run1/policy.pt run2/policy.pt
check shipped-config "$placer" train-policy --config "$src/models/pretrained/expert_rl.train.yaml" --print-config

printf 'agent: expert-rl\nrank: 3\n' > bad.train.yaml
expect bad-key "bad.train.yaml: unknown key 'rank'" "did you mean 'ranks'" \
  -- train-policy --config bad.train.yaml -o r
expect bad-set "--set: unknown key 'rank'" -- train-policy --config tiny.train.yaml --set rank=3 -o r
expect bad-shape "--set: experts: 12 experts do not fill 8 ranks evenly" \
  -- train-policy --config tiny.train.yaml --set experts=[12] -o r
expect not-applicable "--eval-every does not apply to --agent expert-rl" \
  -- train-policy --config tiny.train.yaml --eval-every 5 -o r

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
