#!/usr/bin/env bash
# The row-lane GEMVs' compile-time knobs on the device, in one call
# (docs/perf.md, session 21): dsc-kernel-bench at the decode shapes, the
# lanes against the rows with DSC_ROW_PREFETCH_STEPS = 0, 2, 4, 8, 16
# (row_gemv.cuh: rolling L2 prefetch D steps ahead) and the MoE down with
# DSC_MOE_ROWS_DOWN_AHEAD=1; then M = 2, 4, 8 rows lanes vs rows.
# Carry: B = a folder with bin/dsc-kernel-bench.
# usage: scripts/device-row-knobs.sh B
set -u
B=$1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
bench() { # label, args...
  local label=$1; shift
  echo "$label $*: $(timeout 90 $B/bin/dsc-kernel-bench "$@" 2>&1 | tail -1 | python3 -c 'import json,sys; t=sys.stdin.read()
try:
  d=json.loads(t); print(d["us_per_call"], "us", d["fraction_of_copy"], "grid", d.get("grid"))
except Exception: print("ERR", t[:300])' 2>&1)"
}
for k in "moe-up --m 1 --n 2304 --k 5120 --topk 6" "moe-down --m 1 --n 2304 --k 5120 --topk 6" \
         "linear-fp8 --m 1 --n 32768 --k 1280" "linear-fp8 --m 1 --n 5120 --k 8192" \
         "linear-fp8 --m 1 --n 1792 --k 5120" "linear-fp4 --m 1 --n 4096 --k 5120"; do
  bench lanes $k --gemv lanes
  for d in 0 2 4 8 16; do bench rows-p$d $k --gemv rows --define DSC_ROW_PREFETCH_STEPS=$d; done
done
for d in 0 4; do
  bench rows-p$d-ahead moe-down --m 1 --n 2304 --k 5120 --topk 6 --gemv rows \
    --define DSC_ROW_PREFETCH_STEPS=$d,DSC_MOE_ROWS_DOWN_AHEAD=1
done
for m in 2 4 8; do
  for g in lanes rows; do bench $g linear-fp8 --m $m --n 32768 --k 1280 --gemv $g; done
done
echo "== second round (noise)"
for k in "moe-up --m 1 --n 2304 --k 5120 --topk 6" "linear-fp8 --m 1 --n 32768 --k 1280"; do
  bench lanes $k --gemv lanes
  for d in 0 4 8; do bench rows-p$d $k --gemv rows --define DSC_ROW_PREFETCH_STEPS=$d; done
done
