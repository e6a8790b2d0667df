#!/usr/bin/env python3
"""Compares a dsc-run --dump-layers directory and --logits-out file with a golden case.

usage: compare_golden.py GOLDEN.safetensors DUMP_DIR LOGITS.npy [PREFILL_LEN]
Prints per-block relative errors (forced boundaries), top-k / candidate set
mismatches outside the listed tie rows, Engram hash id equality, cache
equality after prefill, and logits errors. Needs numpy (the device image and
Debian's python3-numpy have it). A developer tool; CI gates live in GoogleTest.
"""
import json, os, struct, sys
import numpy as np

def load(path):
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for k, v in header.items():
            if k == '__metadata__':
                continue
            f.seek(base + v['data_offsets'][0])
            raw = f.read(v['data_offsets'][1] - v['data_offsets'][0])
            dt = {'BF16': np.uint16, 'F32': np.float32, 'I32': np.int32, 'I64': np.int64, 'U8': np.uint8}[v['dtype']]
            a = np.frombuffer(raw, dtype=dt).reshape(v['shape'])
            if v['dtype'] == 'BF16':
                a = (a.astype(np.uint32) << 16).view(np.float32)
            out[k] = a
        return out

golden = load(sys.argv[1]); dump = sys.argv[2]
worst = 0.0
ok = True
phases = ['prefill'] + sorted({k.split('.')[0] for k in golden if k.startswith('decode')}, key=lambda p: int(p[6:]))
for phase in phases:
    layers = sorted({int(k.split('.')[2]) for k in golden if k.startswith(phase + '.layers.') and k.endswith('.out')})
    errs = []
    for L in layers:
        p = os.path.join(dump, f'{phase}.layers.{L}.out.npy')
        if not os.path.exists(p):
            errs.append('missing'); ok = False; continue
        a = np.load(p); b = golden[f'{phase}.layers.{L}.out']
        e = np.linalg.norm(a - b) / np.linalg.norm(b)
        worst = max(worst, e); errs.append(f'{e:.1e}')
        for kind in ('topk_idxs', 'candidates'):
            key = f'{phase}.layers.{L}.{kind}'
            p = os.path.join(dump, key + '.npy')
            if key in golden and os.path.exists(p):
                mine = np.load(p); gold = golden[key]
                ties = set(golden.get(f'{phase}.layers.{L}.topk_ties', np.array([], dtype=np.int32)).tolist())
                bad = []
                for r in range(gold.shape[0]):
                    if r in ties: continue
                    if kind == 'topk_idxs':
                        if set(mine[r][mine[r] >= 0].tolist()) != set(gold[r][gold[r] >= 0].tolist()): bad.append(r)
                    else:
                        if not np.array_equal(mine[r][:gold.shape[1]], gold[r]): bad.append(r)
                if bad:
                    ok = False; print(f'  {key}: {len(bad)} rows differ (first {bad[:5]})')
    print(f'{phase}: max block err {max([float(x) for x in errs if x != "missing"] or [0]):.2e}  per layer ' + ' '.join(errs))
    key = f'{phase}.engram_hash_ids'
    p = os.path.join(dump, key + '.npy')
    if key in golden and os.path.exists(p) and not np.array_equal(np.load(p), golden[key]):
        ok = False; print(f'  {key}: differ')
for key in sorted(k for k in golden if k.startswith('prefill.cache.') and k.split('.')[-1] in ('window_kv', 'compress_kv', 'index_k')):
    p = os.path.join(dump, key + '.npy')
    if not os.path.exists(p):
        print(f'  {key}: not dumped'); ok = False; continue
    a = np.load(p); b = golden[key]
    if a.shape != b.shape or not np.array_equal(a, b):
        ok = False; print(f'  {key}: differs (shapes {a.shape} vs {b.shape}, max abs {np.abs(a - b).max() if a.shape == b.shape else "-"})')
logits = np.load(sys.argv[3])
ref = [golden['prefill.logits']] + [golden[f'{p}.logits'] for p in phases[1:]]
for i, r in enumerate(ref):
    e = np.linalg.norm(logits[i] - r) / np.linalg.norm(r)
    same = int(np.argmax(logits[i])) == int(np.argmax(r))
    print(f'logits[{i}]: rel err {e:.2e} argmax {"same" if same else "DIFFERENT"}')
p = os.path.join(dump, 'prefill.logits_all.npy')
if os.path.exists(p):
    a = np.load(p); b = golden['prefill.logits_all']
    print(f'prefill.logits_all: rel err {np.linalg.norm(a - b) / np.linalg.norm(b):.2e}')
print('worst block error %.2e; sets/caches/hashes %s' % (worst, 'OK' if ok else 'MISMATCH'))
