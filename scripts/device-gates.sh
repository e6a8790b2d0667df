#!/usr/bin/env bash
# Every GPU gate of the golden cases in one device call (docs/device.md):
# the four golden runs with the default (fast) kernels, tiny40/expected with
# the behaviour-preserving CPU-order kernels, and byte-identity checks of the
# fast path (two runs, CUDA graphs on vs off vs log; the fast norm and mHC
# kernels against the CPU-order ones) and, with CARRY/plans, the CUDA prefill
# test (CED, chunking, fusion: scripts/prefill-cuda-test.sh). One line per check.
# usage: scripts/device-gates.sh CARRY OUT   (CARRY from scripts/device-carry.sh golden DIR)
set -u
C=$1; OUT=$2; H=$(cd "$(dirname "$0")" && pwd); fail=0
$H/device-unpack.sh $C
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
gate() { # CASE RUN PREFILL
  echo "== $1/$2${TAG:-} ${DSC_RUN_ARGS:-}"; $H/device-golden.sh $C $1 $2 $3 $OUT | tail -1
  grep -q 'PASS' $OUT/$1-$2${TAG:-}.compare.txt && ! grep -q 'FAIL' $OUT/$1-$2${TAG:-}.compare.txt || fail=1
}
gate tiny6 expected 150; gate tiny6 expected_short 9
gate tiny40 expected 61; gate tiny40 expected_short 5
TAG=-cpu-order DSC_RUN_ARGS="--cuda-kernels cpu-order" gate tiny40 expected 61
# The fast norm, mHC and index-key kernels against the CPU-order ones, all else on the
# CPU-order kernels: the same dumped bytes (docs/cuda-kernels-dense.md).
FAMILIES="linear head grouped-output compressor index-queries indexer-score attention norm mhc moe-gate moe-experts index-keys"
for f in norm mhc index-keys; do
  others=$(echo $FAMILIES | tr ' ' '\n' | grep -vx $f | paste -sd,)
  TAG=-fast-$f DSC_RUN_ARGS="--cuda-kernels cpu-order=$others" $H/device-golden.sh $C tiny40 expected 61 $OUT > /dev/null
  diff -rq /tmp/dump-tiny40-expected-cpu-order /tmp/dump-tiny40-expected-fast-$f > /dev/null \
    && echo "fast $f == cpu-order $f (tiny40 dumps, bytes): PASS" || { echo "fast $f == cpu-order $f: FAIL"; fail=1; }
done
# (The goldens' attention lists have at most 64 entries, so they run the
# single walk: the split-KV paths are checked on rw6 by
# scripts/device-split-attention.sh, which device-perf.sh runs.)
# Byte identity: same input, same bytes; graphs on == off == log; PDL on == off.
python3 $H/../test/tools/dsc-run/Inputs/golden_ids.py $C/golden/tiny6/expected.safetensors /tmp/ids
for g in on on2 off log; do
  $C/bin/dsc-run $C/tiny6.dscp --backend cuda --weights $C/golden/tiny6/model.safetensors --input-ids /tmp/ids \
    --prefill-len 150 --cuda-graphs ${g%2} --logits-out /tmp/det-$g.npy > $OUT/det-$g.txt 2>&1 || fail=1
done
$C/bin/dsc-run $C/tiny6.dscp --backend cuda --weights $C/golden/tiny6/model.safetensors --input-ids /tmp/ids \
  --prefill-len 150 --cuda-pdl off --logits-out /tmp/det-pdl-off.npy > $OUT/det-pdl-off.txt 2>&1 || fail=1
cmp -s /tmp/det-on.npy /tmp/det-pdl-off.npy && echo "dependent launches on == off: PASS" \
  || { echo "dependent launches on == off: FAIL"; fail=1; }
for g in on2 off log; do
  cmp -s /tmp/det-on.npy /tmp/det-$g.npy && echo "graphs on == $g: PASS" || { echo "graphs on == $g: FAIL"; fail=1; }
done
# CED exact == full, chunked == one call, fused == unfused (logits bytes).
if [ -d $C/plans ]; then
  DSC_CED_PLANS=$C/plans $H/prefill-cuda-test.sh $C/bin $C > $OUT/prefill-cuda-test.txt 2>&1 \
    && echo "prefill-cuda-test: PASS" || { echo "prefill-cuda-test: FAIL"; tail -5 $OUT/prefill-cuda-test.txt; fail=1; }
fi
[ $fail = 0 ] && echo "ALL GATES PASS" || echo "SOME GATE FAILED"
