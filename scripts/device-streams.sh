#!/usr/bin/env bash
# Graph branches on the device (docs/device.md; issue 11, session 12): rw6's
# captured decode steps give the same logits bytes on 1 and 4 streams and on
# two runs of 4 streams (a missing dependency shows as a difference, a race
# as two different runs), then the decode step on 1, 2, 4 and 8 streams,
# twice. One line per check; the JSON goes to OUT/streams-json.tgz.
# usage: scripts/device-streams.sh CARRY OUT   (CARRY with bin/dsc-bench and rw6.dscp)
set -u
C=$1; OUT=$2; H=$(cd "$(dirname "$0")" && pwd)
$H/device-unpack.sh $C
BENCH="--backend cuda --synthetic-weights 1 --prefill-len 512"
logits() { # FILE ARGS...: 1 + 8 teacher-forced rows into /tmp/FILE.npy
  local f=$1; shift
  $C/bin/dsc-bench $C/rw6.dscp $BENCH --decode-steps 8 --warmup 1 "$@" --logits-out /tmp/$f.npy \
    --json $OUT/logits-$f.json > /tmp/$f.txt 2>&1 || { echo "$f: dsc-bench failed"; tail -3 /tmp/$f.txt; }
}
same() { cmp -s /tmp/$1.npy /tmp/$2.npy && echo PASS || echo FAIL; }
logits s1 --cuda-streams 1; logits s4 --cuda-streams 4; logits s4again --cuda-streams 4
echo "rw6 logits bytes, 1 stream == 4 streams: $(same s1 s4); 4 streams twice: $(same s4 s4again)"
for round in 1 2; do
  for s in 1 2 4 8; do
    $H/device-ab.sh $C $OUT streams$s-r$round $C/rw6.dscp $BENCH --decode-steps 64 --warmup 1 --cuda-streams $s
  done
done
(cd $OUT && tar czf streams-json.tgz *.json && rm -f *.json streams*.log)
