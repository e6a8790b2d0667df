#!/usr/bin/env bash
# Builds one git-ignored carry folder for a device call (docs/device.md):
# each kind fits the 64 MiB a call carries together with the tracked tree.
# The plans in DIR are xz-compressed (~11x: their cubins) and the tools stripped:
# scripts/device-unpack.sh DIR on the device first.
# usage: scripts/device-carry.sh KIND DIR   (DIR under the repo root, e.g. .dev-gold6;
#        /.dev*/ is ignored by git; the build must be current: cmake --build build)
#   golden-tiny6   bin/dsc-run, tiny6.dscp (--layer-boundaries), golden/tiny6/{model,expected,expected_short,config}
#                  -> scripts/device-golden.sh DIR tiny6 expected 150 OUT (and expected_short 9)
#   golden-tiny40  the same for tiny40 (expected 61, expected_short 5)
#   golden         both cases and the prefill plans in one folder -> scripts/device-gates.sh DIR OUT
#                  (every gate, and scripts/prefill-cuda-test.sh on DIR/plans with DIR as the shared dir),
#                  bin/dsc-bench and rw6.dscp for one decode timing in the same call
#   bench          bin/dsc-bench, rw6.dscp, rw6-full.dscp (--ced=full: M-row steps), tiny6-bench.dscp, tiny40-bench.dscp, golden/{tiny6,tiny40}/model,
#                  refbench/ -> scripts/device-perf.sh DIR OUT (dsc-bench, the split attention, the peer)
#                  and bin/libdsc-kernel-trace.so where built -> scripts/device-trace.sh DIR OUT
#   decode         golden-tiny6 + bin/{dsc-bench,dsc-kernel-bench,test_cuda_kernels_gpu,libdsc-kernel-trace.so},
#                  rw6.dscp, tiny6-bench.dscp -> scripts/device-gemv-rows.sh OUT DIR P REF,
#                  scripts/device-ab-builds.sh OUT DIR [DIR2] (a build checked and timed in one call)
#   odd            bin/dsc-bench, odd-4.dscp, odd-4-full.dscp -> scripts/device-fast-vs-cpu.sh DIR OUT
#   kernels        bin/test_cuda_kernels_gpu (GPU kernel tests against the CPU reference:
#                  test/unit/cuda/kernels), bin/dsc-kernel-bench (docs/bench.md)
#   prefill        bin/dsc-run, plans/{exact,full,exact-c96,full-c32,full-unfused}.dscp, shared/golden/tiny6/
#                  {model, expected (input_ids only)} -> DSC_CED_PLANS=DIR/plans scripts/prefill-cuda-test.sh DIR/bin DIR/shared
set -eu
KIND=$1; DIR=$2
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
SHARED=${DSC_SHARED_DIR:-$ROOT/../shared}
B=build/bin; G6=$SHARED/golden/tiny6; G40=$SHARED/golden/tiny40
rm -rf "$DIR"; mkdir -p "$DIR/bin"
prefillPlans() { # OUT: the five tiny6 plans of scripts/prefill-cuda-test.sh
  mkdir -p "$1"
  local C="$B/dsc-compile $G6/config.json --engram-map $G6/engram_token_map.json --max-seq-len 256"
  $C --ced=exact --prefill-chunk 0 -o "$1/exact.dscp"
  $C --ced=full --prefill-chunk 0 -o "$1/full.dscp"
  $C --ced=exact --prefill-chunk 96 -o "$1/exact-c96.dscp"
  $C --ced=full --prefill-chunk 32 -o "$1/full-c32.dscp"
  $C --ced=full --prefill-chunk 0 --fuse=none -o "$1/full-unfused.dscp"
}
golden() { # CASE
  local g=$SHARED/golden/$1
  cp $B/dsc-run "$DIR/bin/"; mkdir -p "$DIR/golden/$1"
  $B/dsc-compile $g/config.json --engram-map $g/engram_token_map.json --layer-boundaries -o "$DIR/$1.dscp"
  cp $g/model.safetensors $g/expected.safetensors $g/expected_short.safetensors $g/config.json "$DIR/golden/$1/"
}
case "$KIND" in
  golden-tiny6) golden tiny6 ;;
  golden-tiny40) golden tiny40 ;;
  golden) golden tiny6; golden tiny40; prefillPlans "$DIR/plans"
    cp $B/tests/test_cuda_kernels_gpu $B/dsc-kernel-bench "$DIR/bin/" 2>/dev/null || true
    # and the rw6 decode benchmark (one call can check and time a build)
    cp $B/dsc-bench "$DIR/bin/"
    $B/dsc-compile models/synthetic/released-widths-6.json -o "$DIR/rw6.dscp" ;;
  bench)
    cp $B/dsc-bench "$DIR/bin/"; mkdir -p "$DIR/golden/tiny6" "$DIR/golden/tiny40"
    $B/dsc-compile models/synthetic/released-widths-6.json -o "$DIR/rw6.dscp"
    $B/dsc-compile models/synthetic/released-widths-6.json --ced=full -o "$DIR/rw6-full.dscp"
    $B/dsc-compile $G6/config.json --engram-map $G6/engram_token_map.json -o "$DIR/tiny6-bench.dscp"
    $B/dsc-compile $G40/config.json --engram-map $G40/engram_token_map.json -o "$DIR/tiny40-bench.dscp"
    cp $G6/model.safetensors "$DIR/golden/tiny6/"; cp $G40/model.safetensors "$DIR/golden/tiny40/"
    cp -r $SHARED/refbench "$DIR/refbench"
    cp $B/libdsc-kernel-trace.so "$DIR/bin/" 2>/dev/null || true ;;
  kernels)
    cp $B/tests/test_cuda_kernels_gpu $B/dsc-kernel-bench "$DIR/bin/" ;;
  decode) golden tiny6
    cp $B/dsc-bench $B/dsc-kernel-bench $B/tests/test_cuda_kernels_gpu "$DIR/bin/"
    cp $B/libdsc-kernel-trace.so "$DIR/bin/" 2>/dev/null || true
    $B/dsc-compile models/synthetic/released-widths-6.json -o "$DIR/rw6.dscp"
    $B/dsc-compile $G6/config.json --engram-map $G6/engram_token_map.json -o "$DIR/tiny6-bench.dscp"
    rm -f "$DIR/golden/tiny6/expected_short.safetensors" ;;
  odd)
    cp $B/dsc-bench "$DIR/bin/"
    $B/dsc-compile models/synthetic/odd-4.json -o "$DIR/odd-4.dscp"
    $B/dsc-compile models/synthetic/odd-4.json --ced=full -o "$DIR/odd-4-full.dscp" ;;
  prefill)
    cp $B/dsc-run "$DIR/bin/"; mkdir -p "$DIR/shared/golden/tiny6"
    prefillPlans "$DIR/plans"
    cp $G6/model.safetensors "$DIR/shared/golden/tiny6/"
    # expected.safetensors with input_ids only (the script reads nothing else; saves 3.9 MB)
    python3 - "$G6/expected.safetensors" "$DIR/shared/golden/tiny6/expected.safetensors" <<'PY'
