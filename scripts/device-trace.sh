#!/usr/bin/env bash
# Kernel timelines of decode steps (docs/bench.md, "Kernel timeline"): rw6 at
# 512 positions and tiny6, each run once under the CUPTI injection library
# (bin/libdsc-kernel-trace.so) and summarised by scripts/kernel-trace-summary.py
# (per step: span, kernels' sum, idle; per kernel: the step time it advances;
# the last step kernel by kernel), and once untraced for the step time.
# usage: scripts/device-trace.sh CARRY OUT [DSC_BENCH_ARGS...]
#   CARRY: scripts/device-carry.sh bench DIR (it carries the library where built)
set -u
C=$1; OUT=$2; shift 2
H=$(cd "$(dirname "$0")" && pwd)
bash $H/device-unpack.sh $C
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
mkdir -p $OUT
run() { # TAG PLAN WEIGHTS PREFILL
  local tag=$1 plan=$2 weights=$3 prefill=$4
  shift 4
  CUDA_INJECTION64_PATH=$C/bin/libdsc-kernel-trace.so DSC_KERNEL_TRACE=$OUT/$tag-trace.csv \
    $C/bin/dsc-bench $C/$plan --backend cuda $weights --prefill-len $prefill --warmup 1 \
    --decode-steps 32 "$@" --json $OUT/$tag-traced.json > $OUT/$tag-traced.log 2>&1
  tail -1 $OUT/$tag-traced.log
  python3 $H/kernel-trace-summary.py $OUT/$tag-trace.csv 45 0 --timeline > $OUT/$tag-summary.txt
  $C/bin/dsc-bench $C/$plan --backend cuda $weights --prefill-len $prefill --warmup 1 \
    --decode-steps 64 "$@" --json $OUT/$tag.json > $OUT/$tag.log 2>&1
  python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['decode']; t=json.load(open(sys.argv[2]))['decode']; print(sys.argv[3], 'untraced', d['mean_ms'], 'ms/step (p50', d['p50_ms'], ') traced', t['mean_ms'], 'roofline', d['roofline_ms'])" $OUT/$tag.json $OUT/$tag-traced.json $tag
  head -48 $OUT/$tag-summary.txt
}
run rw6 rw6.dscp "--synthetic-weights 1" 512 "$@"
run tiny6 tiny6-bench.dscp "--weights $C/golden/tiny6/model.safetensors" 128 "$@"
