#!/usr/bin/env bash
# The profile shipped for a cluster's GPU is the default of simulate / place / calibrate
# check: stderr names it, --profile overrides it (and then nothing is said), the result
# equals passing the shipped file by hand, and a GPU without one keeps the built-in default.
# Usage: shipped_profile.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"
clusters=$src/datasets/clusters

"$placer" generate gpt --layers 2 --hidden 1024 --heads 16 --seq-len 1024 --batch 16 --tp 2 \
  --training-step -o "$tmp/gpt.graph.json" > /dev/null 2>&1
sim() { "$placer" simulate --graph "$tmp/gpt.graph.json" --plan "$src/examples/gpt_tp2_pp2_dp2.plan.yaml" "$@"; }

sim --cluster "$clusters/h100_sxm_1node.cluster.yaml" > "$tmp/auto.txt" 2> "$tmp/auto.err"
check names-shipped grep -q "placer: profile .*/h100_sxm_ib400.profile.yaml (shipped for H100-SXM5-80GB; --profile overrides)" "$tmp/auto.err"
sim --cluster "$clusters/h100_sxm_1node.cluster.yaml" --profile "$clusters/h100_sxm_ib400.profile.yaml" \
  > "$tmp/given.txt" 2> "$tmp/given.err"
check given-silent test "$(grep -c 'placer: profile' "$tmp/given.err")" = 0
check same-step-time test "$(grep '^step time' "$tmp/auto.txt")" = "$(grep '^step time' "$tmp/given.txt")"
sim --cluster "$clusters/h100_sxm_1node.cluster.yaml" --profile "$clusters/default.profile.yaml" > "$tmp/def.txt" 2>&1
check override-changes-result test "$(grep '^step time' "$tmp/auto.txt")" != "$(grep '^step time' "$tmp/def.txt")"

sim --cluster "$clusters/b200_4node_ib200.cluster.yaml" > /dev/null 2> "$tmp/b200.err"
check fabric-picks-ib200 grep -q "b200_ib200.profile.yaml (shipped for B200-SXM-180GB" "$tmp/b200.err"
sim --cluster "$clusters/gb200_nvl72_4rack.cluster.yaml" > /dev/null 2> "$tmp/gb200.err"
check gb200-picks-nvl72 grep -q "gb200_nvl72.profile.yaml (shipped for GB200;" "$tmp/gb200.err"
sim --cluster "$clusters/b300_32node_ib800.cluster.yaml" > /dev/null 2> "$tmp/b300.err"
check b300-picks-ib800 grep -q "b300_ib800.profile.yaml (shipped for B300-SXM-288GB;" "$tmp/b300.err"
check report-names-shipped grep -q "^profile      .*/h100_sxm_ib400.profile.yaml$" "$tmp/auto.txt"
sim --cluster "$clusters/dgx1_p100.cluster.yaml" > "$tmp/p100.txt" 2> "$tmp/p100.err"
check no-profile-for-p100 test "$(grep -c 'placer: profile' "$tmp/p100.err")" = 0
check report-says-default grep -q "^profile      built-in default$" "$tmp/p100.txt"

"$placer" place --graph "$tmp/gpt.graph.json" --cluster "$clusters/a100_40gb_1node.cluster.yaml" \
  --method single -o "$tmp/p.plan.yaml" > /dev/null 2> "$tmp/place.err"
check place-names-shipped grep -q "dgx_a100.profile.yaml (shipped for A100-SXM4-40GB" "$tmp/place.err"
check place-config-records-it grep -q "^profile: .*dgx_a100.profile.yaml" "$tmp/p.place.yaml"

"$placer" calibrate check --cluster "$clusters/h100_sxm_1node.cluster.yaml" \
  --measurements "$src/datasets/measurements/nccl_published_h100.csv" > "$tmp/chk.txt" 2> "$tmp/chk.err"
check check-without-profile grep -q "h100_sxm_ib400.profile.yaml" "$tmp/chk.err"
check check-prints-rows grep -q "all rows" "$tmp/chk.txt"

echo "$n checks, $fail failed"; [ $fail = 0 ]
