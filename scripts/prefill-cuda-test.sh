#!/usr/bin/env bash
# CED and chunked prefill on the CUDA backend: the tiny6 --ced=exact plan must
# give the same logits bytes as the --ced=full plan on cuda (cmp), as it does
# on the CPU (test/unit/golden/CedReplayTest.cpp); chunked prefill
# (--prefill-chunk 32 for full, 96 for exact: 4 and 2-3 chunks, continuation
# chunks reading the ring, compressor groups straddling calls) must give the
# same bytes as one call (ChunkedPrefillTest.cpp on the CPU); the default fused
# plan (the `attention` group runs as one native CUDA kernel with a RoPE
# epilogue) must give the same bytes as --fuse=none (every op its own launch). Free-running CUDA and CPU runs are not
# compared: random-weight models amplify last-ulp differences (golden/README.md),
# which is why the golden gates force block boundaries. Teacher-forced dsc-run,
# prompts of 100 and 200 tokens (R = 48 replayed rows), ids: tiny6
# expected.safetensors input_ids extended deterministically to 240;
# --max-seq-len 256. Exit 77 (skipped) without a GPU. DSC_CED_PLANS=DIR takes
# {exact,full,exact-c96,full-c32,full-unfused}.dscp from DIR (the device machine has no
# dsc-compile).
# DSC_RUN_ARGS adds dsc-run flags to every run (e.g. --cuda-gemv wg).
# usage: prefill-cuda-test.sh BUILD_BIN SHARED
set -u
BIN=$1; SHARED=${DSC_SHARED_DIR:-$2}
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d); trap 'rm -rf $T' EXIT
G=$SHARED/golden/tiny6
PY=${PYTHON:-/usr/bin/python3}
$PY "$HERE/../test/tools/dsc-run/Inputs/golden_ids.py" $G/expected.safetensors $T/ids0 || exit 1
$PY -c "
ids = [int(x) for x in open('$T/ids0').read().split()]
n = len(ids)
while len(ids) < 240:
    ids.append((ids[len(ids) - n] * 7 + len(ids)) % 1024)
open('$T/ids', 'w').write(' '.join(map(str, ids)) + '\n')" || exit 1
C="$BIN/dsc-compile $G/config.json --engram-map $G/engram_token_map.json --max-seq-len 256"
if [ -n "${DSC_CED_PLANS:-}" ]; then # plans compiled elsewhere (docs/device.md)
  "$HERE/device-unpack.sh" $DSC_CED_PLANS || exit 1 # carried compressed
  cp $DSC_CED_PLANS/{exact,full,exact-c96,full-c32,full-unfused}.dscp $T/ || exit 1
else
  $C --ced=exact --prefill-chunk 0 -o $T/exact.dscp || exit 1
  $C --ced=full --prefill-chunk 0 -o $T/full.dscp || exit 1
  $C --ced=exact --prefill-chunk 96 -o $T/exact-c96.dscp || exit 1
  $C --ced=full --prefill-chunk 32 -o $T/full-c32.dscp || exit 1
  $C --ced=full --prefill-chunk 0 --fuse=none -o $T/full-unfused.dscp || exit 1
fi
run() { # PLAN BACKEND PREFILL OUT
  "$BIN/dsc-run" $1 --backend $2 --weights $G/model.safetensors --input-ids $T/ids \
    --prefill-len $3 --logits-out $4 ${DSC_RUN_ARGS:-} >/dev/null
}
for P in 100 200; do
  run $T/exact.dscp cuda $P $T/exact-$P.npy; rc=$?; [ $rc -ne 0 ] && exit $rc
  run $T/full.dscp cuda $P $T/full-$P.npy || exit 1
  cmp $T/full-$P.npy $T/exact-$P.npy || { echo "prompt $P: cuda exact != cuda full"; exit 1; }
  echo "prompt $P: cuda exact == cuda full (bytes)"
  for plan in full-c32 exact-c96; do
    run $T/$plan.dscp cuda $P $T/$plan-$P.npy || exit 1
    cmp $T/${plan%-c*}-$P.npy $T/$plan-$P.npy || { echo "prompt $P: cuda $plan != one call"; exit 1; }
    echo "prompt $P: cuda $plan (chunked) == one call (bytes)"
  done
  run $T/full-unfused.dscp cuda $P $T/full-unfused-$P.npy || exit 1
  cmp $T/full-$P.npy $T/full-unfused-$P.npy || { echo "prompt $P: cuda fused != unfused"; exit 1; }
  echo "prompt $P: cuda fused (native attention kernel) == --fuse=none (bytes)"
done
echo PASS
