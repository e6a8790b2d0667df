#!/usr/bin/env python3
"""Compares two dsc-run --dump-layers directories (e.g. the CUDA and the CPU
backend on the same plan and forcing): per phase and block, the relative error
of the block outputs, and whether top-k sets, candidate masks, Engram hash ids
and caches are identical.

usage: compare_dumps.py DIR_A DIR_B
"""
import os, re, sys
import numpy as np

a_dir, b_dir = sys.argv[1], sys.argv[2]
names = sorted(set(os.listdir(a_dir)) & set(os.listdir(b_dir)))
blocks = {}
diffs = []
for n in names:
    if not n.endswith('.npy') or n == 'logits.npy':
        continue
    a = np.load(os.path.join(a_dir, n)); b = np.load(os.path.join(b_dir, n))
    m = re.match(r'(\w+)\.layers\.(\d+)\.out\.npy', n)
    if m:
        e = float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))
        blocks.setdefault(m.group(1), []).append((int(m.group(2)), e))
        continue
    if n.endswith(('topk_idxs.npy', 'candidates.npy', 'engram_hash_ids.npy')) or '.cache.' in n:
        same = a.shape == b.shape and np.array_equal(a, b)
        if n.endswith('topk_idxs.npy') and a.shape == b.shape:
            same = all(set(x[x >= 0].tolist()) == set(y[y >= 0].tolist()) for x, y in zip(a, b))
        if not same:
            diffs.append(n)
worst = 0.0
for phase in sorted(blocks, key=lambda p: (p != 'prefill', int(p[6:]) if p.startswith('decode') else 0)):
    errs = sorted(blocks[phase])
    mx = max(e for _, e in errs)
    worst = max(worst, mx)
    print(f'{phase}: max block difference {mx:.2e} (layer {max(errs, key=lambda x: x[1])[0]})')
print('differing sets/masks/hashes/caches: ' + (', '.join(diffs[:10]) + (' ...' if len(diffs) > 10 else '') if diffs else 'none'))
print(f'worst block difference {worst:.2e}')
