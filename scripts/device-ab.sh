#!/usr/bin/env bash
# One dsc-bench run on the device, summarised in one line (docs/device.md):
# TAG, decode mean / p50 / min ms per step, the roofline and bandwidth
# measured in the run, prefill tokens/s; the JSON goes to OUT/TAG.json.
# usage: scripts/device-ab.sh CARRY OUT TAG PLAN [dsc-bench arguments...]
set -u
C=$1; OUT=$2; TAG=$3; shift 3
$C/bin/dsc-bench "$@" --json $OUT/$TAG.json > $OUT/$TAG.log 2>&1 || { echo "$TAG: FAILED"; tail -3 $OUT/$TAG.log; exit 1; }
python3 - $OUT/$TAG.json $TAG <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); x = d['decode']
print('%-24s mean %.3f p50 %.3f min %.3f ms/step  roofline %.3f ms at %.0f GB/s  prefill %.1f tokens/s'
      % (sys.argv[2], x['mean_ms'], x['p50_ms'], x['min_ms'], x.get('roofline_ms', 0),
         d.get('bandwidth_gbps', 0), d['prefill']['tokens_per_s']))
PY