import json, struct, sys
with open(sys.argv[1], 'rb') as f:
    n = struct.unpack('<Q', f.read(8))[0]; h = json.loads(f.read(n)); t = h['input_ids']
    f.seek(8 + n + t['data_offsets'][0]); raw = f.read(t['data_offsets'][1] - t['data_offsets'][0])
head = json.dumps({'input_ids': {'dtype': t['dtype'], 'shape': t['shape'], 'data_offsets': [0, len(raw)]}}).encode()
head += b' ' * ((8 - len(head) % 8) % 8)
open(sys.argv[2], 'wb').write(struct.pack('<Q', len(head)) + head + raw)
PY
    ;;
  *) echo "unknown kind '$KIND' (golden-tiny6, golden-tiny40, golden, bench, kernels, decode, odd, prefill)" >&2; exit 2 ;;
esac
# Plans travel xz-compressed (scripts/device-unpack.sh DIR restores them
# there; the device scripts run it first).
find "$DIR" -name '*.dscp' -exec xz -9 -T2 -f {} +
find "$DIR/bin" -type f -exec strip {} + 2>/dev/null || true
TREE=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
SIZE=$(du -sb "$DIR" | cut -f1)
echo "$DIR: $SIZE bytes + tracked tree $TREE = $((SIZE + TREE)) of 67108864"
[ $((SIZE + TREE)) -le 67108864 ] || { echo "too large for one device call" >&2; exit 1; }
