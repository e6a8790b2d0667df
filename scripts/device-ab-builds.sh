#!/usr/bin/env bash
# Builds side by side on the device (docs/device.md): A (the baseline) and
# B, C, ..., each a carry folder with bin/dsc-bench, bin/dsc-kernel-bench,
# rw6.dscp and tiny6-bench.dscp (+ golden/tiny6/model.safetensors in A). Per
# build: the decode GEMVs in dsc-kernel-bench (MoE up and down, wq_b, wq_a +
# wkv, wo_b); then rw6 at 512 positions and tiny6 decode alternating A B C ..,
# each run's logits written and compared byte for byte with A's first (same
# bytes: a change that must not move results did not), one line per run
# (scripts/device-ab.sh), then every run's logits digest.
# usage: scripts/device-ab-builds.sh OUT A B [C ...]
#   SKIP_KERNELS=1: the whole steps only; ROUNDS=N: N alternations (default 2);
#   TINY=0: no tiny6 runs; BENCH_ARGS: more dsc-bench arguments for every run;
#   VARIANTS="name:args|name:args...": each build also runs once per variant
#   with those dsc-bench arguments (tags BUILD.name), in the same alternation,
#   e.g. VARIANTS="shared:--cuda-arena shared|heir:--cuda-capture-order heir".
set -u
OUT=$1; shift; A=$1
H=$(cd "$(dirname "$0")" && pwd)
for C in "$@"; do bash $H/device-unpack.sh $C; done
mkdir -p $OUT
[ -n "${SKIP_KERNELS:-}" ] || for C in "$@"; do
  tag=$(basename $C)
  for k in "moe-up --m 1 --n 2304 --k 5120 --topk 6" "moe-down --m 1 --n 2304 --k 5120 --topk 6" \
           "linear-fp8 --m 1 --n 32768 --k 1280" "linear-fp8 --m 1 --n 1280 --k 5120" \
           "linear-fp8 --m 1 --n 5120 --k 8192" "linear-fp4 --m 1 --n 4096 --k 5120"; do
    echo "$tag $k: $($C/bin/dsc-kernel-bench $k 2>&1 | tail -1)"
  done
done | tee $OUT/kernels.txt
W="--weights $A/golden/tiny6/model.safetensors"
# Every (build, variant) pair: "BUILD" with no extra arguments, then "BUILD.name"
# per VARIANTS entry.
runs() {
  for C in "$@"; do
    echo "$C|$(basename $C)|"
    IFS='|' read -ra vs <<< "${VARIANTS:-}"
    for v in "${vs[@]}"; do [ -n "$v" ] && echo "$C|$(basename $C).${v%%:*}|${v#*:}"; done
  done
}
for round in $(seq 1 ${ROUNDS:-2}); do
  runs "$@" | while IFS='|' read -r C tag extra; do
    bash $H/device-ab.sh $C $OUT rw6-$tag-$round $C/rw6.dscp --backend cuda --synthetic-weights 1 \
      --prefill-len 512 --warmup 1 --decode-steps 64 --logits-out $OUT/rw6-$tag-$round.npy ${BENCH_ARGS:-} $extra < /dev/null
  done
  [ "${TINY:-1}" = 0 ] || runs "$@" | while IFS='|' read -r C tag extra; do
    bash $H/device-ab.sh $C $OUT tiny6-$tag-$round $C/tiny6-bench.dscp --backend cuda $W \
      --prefill-len 128 --warmup 2 --decode-steps 64 --logits-out $OUT/tiny6-$tag-$round.npy ${BENCH_ARGS:-} $extra < /dev/null
  done
done
a=$(basename $A)
for m in rw6 tiny6; do
  [ -f $OUT/$m-$a-1.npy ] || continue
  for f in $(ls $OUT | grep "^$m-.*\.npy$" | grep -v "^$m-$a-1\.npy$"); do
    cmp -s $OUT/$m-$a-1.npy $OUT/$f && echo "$m logits $a-1 == ${f%.npy} (bytes)" \
      || echo "$m logits $a-1 != ${f%.npy}"
  done
done
(cd $OUT && md5sum *.npy) # any other pair: the same digest, the same bytes
rm -f $OUT/*.npy
