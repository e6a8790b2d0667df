#!/usr/bin/env bash
# Nsight Compute detail of chosen kernels in one rw6 decode step (docs/device.md):
# speed of light, warp states, occupancy, launch stats and per-SASS source
# counters for the last launch of each kernel matched, written as text
# under OUT (details.txt, one sass-<kernel>.csv per kernel of SASS_KERNELS).
# Keep what comes back small: a call returns few, small files (print summaries).
# usage: scripts/device-profile.sh CARRY OUT REGEX [SASS_KERNELS...]
#   CARRY holds bin/dsc-bench and rw6.dscp(.xz) (scripts/device-carry.sh bench or golden);
#   REGEX an ncu kernel-name regex (e.g. 'hc_mixes_finish_fast|rms_norm_fast').
# Extra dsc-bench arguments: DSC_BENCH_ARGS.
set -u
C=$1; OUT=$2; REGEX=$3; shift 3
H=$(cd "$(dirname "$0")" && pwd)
bash $H/device-unpack.sh $C
NCU=/usr/local/cuda/bin/ncu
mkdir -p $OUT
$NCU --clock-control none -k "regex:$REGEX" --import-source no \
  --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy \
  --section SchedulerStats --section SourceCounters --section MemoryWorkloadAnalysis \
  -f -o $OUT/prof $C/bin/dsc-bench $C/rw6.dscp --backend cuda --synthetic-weights 1 \
  --prefill-len 16 --decode-steps 1 --warmup 0 --cuda-graphs off ${DSC_BENCH_ARGS:-} \
  > $OUT/ncu-run.log 2>&1
tail -3 $OUT/ncu-run.log
$NCU --import $OUT/prof.ncu-rep --page details > $OUT/details.txt 2>&1
echo "details: $(wc -l < $OUT/details.txt) lines"
for k in "$@"; do
  $NCU --import $OUT/prof.ncu-rep --page source --csv --print-source sass -k "$k" \
    > $OUT/sass-$k.csv 2>&1
  echo "sass $k: $(wc -l < $OUT/sass-$k.csv) lines"
done
