#!/usr/bin/env bash
# `placer generate hf`: dense and MoE graphs from a Hugging Face config.json, the parameter
# counts of the shipped MoE configs, and one error line (file and key) on bad configs.
# Usage: generate_hf.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
hf=$src/datasets/models/hf

. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"

# A dense graph, written, with the config's parameter count (8,030,261,248 x 2 bytes).
out=$("$placer" generate hf "$hf/llama3_8b.config.json" --seq-len 256 -o "$tmp/l.graph.json" 2>&1)
check llama3-graph grep -q "llama3_8b, .* params 15.0 GiB" <<<"$out"
check llama3-info grep -q "^parameters   15.0 GiB" <("$placer" info "$tmp/l.graph.json" 2>&1)

# The issue's spelling, and the hub layout naming the graph after its folder.
mkdir -p "$tmp/Mistral-7B-v0.1"
cp "$hf/mistral_7b_v0.1.config.json" "$tmp/Mistral-7B-v0.1/config.json"
out=$("$placer" generate hf --hf-config "$tmp/Mistral-7B-v0.1/config.json" --seq-len 128 \
  -o "$tmp/m.graph.json" 2>&1)
check hub-folder-name grep -q ": Mistral-7B-v0.1, " <<<"$out"

# MoE graphs: Mixtral's 46,702,792,704 parameters (x 2 bytes), DeepSeek-V3's MLA and experts.
out=$("$placer" generate hf "$hf/mixtral_8x7b.config.json" --seq-len 64 -o "$tmp/x.graph.json" 2>&1)
check mixtral-graph grep -q "mixtral_8x7b, .* params 87.0 GiB" <<<"$out"
out=$("$placer" generate hf "$hf/deepseek_v3.config.json" --seq-len 64 --capacity-factor 1.25 \
  -o "$tmp/d.graph.json" 2>&1)
check deepseek-graph grep -q "deepseek_v3, .* params 1.22 TiB" <<<"$out"

# Parameter counts without a graph.
out=$("$placer" generate hf "$hf/mixtral_8x7b.config.json" --params-only 2>&1)
check mixtral-total grep -qE "total +46702792704 +\(46.70 B\)" <<<"$out"
check mixtral-active grep -qE "active per token +12879925248 +\(12.88 B\)" <<<"$out"
out=$("$placer" generate hf "$hf/deepseek_v3.config.json" --params-only 2>&1)
check deepseek-total grep -qE "total +671026419200" <<<"$out"
check deepseek-active grep -qE "active without the embedding +36625618432 +\(36.63 B\)" <<<"$out"

# Named errors: one line, nothing written.
refuse dense-capacity "placer: error: $hf/llama3_8b.config.json: capacity_factor 1.5 needs an MoE model" \
  -- generate hf "$hf/llama3_8b.config.json" --capacity-factor 1.5 -o "$tmp/out/x.graph.json"
sed 's/"model_type": "llama"/"model_type": "gpt_neox"/' "$hf/llama3_8b.config.json" > "$tmp/neox.json"
expect unknown-type "neox.json: model_type: unknown model type 'gpt_neox'" -- generate hf "$tmp/neox.json" --params-only
sed 's/"use_cache": true,/"use_cache": true, "use_parallel_residual": true,/' "$hf/llama3_8b.config.json" > "$tmp/extra.json"
expect unknown-key "extra.json: use_parallel_residual: unknown key" -- generate hf "$tmp/extra.json" --params-only
expect no-output "--output is required" -- generate hf "$hf/llama3_8b.config.json"
expect missing-file "does/not/exist.json" -- generate hf does/not/exist.json --params-only

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
