#!/usr/bin/env bash
# The row-lane GEMVs (codegen/kernels/row_gemv.cuh, --cuda-gemv rows) on the
# device, in one call (built in session 20 with no device lent; docs/perf.md):
# their GPU tests; dsc-kernel-bench lanes vs rows at the decode shapes; the
# tiny6 golden gate with rows; rw6 and tiny6 decode alternating the default
# (lanes) with the variants rows / shared arenas / heir-first capture (logits
# of the default must be identical across rounds); the CUDA prefill test (CED
# exact == full, chunked == one call) with rows; the peer; a kernel timeline
# of rw6 with rows.
# Carry: R = a folder with bin/{dsc-bench,dsc-kernel-bench,dsc-run,
# test_cuda_kernels_gpu,libdsc-kernel-trace.so}, rw6.dscp, tiny6-bench.dscp,
# tiny6.dscp (--layer-boundaries), golden/tiny6/{model,expected,config}
# (xz plans: scripts/device-carry.sh's conventions); P = the five prefill
# plans of scripts/prefill-cuda-test.sh in P/plans; REF = ../shared/refbench.
# usage: scripts/device-gemv-rows.sh OUT R P REF
set -u
O=$1; R=$2; P=$3; REF=$4; H=$(cd "$(dirname "$0")" && pwd)
mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
bash $H/device-unpack.sh $R >/dev/null
echo "== gpu tests"
timeout 90 $R/bin/test_cuda_kernels_gpu --gtest_filter='*MoeExperts*:*QuantizedGemv*' 2>&1 |
  grep -E "^\[ *(FAILED|PASSED)|Failure|Expected|Which|error" | head -20
echo "== kernels (us per call, fraction of the copy bandwidth)"
for k in "moe-up --m 1 --n 2304 --k 5120 --topk 6" "moe-down --m 1 --n 2304 --k 5120 --topk 6" \
         "linear-fp8 --m 1 --n 32768 --k 1280" "linear-fp8 --m 1 --n 5120 --k 8192" \
         "linear-fp8 --m 1 --n 1792 --k 5120" "linear-fp4 --m 1 --n 4096 --k 5120" \
         "linear-fp8 --m 8 --n 32768 --k 1280"; do
  for g in lanes rows; do
    echo "$g $k: $(timeout 30 $R/bin/dsc-kernel-bench $k --gemv $g 2>&1 | tail -1 | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["us_per_call"], "us", d["fraction_of_copy"], "grid", d.get("grid"))' 2>&1)"
  done
done
echo "== golden tiny6 with rows"
DSC_RUN_ARGS="--cuda-gemv rows" TAG=-rows timeout 60 bash $H/device-golden.sh $R tiny6 expected 150 $O
echo "== decode A/B"
SKIP_KERNELS=1 ROUNDS=2 VARIANTS="rows:--cuda-gemv rows|shared:--cuda-arena shared|heir:--cuda-capture-order heir" \
  timeout 200 bash $H/device-ab-builds.sh $O/ab $R 2>&1 | grep --line-buffered -v "^[0-9a-f]\{32\}"
echo "== prefill test with rows"
DSC_RUN_ARGS="--cuda-gemv rows" DSC_CED_PLANS=$P/plans timeout 120 bash $H/prefill-cuda-test.sh $R/bin $R 2>&1 | tail -8
echo "== peer"
timeout 150 python3 $REF/bench_ref.py --ref $REF --config models/synthetic/released-widths-6.json --device cuda \
  --prefill-len 512 --decode-steps 32 --warmup 1 --seed 1 --gemm fused --out $O/peer.json 2>&1 | tail -3
echo "== timeline with rows"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
CUDA_INJECTION64_PATH=$R/bin/libdsc-kernel-trace.so DSC_KERNEL_TRACE=$O/rows-trace.csv timeout 60 \
  $R/bin/dsc-bench $R/rw6.dscp --backend cuda --synthetic-weights 1 --prefill-len 512 --warmup 1 \
  --decode-steps 32 --cuda-gemv rows > $O/rows-traced.log 2>&1
python3 $H/kernel-trace-summary.py $O/rows-trace.csv 45 0 --timeline > $O/rows-summary.txt
head -60 $O/rows-summary.txt; rm -f $O/rows-trace.csv
