#!/usr/bin/env python3
"""How far two logits files (dsc-bench/dsc-run --logits-out, .npy) differ, row by row.

  python3 scripts/logits_diff.py A.npy B.npy LABEL [--rows]

Prints one line: the largest |a - b| over the largest |a| and how many rows keep a's argmax; with
--rows also each row's difference (a star where the argmax moves). Used by
scripts/device-logits-diff.sh and scripts/device-split-attention.sh (informational comparisons of
kernels that are not byte-identical; the byte-identical ones are compared with cmp).
"""
import sys

import numpy as np


def main() -> int:
    a, b = (np.load(f).astype(np.float64) for f in sys.argv[1:3])
    a, b = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    scale = np.abs(a).max()
    agree = int((a.argmax(-1) == b.argmax(-1)).sum())
    print('%s: max |logit diff| / max |logit| = %.3e, argmax kept in %d of %d rows' %
          (sys.argv[3], np.abs(a - b).max() / scale, agree, len(a)))
    if '--rows' in sys.argv[4:]:
        print('  per row (* = argmax differs): ' + ' '.join(
            '%d:%.2e%s' % (i, np.abs(a[i] - b[i]).max() / scale,
                           '' if a[i].argmax() == b[i].argmax() else '*') for i in range(len(a))))
    return 0


if __name__ == '__main__':
    sys.exit(main())
