#!/usr/bin/env bash
# Where a launch-bound decode step goes (docs/perf.md, sessions 15-16): the
# floor of one dependent launch (dsc-kernel-bench chain, with and without
# programmatic dependent launches, at a tiny and the released width), then
# rw6 and tiny6 decode steps with PDL off, one stream, eight streams and
# without graphs next to the defaults. One line per run.
# usage: scripts/device-launch-bound.sh CARRY OUT   (CARRY from scripts/device-carry.sh bench DIR,
#        plus bin/dsc-kernel-bench: cp build/bin/dsc-kernel-bench DIR/bin/)
set -u
C=$1; OUT=$2; H=$(cd "$(dirname "$0")" && pwd)
$H/device-unpack.sh $C
for k in 256 5120; do for p in on off; do
  echo "chain k $k pdl $p: $($C/bin/dsc-kernel-bench chain --n 200 --k $k --pdl $p 2>&1 | tail -1)"
done; done | tee $OUT/chain.txt
line() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); x=d['decode']; print(sys.argv[2], x['mean_ms'], 'ms/step (p50', x['p50_ms'], 'min', x['min_ms'], ')')" "$@" 2>/dev/null || echo "$2: no result"; }
for flags in "" "--cuda-pdl off" "--cuda-streams 1" "--cuda-streams 8" "--cuda-graphs off"; do
  tag=$(echo "default $flags" | tr -s ' -' '_')
  $C/bin/dsc-bench $C/rw6.dscp --backend cuda --synthetic-weights 1 --prefill-len 512 --warmup 1 \
    --decode-steps 64 $flags --json $OUT/rw6-$tag.json > $OUT/rw6-$tag.log 2>&1
  line $OUT/rw6-$tag.json "rw6 $flags"
  $C/bin/dsc-bench $C/tiny6-bench.dscp --backend cuda --weights $C/golden/tiny6/model.safetensors \
    --prefill-len 128 --warmup 2 --decode-steps 64 $flags --json $OUT/tiny6-$tag.json > $OUT/tiny6-$tag.log 2>&1
  line $OUT/tiny6-$tag.json "tiny6 $flags"
done
