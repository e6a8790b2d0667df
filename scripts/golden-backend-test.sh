#!/usr/bin/env bash
# A golden run on one backend, end to end: compile the conformance plan, run
# dsc-run with forced boundaries and dumps, check the golden README's gates
# with compare_golden.py (GPU gates for cuda). Exit 77 (skipped) when the
# backend is unavailable, e.g. cuda on a machine without a GPU.
# usage: golden-backend-test.sh BUILD_BIN SHARED CASE RUN PREFILL_LEN BACKEND
set -u
BIN=$1; SHARED=${DSC_SHARED_DIR:-$2}; CASE=$3; RUN=$4; P=$5; BACKEND=$6
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d); trap 'rm -rf $T' EXIT
G=$SHARED/golden/$CASE
ARCH=none; [ "$BACKEND" = cuda ] && ARCH=sm_90a
"$BIN/dsc-compile" $G/config.json --engram-map $G/engram_token_map.json --layer-boundaries \
  --gpu-arch=$ARCH -o $T/plan.dscp || exit 1
/usr/bin/python3 "$HERE/../test/tools/dsc-run/Inputs/golden_ids.py" $G/$RUN.safetensors $T/ids || exit 1
mkdir $T/dump
"$BIN/dsc-run" $T/plan.dscp --backend $BACKEND --weights $G/model.safetensors --input-ids $T/ids \
  --prefill-len $P --force-boundaries $G/$RUN.safetensors --dump-layers $T/dump --logits-out $T/logits.npy
rc=$?
[ $rc -ne 0 ] && exit $rc
GPU=""; [ "$BACKEND" = cuda ] && GPU=--gpu
/usr/bin/python3 "$HERE/compare_golden.py" $G/$RUN.safetensors $T/dump $T/logits.npy $GPU | tail -4
