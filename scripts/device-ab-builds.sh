#!/usr/bin/env bash
# Two builds side by side on the device (docs/device.md): A (the baseline) and
# B, each a carry folder with bin/dsc-bench, bin/dsc-kernel-bench, rw6.dscp and
# tiny6-bench.dscp (+ golden/tiny6/model.safetensors in A). Per build: the
# decode GEMVs in dsc-kernel-bench (MoE up and down, wq_b, wq_a + wkv, wo_b);
# then rw6 at 512 positions and tiny6 decode alternating A B A B, each run's
# logits written and compared byte for byte (same bytes: a change that must
# not move results did not), one line per run (scripts/device-ab.sh).
# usage: scripts/device-ab-builds.sh A B OUT [dsc-bench arguments for B...]
#   SKIP_KERNELS=1: the whole steps only; ROUNDS=N: N alternations (default 2)
set -u
A=$1; B=$2; OUT=$3; shift 3
H=$(cd "$(dirname "$0")" && pwd)
bash $H/device-unpack.sh $A; bash $H/device-unpack.sh $B
mkdir -p $OUT
[ -n "${SKIP_KERNELS:-}" ] || for C in $A $B; do
  tag=$(basename $C)
  for k in "moe-up --m 1 --n 2304 --k 5120 --topk 6" "moe-down --m 1 --n 2304 --k 5120 --topk 6" \
           "linear-fp8 --m 1 --n 32768 --k 1280" "linear-fp8 --m 1 --n 1792 --k 5120" \
           "linear-fp8 --m 1 --n 5120 --k 8192" "linear-fp4 --m 1 --n 4096 --k 5120"; do
    echo "$tag $k: $($C/bin/dsc-kernel-bench $k 2>&1 | tail -1)"
  done
done | tee $OUT/kernels.txt
W="--weights $A/golden/tiny6/model.safetensors"
for round in $(seq 1 ${ROUNDS:-2}); do
  bash $H/device-ab.sh $A $OUT rw6-A$round $A/rw6.dscp --backend cuda --synthetic-weights 1 \
    --prefill-len 512 --warmup 1 --decode-steps 64 --logits-out $OUT/rw6-A$round.npy
  bash $H/device-ab.sh $B $OUT rw6-B$round $B/rw6.dscp --backend cuda --synthetic-weights 1 \
    --prefill-len 512 --warmup 1 --decode-steps 64 --logits-out $OUT/rw6-B$round.npy "$@"
  bash $H/device-ab.sh $A $OUT tiny6-A$round $A/tiny6-bench.dscp --backend cuda $W \
    --prefill-len 128 --warmup 2 --decode-steps 64 --logits-out $OUT/tiny6-A$round.npy
  bash $H/device-ab.sh $B $OUT tiny6-B$round $B/tiny6-bench.dscp --backend cuda $W \
    --prefill-len 128 --warmup 2 --decode-steps 64 --logits-out $OUT/tiny6-B$round.npy "$@"
done
for m in rw6 tiny6; do
  for x in $(ls $OUT | sed -n "s/^$m-\\([AB][0-9]*\\)\\.npy$/\\1/p" | grep -v "^A1$"); do
    cmp -s $OUT/$m-A1.npy $OUT/$m-$x.npy && echo "$m logits A1 == $x (bytes)" || echo "$m logits A1 != $x"
  done
done
rm -f $OUT/*.npy
