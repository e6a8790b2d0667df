#!/usr/bin/env bash
# The decode/prefill measurements of docs/perf.md in one device call: rw6 at
# 512 positions (64 steps), the split-KV attention against the single walk
# (logits bytes, scripts/device-split-attention.sh), rw6 with M rows per step,
# rw6 at 32,768 positions, tiny6 and tiny40, an ncu per-kernel breakdown of
# one rw6 decode step, and the peer (the official reference, --gemm fused) in
# the same call. Writes one JSON per run and ncu.csv under OUT; prints a
# summary line per run.
# usage: scripts/device-perf.sh CARRY OUT [DATE]   (CARRY from scripts/device-carry.sh bench DIR)
set -u
C=$1; OUT=$2; DAY=${3:-$(date +%F)}; H=$(cd "$(dirname "$0")" && pwd)
B=$C/bin/dsc-bench
$H/device-unpack.sh $C
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $OUT/device.txt
line() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); x=d['decode']; print(sys.argv[2], 'decode', x['mean_ms'], 'ms/step (p50', x['p50_ms'], 'min', x['min_ms'], ') roofline', x['roofline_ms'], 'ms at', d['bandwidth_gbps'], 'GB/s:', x['measured_over_roofline'], 'x; prefill', d['prefill']['tokens_per_s'], 'tok/s')" "$@" 2>/dev/null || { echo "$2: no result"; tail -2 ${1%.json}.log 2>/dev/null; }; }
rw6() { # NAME ARGS... (PLAN=rw6-full for M-row steps: an extend needs --ced=full)
  local n=$1; shift
  $B $C/${PLAN:-rw6}.dscp --backend cuda --synthetic-weights 1 --warmup 1 "$@" --json $OUT/$DAY-rw6-$n.json > $OUT/$DAY-rw6-$n.log 2>&1
  line $OUT/$DAY-rw6-$n.json rw6-$n
}
rw6 decode512 --prefill-len 512 --decode-steps 64
$H/device-split-attention.sh $C $C/rw6.dscp $OUT 512
for R in 2 8; do PLAN=rw6-full rw6 decode512-rows$R --prefill-len 512 --decode-steps 16 --decode-rows $R; done
rw6 decode32768 --prefill-len 32768 --decode-steps 16
$B $C/tiny6-bench.dscp --backend cuda --weights $C/golden/tiny6/model.safetensors --prefill-len 128 \
  --decode-steps 32 --warmup 2 --json $OUT/$DAY-tiny6-decode.json > $OUT/$DAY-tiny6-decode.log 2>&1
line $OUT/$DAY-tiny6-decode.json tiny6
$B $C/tiny40-bench.dscp --backend cuda --weights $C/golden/tiny40/model.safetensors --prefill-len 64 \
  --decode-steps 32 --warmup 2 --json $OUT/$DAY-tiny40-decode.json > $OUT/$DAY-tiny40-decode.log 2>&1
line $OUT/$DAY-tiny40-decode.json tiny40
/usr/local/cuda/bin/ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
  --log-file $OUT/ncu.csv $B $C/rw6.dscp --backend cuda --synthetic-weights 1 --prefill-len 512 \
  --decode-steps 1 --warmup 0 --cuda-graphs off > /dev/null 2>&1
python3 $H/ncu-summary.py $OUT/ncu.csv 2>&1 | head -40
python3 $C/refbench/bench_ref.py --ref $C/refbench --config $H/../models/synthetic/released-widths-6.json \
  --device cuda --prefill-len 512 --decode-steps 64 --warmup 1 --seed 1 --gemm fused \
  --out $OUT/$DAY-ref-rw6-fused.json > $OUT/ref.log 2>&1
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('peer', {k: d[k] for k in list(d)[:12] if not isinstance(d[k], (list, dict))}, d.get('decode'))" $OUT/$DAY-ref-rw6-fused.json 2>&1 | head -5
