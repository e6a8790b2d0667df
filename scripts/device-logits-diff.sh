#!/usr/bin/env bash
# How far two kernel choices move the logits of one teacher-forced sequence
# (informational; docs/device.md): runs dsc-bench twice on PLAN with
# synthetic weights, arguments A then B, and prints, per timed row (the
# prefill's last row, then each decode step), the largest logit difference
# relative to the largest logit and whether the argmax agrees; then the
# totals. Two fast families that differ only in summation order (e.g.
# `--cuda-gemv lanes` vs `slots`) show how much a model's logits amplify
# rounding differences: the yardstick for kernels that are not
# byte-identical (the tensor-core attention).
# usage: scripts/device-logits-diff.sh CARRY PLAN OUT NAME "ARGS A" "ARGS B" [PREFILL_LEN] [STEPS]
set -u
C=$1; PLAN=$2; OUT=$3; NAME=$4; A=$5; B=$6; P=${7:-512}; N=${8:-16}
run() { # TAG ARGS
  # shellcheck disable=SC2086
  $C/bin/dsc-bench $PLAN --backend cuda --synthetic-weights 1 --prefill-len $P --decode-steps $N \
    --warmup 1 $2 --logits-out /tmp/diff-$1.npy --json $OUT/$NAME-$1.json > $OUT/$NAME-$1.txt 2>&1 \
    || { echo "$NAME: dsc-bench $2 failed"; tail -3 $OUT/$NAME-$1.txt; return 1; }
}
run a "$A" && run b "$B" || exit 1
python3 - /tmp/diff-a.npy /tmp/diff-b.npy "$NAME" "$A" "$B" <<'PY'
import sys, numpy as np
a, b = (np.load(f).astype(np.float64) for f in sys.argv[1:3])
a, b = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
scale = np.abs(a).max()
rows = []
for i in range(len(a)):
    rows.append('%d:%.2e%s' % (i, np.abs(a[i] - b[i]).max() / scale, '' if a[i].argmax() == b[i].argmax() else '*'))
agree = int((a.argmax(-1) == b.argmax(-1)).sum())
print('%s [%s] vs [%s]: max |diff| / max |logit| = %.3e, argmax kept in %d of %d rows' %
      (sys.argv[3], sys.argv[4], sys.argv[5], np.abs(a - b).max() / scale, agree, len(a)))
print('  per row (* = argmax differs): ' + ' '.join(rows))
PY
