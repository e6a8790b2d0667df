#!/usr/bin/env bash
# The row lanes' rolling L2 prefetch on the device, in one call (docs/perf.md,
# session 21): with N4 (scripts/device-carry.sh decode; the plans built with
# DSC_ROW_PREFETCH_STEPS 4) the GPU kernel tests and the tiny6 golden gate;
# rw6 and tiny6 decode alternating N4 with N0 and N8 (plans built with 0 and
# 8: bin/dsc-bench, rw6.dscp, tiny6-bench.dscp), logits compared byte for
# byte (a prefetch must not move a bit); dsc-kernel-bench lanes vs rows at
# D = 0, 4, 8 (--define) and the MoE down a step ahead; the peer. TINY=1:
# tiny6 in the A/B too; KERNEL_S: the kernel section's seconds (120); GOLDEN=0,
# PEER=0: without the gate or the peer (a short call).
# usage: scripts/device-row-prefetch.sh OUT N4 N0 N8 REF
set -u
O=$1; N4=$2; N0=$3; N8=$4; REF=$5; H=$(cd "$(dirname "$0")" && pwd)
mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for C in $N4 $N0 $N8; do bash $H/device-unpack.sh $C >/dev/null; done
echo "== gpu tests (D 4)"
timeout 100 $N4/bin/test_cuda_kernels_gpu --gtest_filter='*MoeExperts*:*QuantizedGemv*' 2>&1 |
  grep -E "^\[ *(FAILED|PASSED)|Failure|Expected|Which|error" | head -20
[ "${GOLDEN:-1}" = 0 ] || { echo "== golden tiny6 (rows, D 4)"
  timeout 60 bash $H/device-golden.sh $N4 tiny6 expected 150 $O; }
echo "== decode A/B"
TINY=${TINY:-0} SKIP_KERNELS=1 ROUNDS=2 timeout 130 bash $H/device-ab-builds.sh $O/ab $N4 $N0 $N8 2>&1 |
  grep --line-buffered -v "^[0-9a-f]\{32\}"
echo "== kernels (us per call, fraction of the copy bandwidth)"
SECONDS=0
bench() { # label, args... (none once KERNEL_S seconds of this section are spent)
  local label=$1; shift
  [ $SECONDS -lt ${KERNEL_S:-120} ] || { echo "$label $*: skipped (time)"; return; }
  echo "$label $*: $(timeout 60 $N4/bin/dsc-kernel-bench "$@" 2>&1 | tail -1 | python3 -c 'import json,sys; t=sys.stdin.read()
try:
  d=json.loads(t); print(d["us_per_call"], "us", d["fraction_of_copy"], "grid", d.get("grid"))
except Exception: print("ERR", t[:300])' 2>&1)"
}
for k in "moe-up --m 1 --n 2304 --k 5120 --topk 6" "moe-down --m 1 --n 2304 --k 5120 --topk 6" \
         "linear-fp8 --m 1 --n 32768 --k 1280" "linear-fp8 --m 1 --n 5120 --k 8192" \
         "linear-fp8 --m 1 --n 1792 --k 5120" "linear-fp4 --m 1 --n 4096 --k 5120"; do
  bench lanes $k --gemv lanes
  for d in 0 4 8; do bench rows-p$d $k --gemv rows --define DSC_ROW_PREFETCH_STEPS=$d; done
done
bench rows-p4-ahead moe-down --m 1 --n 2304 --k 5120 --topk 6 --gemv rows \
  --define DSC_ROW_PREFETCH_STEPS=4,DSC_MOE_ROWS_DOWN_AHEAD=1
for m in 2 4; do
  for g in lanes rows; do bench $g linear-fp8 --m $m --n 32768 --k 1280 --gemv $g; done
done
[ "${PEER:-1}" = 0 ] && exit 0
echo "== peer"
timeout 80 python3 $REF/bench_ref.py --ref $REF --config models/synthetic/released-widths-6.json --device cuda \
  --prefill-len 512 --decode-steps 32 --warmup 1 --seed 1 --gemm fused --out $O/peer.json 2>&1 | tail -2
