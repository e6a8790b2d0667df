#!/usr/bin/env python3
"""How much of a decode step's serial kernel time a dataflow schedule could overlap.

Reads a plan as JSON (`dsc-compile CONFIG --gpu-arch=none --emit=plan-json -o PLAN.json`) and a
per-kernel ncu summary of one decode step (`scripts/ncu-summary.py LOG 60 > NCU.txt`), gives each
plan step of the decode program the measured time of its kernels (ncu kernel names matched to plan
kernel names by the longest prefix, a kind's total spread evenly over its steps), and prints the
serial sum, the critical path when every step waits only for the steps it depends on through values
(read after write, write after read or write; the activation arena's reuse of bytes between values
is ignored, so this is a bound, not a schedule), and the kernel kinds on and off that path.

  python3 scripts/plan-critical-path.py PLAN.json NCU.txt
"""
import collections
import json
import re
import sys


def main() -> int:
    plan = json.load(open(sys.argv[1]))
    decode = [p for p in plan['programs'] if p['name'] == 'decode'][0]
    steps = decode['launches']
    names = [plan['kernels'][s['kernel']]['name'] for s in steps]
    count = collections.Counter(names)
    total = collections.defaultdict(float)  # measured us per plan kernel kind
    unmatched = []
    for line in open(sys.argv[2]):
        m = re.match(r'\s*([\d.]+) us\s+(\d+)\s+dsc_(\S+)', line)
        if not m:
            continue
        kind = max((k for k in count if m.group(3).startswith(k)), key=len, default=None)
        if kind is None:
            unmatched.append(m.group(3))
        else:
            total[kind] += float(m.group(1))
    cost = [total[n] / count[n] for n in names]
    last_writer, readers, finish, pred = {}, collections.defaultdict(list), [], []
    for i, s in enumerate(steps):
        deps = {last_writer[v] for v in s['inputs'] + s['outputs'] if v in last_writer}
        for v in s['outputs']:
            deps.update(readers[v])
        before = max(deps, key=lambda j: finish[j], default=None)
        pred.append(before)
        finish.append((finish[before] if before is not None else 0.0) + cost[i])
        for v in s['inputs']:
            readers[v].append(i)
        for v in s['outputs']:
            last_writer[v], readers[v] = i, []
    end = max(range(len(steps)), key=lambda i: finish[i])
    path = set()
    while end is not None:
        path.add(end)
        end = pred[end]
    on, off = collections.Counter(), collections.Counter()
    for i, n in enumerate(names):
        (on if i in path else off)[n] += cost[i]
    print('decode: %d plan steps, serial %.3f ms, dataflow critical path %.3f ms (%d steps)' %
          (len(steps), sum(cost) / 1000, max(finish) / 1000, len(path)))
    print('on the path (us):', ', '.join('%s %.0f' % kv for kv in on.most_common(14)))
    print('off the path (us):', ', '.join('%s %.0f' % kv for kv in off.most_common(14)))
    if unmatched:
        print('ncu kernels matched to no plan kernel:', ' '.join(unmatched))
    return 0


if __name__ == '__main__':
    sys.exit(main())
