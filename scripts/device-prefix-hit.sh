#!/usr/bin/env bash
# Time to first token of a long prompt cold vs as a prefix hit (issue 13) on the device:
# dsc-bench --prefix-hit H for a few prompt lengths on rw6 (synthetic weights), one JSON
# per run under OUT and a summary line each (cold ms, hit ms, logits equal).
# usage: scripts/device-prefix-hit.sh CARRY OUT   (CARRY holds bin/dsc-bench and rw6.dscp(.xz):
#        scripts/device-carry.sh bench DIR)
set -u
C=$1; OUT=$2; H=$(cd "$(dirname "$0")" && pwd)
bash $H/device-unpack.sh $C
for P in 8192 32768; do
  for cached in $((P / 2)) $((P - 1024)); do
    J=$OUT/rw6-prefix-hit-$P-$cached.json
    $C/bin/dsc-bench $C/rw6.dscp --backend cuda --synthetic-weights 1 --warmup 1 --prefill-len $P \
      --decode-steps 1 --prefix-hit $cached --json $J > /dev/null 2>$OUT/rw6-prefix-hit-$P-$cached.err
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); h=d['prefix_hit']; print('prompt', d['prefill']['tokens'], 'cached', h['cached_tokens'], 'cold', round(1e3*h['cold_seconds'], 2), 'ms hit', round(1e3*h['seconds'], 2), 'ms; logits equal:', h['logits_equal_cold'])" $J 2>/dev/null \
      || echo "prompt $P cached $cached: no result ($(tail -1 $OUT/rw6-prefix-hit-$P-$cached.err))"
  done
done
cd $OUT && tar czf prefix-hit.tgz rw6-prefix-hit-* && rm -f rw6-prefix-hit-*
