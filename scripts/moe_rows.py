# Run in datasets/measurements/modern. Builds moe_<gpu>.csv from the megatron-bridge_*_<gpu>.csv files: the GPT-OSS 120B,
# DeepSeek-V3 and Kimi-K2 rows (Qwen3 rows never copied), with the shape columns appended.
import glob, re, sys
NEW = ['head_dim','sliding_window','full_attention_every','q_lora_rank','kv_lora_rank',
       'qk_rope_head_dim','v_head_dim','dense_layers','mtp_layers','moe_dispatcher','cuda_graph',
       'linear_bias','glu_clamp','moe_a2a_overlap']
def model_of(r, comment):
    m = re.search(r'model "([^"]*)"', comment).group(1)
    if m.startswith('GPT OSS'): return 'gptoss', m
    if m.startswith('DeepSeekV3'): return 'dsv3', m
    if m.startswith('Kimi'): return 'kimi', m
    return None, m
def shape(kind, comment, precision):
    if kind == 'gptoss':
        return [64,128,2,0,0,0,0,0,0]
    mla = [128,0,0,1536,512,64,128]
    if kind == 'dsv3': return mla + [3, 0 if 'w/o MTP' in comment else 1]
    return mla + [1, 0]
def dispatcher(kind, gpu, r):
    # The recipes' moe_flex_dispatcher_backend (README.md, "Token dispatcher").
    ep, fp8 = int(r['ep']), r['precision'] == 'fp8'
    if kind == 'dsv3': return 'deepep' if gpu == 'b200' and ep == 32 else 'hybridep'
    if kind == 'kimi': return 'hybridep' if gpu in ('gb200', 'gb300') else 'alltoall'
    if gpu == 'b300' and ep == 8: return 'hybridep'
    if gpu in ('gb200', 'gb300') and fp8 and r['global_batch'] == '1280': return 'hybridep'
    return 'alltoall'
def expert_mlp(kind):
    # GPT-OSS's biased linears and GLU clamp (README.md, "Expert MLP of GPT-OSS").
    return [1, 7] if kind == 'gptoss' else [0, 0]
def cuda_graph(kind, gpu, r):
    # The presets with cuda_graph_impl="full_iteration" (README.md, "CUDA graphs").
    mx = r['precision_variant'] == 'MXFP8'
    if kind == 'gptoss' and mx and gpu in ('gb200', 'gb300'): return 'full_iteration'
    if kind == 'dsv3' and mx and gpu in ('gb200', 'b300', 'gb300') and r['micro_batch'] == '1':
        return 'full_iteration'
    return 'none'
# The presets with moe_a2a_overlap=True (README.md, "All-to-all overlap"): (model, gpu) ->
# (precision variants or None for any, micro_batch, pp, virtual_stages, ep, global_batch or None).
A2A_OVERLAP = {
    ('dsv3', 'gb300'): (['MXFP8'], 1, 2, 8, 32, None),
    ('dsv3', 'gb200'): (['MXFP8'], 1, 4, 4, 64, None),
    ('dsv3', 'b300'): (['MXFP8'], 1, 8, 2, 8, None),
    ('dsv3', 'b200'): (['MXFP8'], 1, 8, 2, 32, None),
    ('kimi', 'gb300'): (['MXFP8'], 1, 4, 4, 64, None),
    ('gptoss', 'gb200'): (None, 4, 1, 1, 64, 1280),
    ('gptoss', 'gb300'): (['MXFP8'], 4, 1, 1, 16, 1280),
    ('gptoss', 'b300'): (['MXFP8'], 4, 1, 1, 8, 1280),
}
def a2a_overlap(kind, gpu, r):
    p = A2A_OVERLAP.get((kind, gpu))
    if p is None: return 0
    variants, mbs, pp, vp, ep, gbs = p
    got = (int(r['micro_batch']), int(r['pp']), int(r['virtual_stages']), int(r['ep']))
    return int((variants is None or r['precision_variant'] in variants) and got == (mbs, pp, vp, ep)
               and (gbs is None or int(r['global_batch']) == gbs))
for gpu in ['h100','b200','b300','gb200','gb300']:
    out=[]; hdr=None
    for f in sorted(glob.glob(f'megatron-bridge_*_{gpu}.csv')):
        lines=open(f).read().splitlines(); h=None
        notes=[l for l in lines if re.match(r'# \S+ line \d+ \|', l)]
        for l in lines:
            if l.startswith('#'): continue
            if h is None: h=l; continue
            r=dict(zip(h.split(','), l.split(',')))
            tps=int(r['global_batch'])*int(r['seq_len'])/(float(r['iteration_ms'])/1000*int(r['gpus']))
            m=[n for n in notes if abs(float(re.search(r'tokens/s/GPU=([0-9.]+)',n).group(1))-tps)<0.01
               and f'precision "{r["precision_variant"]}' in n]
            assert len(m)==1, (f, l, m)
            prev=m[0]
            kind, name = model_of(None, prev)
            if kind is None: continue
            assert hdr in (None, h); hdr=h
            out.append(f'# from {f}:'); out.append(prev)
            fields=l.split(','); cols=h.split(',')
            assert fields[cols.index('recompute')]==''
            fields[cols.index('recompute')]='none'
            if kind == 'gptoss':
                # The fused sink attention of the containers' cuDNN, with the provider's window.
                fields[cols.index('attention')]='flash'
            extra = (shape(kind, prev, r['precision']) + [dispatcher(kind, gpu, r), cuda_graph(kind, gpu, r)]
                     + expert_mlp(kind) + [a2a_overlap(kind, gpu, r)])
            out.append(','.join(fields) + ',' + ','.join(str(v) for v in extra))
    if not out: continue
    head = [f'# MoE rows (GPT-OSS 120B, DeepSeek-V3, Kimi-K2; cp 1) of the DGX-{gpu.upper()} files in this folder, copied',
            '# verbatim, each after the line of its file that names its source, with the attention / layer-stack',
            '# columns, the token dispatcher, the CUDA graph scope, the expert MLP and the expert all-to-all',
            '# overlap appended, recompute set to none and GPT-OSS rows on flash attention (values and sources',
            '# in README.md, "MoE shape columns", "Token dispatcher", "CUDA graphs", "Expert MLP of GPT-OSS",',
            '# "All-to-all overlap").',
            '# Qwen3 rows are not copied.',
            hdr + ',' + ','.join(NEW)]
    open(f'moe_{gpu}.csv','w').write('\n'.join(head+out)+'\n')
    print(gpu, len(out)//3)
