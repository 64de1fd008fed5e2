#!/usr/bin/env bash
# `placer place --method eplb|round-robin|expert-anneal|expert-rl --routing FILE`: expert maps of a tiny
# Mixtral-shaped model over 2 nodes x 8 H100, the map written as JSON, and one error line
# when the routing is missing or does not fit the graph, or an option the method does not use is
# given.
# Usage: place_experts.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0

. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"

cat > "$tmp/tiny.config.json" <<'JSON'
{"model_type": "mixtral", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
 "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "num_local_experts": 8,
 "num_experts_per_tok": 2}
JSON
"$placer" generate hf "$tmp/tiny.config.json" --seq-len 64 --batch 16 -o "$tmp/tiny.graph.json" > /dev/null
"$placer" generate routing --layers 2 --experts 8 --skew 1.4 -o "$tmp/r.routing.json" > /dev/null
"$placer" generate routing --layers 3 --experts 8 -o "$tmp/three.routing.json" > /dev/null
problem=(--graph "$tmp/tiny.graph.json" --cluster "$src/datasets/clusters/h100_ib_4node.cluster.yaml"
  --devices 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15)

step_of() { sed -n 's/^step time *//p' "$1"; }
for m in round-robin eplb expert-anneal expert-rl; do
  check "$m-places" "$placer" place "${problem[@]}" --routing "$tmp/r.routing.json" --method $m \
    --set redundant=8 --set "map=$tmp/$m.expert_map.json" --budget-evals 40 --seed 3 \
    -o "$tmp/$m.plan.json" > "$tmp/$m.txt" 2>&1
  check "$m-map" grep -q '"format": "placer-expert-map"' "$tmp/$m.expert_map.json"
done
check step-printed test -n "$(step_of "$tmp/eplb.txt")"
check rl-finetunes "$placer" place "${problem[@]}" --routing "$tmp/r.routing.json" --method expert-rl \
  --set redundant=8 --set finetune=2 --set samples=2 -o "$tmp/rl2.plan.json"
expect missing-policy "$tmp/none.pt: cannot open the policy file" \
  -- place "${problem[@]}" --routing "$tmp/r.routing.json" --method expert-rl --set redundant=8 \
  --set "policy=$tmp/none.pt" -o "$tmp/p.plan.json"

refuse no-routing "placer: error: eplb: needs the routing statistics of the MoE layers (--routing FILE, docs/formats/routing.md)" \
  -- place "${problem[@]}" --method eplb -o "$tmp/out/p.plan.json"
expect wrong-layers "eplb: the routing statistics have 3 MoE layers, the graph 2" \
  -- place "${problem[@]}" --routing "$tmp/three.routing.json" --method eplb --set redundant=8 -o "$tmp/p.plan.json"
expect unused-option "placer: error: --set policy (eplb): eplb does not use it (read by expert-rl)" \
  -- place "${problem[@]}" --routing "$tmp/r.routing.json" --method eplb --set redundant=8 \
  --set "policy=$tmp/none.pt" -o "$tmp/p.plan.json"
expect bad-redundant "experts + redundant (11) must be a multiple of ep (16)" \
  -- place "${problem[@]}" --routing "$tmp/r.routing.json" --method eplb --set redundant=3 -o "$tmp/p.plan.json"

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
