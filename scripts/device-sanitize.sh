#!/usr/bin/env bash
# compute-sanitizer memcheck on one golden run and one rw6 decode step
# (issue 11: "memcheck clean"), on the device (docs/device.md). Prints each
# run's ERROR SUMMARY line and a verdict; full logs under OUT.
# usage: scripts/device-sanitize.sh CARRY OUT [EXTRA dsc-run/dsc-bench ARGS...]
#   (CARRY from scripts/device-carry.sh golden DIR: bin/dsc-run, bin/dsc-bench,
#   tiny6.dscp, rw6.dscp, golden/tiny6; EXTRA e.g. --cuda-attention mqa)
set -u
C=$1; OUT=$2; shift 2; H=$(cd "$(dirname "$0")" && pwd); fail=0
$H/device-unpack.sh $C
CS=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}
[ -x "$CS" ] || { echo "no compute-sanitizer at $CS"; exit 2; }
MC="$CS --tool memcheck --error-exitcode 9"
verdict() { # NAME LOG
  local summary; summary=$(grep -m1 "ERROR SUMMARY" $2 || echo "no ERROR SUMMARY line")
  echo "$1: $summary"
  echo "$summary" | grep -q "ERROR SUMMARY: 0 errors" || fail=1
}
# tiny6/expected with forced boundaries (graphs are off with an observer).
SANITIZER="$MC" DSC_RUN_ARGS="$*" TAG=-memcheck $H/device-golden.sh $C tiny6 expected 150 $OUT > /dev/null
verdict "memcheck tiny6/expected" $OUT/tiny6-expected-memcheck.run.txt
# One rw6 decode step after a short prefill, graphs off (eager launches).
$MC $C/bin/dsc-bench $C/rw6.dscp --backend cuda --synthetic-weights 1 --prefill-len 16 \
  --decode-steps 1 --warmup 0 --cuda-graphs off "$@" > $OUT/rw6-memcheck.txt 2>&1
verdict "memcheck rw6 decode step" $OUT/rw6-memcheck.txt
[ $fail = 0 ] && echo "MEMCHECK CLEAN" || echo "MEMCHECK FOUND ERRORS"
