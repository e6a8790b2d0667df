#!/usr/bin/env bash
# Runs a golden case on the GPU with forced boundaries and compares on the
# device (docs/device.md). usage: scripts/device-golden.sh CARRY CASE RUN PREFILL_LEN OUTDIR
# CARRY holds bin/dsc-run, <case>.dscp, golden/<case>/{config.json,model.safetensors,<run>.safetensors}.
# SANITIZER="compute-sanitizer --tool memcheck" runs dsc-run under it; DSC_RUN_ARGS adds dsc-run
# options (e.g. "--cuda-kernels cpu-order") and TAG names the outputs <case>-<run><TAG>.*.
set -u
C=$1; CASE=$2; RUN=$3; P=$4; OUT=$5; N=$CASE-$RUN${TAG:-}
"$(dirname "$0")/device-unpack.sh" $C
IDS=/tmp/$CASE.$RUN.ids
python3 "$(dirname "$0")/../test/tools/dsc-run/Inputs/golden_ids.py" $C/golden/$CASE/$RUN.safetensors $IDS
D=/tmp/dump-$N; rm -rf $D; mkdir -p $D
start=$(date +%s%N)
${SANITIZER:-} $C/bin/dsc-run $C/$CASE.dscp --backend cuda --weights $C/golden/$CASE/model.safetensors \
  --input-ids $IDS --prefill-len $P --force-boundaries $C/golden/$CASE/$RUN.safetensors \
  --dump-layers $D --logits-out $D/logits.npy ${DSC_RUN_ARGS:-} > $OUT/$N.run.txt 2>&1
rc=$?
end=$(date +%s%N)
echo "dsc-run exit $rc, $(( (end - start) / 1000000 )) ms" >> $OUT/$N.run.txt
cp "$(dirname "$0")/../../shared/golden/$CASE/config.json" $C/golden/$CASE/ 2>/dev/null || true
python3 "$(dirname "$0")/compare_golden.py" $C/golden/$CASE/$RUN.safetensors $D $D/logits.npy --gpu > $OUT/$N.compare.txt 2>&1
tail -3 $OUT/$N.compare.txt
exit $rc
