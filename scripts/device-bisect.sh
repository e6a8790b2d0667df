#!/usr/bin/env bash
# Which fast kernel family moves a golden run out of the GPU gates
# (docs/device.md): runs CASE/RUN once per kernel family with only that family
# on its CPU-order kernels (--cuda-kernels cpu-order=F: if this passes, F's
# fast kernel is what fails) and once with only that family fast
# (cpu-order=all but F: if this fails, F's fast kernel alone is enough).
# Prints one line per run: the family, both worst block errors and verdicts.
# usage: scripts/device-bisect.sh CARRY CASE RUN PREFILL_LEN OUT
#   (CARRY from scripts/device-carry.sh golden DIR)
set -u
C=$1; CASE=$2; RUN=$3; P=$4; OUT=$5; H=$(cd "$(dirname "$0")" && pwd)
$H/device-unpack.sh $C
FAMILIES="linear head grouped-output compressor index-queries indexer-score attention norm mhc moe-gate moe-experts index-keys"
verdict() { tail -1 $OUT/$CASE-$RUN$1.compare.txt | sed 's/ (excused rows left out); GPU gates://'; }
for f in $FAMILIES; do
  others=$(echo $FAMILIES | tr ' ' '\n' | grep -vx $f | paste -sd,)
  TAG=-cpu-$f DSC_RUN_ARGS="--cuda-kernels cpu-order=$f" $H/device-golden.sh $C $CASE $RUN $P $OUT > /dev/null
  TAG=-fast-$f DSC_RUN_ARGS="--cuda-kernels cpu-order=$others" $H/device-golden.sh $C $CASE $RUN $P $OUT > /dev/null
  printf '%-15s only it cpu-order: %-40s only it fast: %s\n' $f "$(verdict -cpu-$f)" "$(verdict -fast-$f)"
done
