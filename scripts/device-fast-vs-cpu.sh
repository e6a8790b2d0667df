#!/usr/bin/env bash
# The fast CUDA kernels against the CPU reference backend at odd shapes
# (models/synthetic/odd-4.json: vocab 1000, dim 224, 6 heads x 96, 7 experts
# top-3, inter 96: row counts that are not multiples of the 16-row tiles),
# end to end with synthetic weights: dsc-bench --logits-out on the CPU, on
# CUDA with the fast kernels and with --cuda-kernels cpu-order, for decode
# (1 row per step) and for 4-row steps (--decode-rows 4, Session::extend).
# Prints each CUDA run's worst per-row relative logits error against the CPU
# and how many rows keep the CPU's argmax. Random-weight models amplify
# last-bit differences layer by layer (golden/README.md), so these are
# measurements; the gates are the golden runs (scripts/device-golden.sh).
# usage: scripts/device-fast-vs-cpu.sh CARRY OUTDIR
# CARRY holds bin/dsc-bench and odd-4.dscp, odd-4-full.dscp (compiled here:
#   dsc-compile models/synthetic/odd-4.json -o CARRY/odd-4.dscp
#   dsc-compile models/synthetic/odd-4.json --ced=full -o CARRY/odd-4-full.dscp).
set -u
C=$1; OUT=$2
"$(dirname "$0")/device-unpack.sh" $C
B="$C/bin/dsc-bench --synthetic-weights 7 --prefill-len 100 --decode-steps 8 --warmup 0"
run() { # NAME PLAN ARGS...
  local name=$1 plan=$2; shift 2
  $B $C/$plan "$@" --logits-out /tmp/fvc-$name.npy > $OUT/fvc-$name.json 2> $OUT/fvc-$name.err ||
    { echo "$name: dsc-bench failed"; tail -2 $OUT/fvc-$name.err; }
}
run cpu odd-4.dscp --backend cpu
run fast odd-4.dscp --backend cuda
run cpuorder odd-4.dscp --backend cuda --cuda-kernels cpu-order
run cpu-rows odd-4-full.dscp --backend cpu --decode-rows 4
run fast-rows odd-4-full.dscp --backend cuda --decode-rows 4
python3 - <<'PY'
import numpy as np
def cmp(ref, got):
    a, b = np.load(f'/tmp/fvc-{ref}.npy'), np.load(f'/tmp/fvc-{got}.npy')
    rel = np.linalg.norm(a - b, axis=1) / np.linalg.norm(a, axis=1)
    same = int((a.argmax(1) == b.argmax(1)).sum())
    print(f'{got} vs {ref}: rows {a.shape[0]}, worst row rel err {rel.max():.3e}, first row {rel[0]:.3e}, argmax same {same}/{a.shape[0]}')
for ref, got in [('cpu', 'fast'), ('cpu', 'cpuorder'), ('cpu-rows', 'fast-rows')]:
    try: cmp(ref, got)
    except Exception as e: print(got, 'vs', ref, ': not compared:', e)
PY
