#!/usr/bin/env bash
# The split-KV sparse attention (CudaOptions::attention Split, and with the
# MQA logits/PV kernels: Mqa) must give the same logits bytes as
# the single walk (docs/cuda-kernels-attention.md): runs dsc-bench on a plan
# with synthetic weights the three ways, compares the logits
# of the timed sequence (prefill's last row and every decode step) with cmp
# and prints the timings. The tensor-core kernels (TensorCore, the default)
# are not byte-identical (another logits sum order): for them it prints the
# largest logit difference from the single walk, relative to the largest
# logit, and how many rows keep the walk's argmax (informational).
# Needs a GPU (the device tool; docs/device.md).
# usage: scripts/device-split-attention.sh CARRY PLAN OUTDIR [PREFILL_LEN]
# CARRY holds bin/dsc-bench; PLAN a plan path (e.g. CARRY/rw6.dscp).
set -u
C=$1; PLAN=$2; OUT=$3; P=${4:-512}
run() { # MODE
  $C/bin/dsc-bench $PLAN --backend cuda --synthetic-weights 1 --prefill-len $P --decode-steps 16 \
    --warmup 1 --cuda-attention $1 --logits-out /tmp/split-$1.npy --json $OUT/split-attention-$1.json \
    > $OUT/split-attention-$1.txt 2>&1 || { echo "dsc-bench --cuda-attention $1 failed"; tail -3 $OUT/split-attention-$1.txt; rm -f /tmp/split-$1.npy; return 1; }
  python3 -c "import json; d = json.load(open('$OUT/split-attention-$1.json')); print('$1: decode', d['decode']['mean_ms'], 'ms/step')"
}
fail=0
run single || exit 1
for m in split mqa; do # each compared on its own: a failed run does not hide the other
  run $m || { fail=1; continue; }
  cmp /tmp/split-single.npy /tmp/split-$m.npy && echo "$m == single (logits bytes): PASS" || { echo "$m != single: FAIL"; fail=1; }
done
if run tc; then
  python3 "$(dirname "$0")/logits_diff.py" /tmp/split-single.npy /tmp/split-tc.npy "tc vs single"
else fail=1; fi
exit $fail
