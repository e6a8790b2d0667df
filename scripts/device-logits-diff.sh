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
python3 "$(dirname "$0")/logits_diff.py" /tmp/diff-a.npy /tmp/diff-b.npy "$NAME [$A] vs [$B]" --rows
