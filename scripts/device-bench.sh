#!/usr/bin/env bash
# The first benchmark and the CUDA-vs-CPU block comparison on the device
# (docs/device.md, docs/bench.md). usage: scripts/device-bench.sh CARRY OUT
# CARRY: bin/{dsc-bench,dsc-run}, rw6.dscp, tiny6.dscp, tiny6lb.dscp,
#        golden/tiny6/{config.json,model.safetensors,expected.safetensors}
set -u
C=$1; OUT=$2; HERE=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $OUT/device.txt
$C/bin/dsc-bench $C/tiny6.dscp --backend cuda --weights $C/golden/tiny6/model.safetensors \
  --prefill-len 128 --decode-steps 32 --warmup 2 --json $OUT/bench-tiny6.json 2> $OUT/bench-tiny6.txt
echo "tiny6 bench exit $?" >> $OUT/bench-tiny6.txt
$C/bin/dsc-bench $C/rw6.dscp --backend cuda --synthetic-weights 1 --prefill-len 512 \
  --decode-steps 64 --warmup 2 --json $OUT/bench-rw6.json 2> $OUT/bench-rw6.txt
echo "rw6 bench exit $?" >> $OUT/bench-rw6.txt
# CUDA vs CPU with the same forcing.
python3 $HERE/../test/tools/dsc-run/Inputs/golden_ids.py $C/golden/tiny6/expected.safetensors /tmp/ids
for b in cuda cpu; do
  rm -rf /tmp/d-$b; mkdir /tmp/d-$b
  $C/bin/dsc-run $C/tiny6lb.dscp --backend $b --weights $C/golden/tiny6/model.safetensors --input-ids /tmp/ids \
    --prefill-len 150 --force-boundaries $C/golden/tiny6/expected.safetensors --dump-layers /tmp/d-$b \
    --logits-out /tmp/d-$b/logits.npy
done
python3 $HERE/compare_dumps.py /tmp/d-cuda /tmp/d-cpu > $OUT/cuda-vs-cpu.txt 2>&1
for f in $OUT/*.txt; do tail -n 3 "$f"; done
