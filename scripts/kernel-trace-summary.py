#!/usr/bin/env python3
"""Where a decode step's time goes, from a kernel timeline (tools/dsc-kernel-trace).

The trace (CSV: name, start_ns, end_ns, stream, correlation, graph, node, grid_x, block_x) holds every
kernel the traced program ran. The kernels of one graph launch share its correlation id; the steps
are the graph launches with the most common kernel count among the last STEPS launches of that count
(the timed decode steps of dsc-bench; default: every such launch after the first two).

Per step: the span (first start to last end), the kernels' summed durations, the time no kernel runs.
Per kernel name, over the steps (means per step): launches, summed duration, and the *advance*: the
kernels sorted by end time, each is charged the time from the previous kernel's end to its own (the
first from the step's start). The advances sum to the span, so they say which kernels the step waits
for: a kernel that runs on a graph branch in the shadow of a longer one is charged little, a kernel on
the dependent chain its whole run plus the gap before it.

  python3 scripts/kernel-trace-summary.py TRACE.csv [ROWS] [STEPS] [--timeline]

--timeline also prints the last step kernel by kernel in start order: start and end (us from the
step's start), the gap since the latest earlier end, the stream and the name.
"""
import collections
import csv
import statistics
import sys


def main() -> int:
    args = [a for a in sys.argv[1:] if a != '--timeline']
    rows = int(args[1]) if len(args) > 1 else 40
    want = int(args[2]) if len(args) > 2 else 0
    launches = collections.defaultdict(list)
    for r in csv.DictReader(open(args[0])):
        if r['graph'] == '0':
            continue  # eager launches: not a graph replay
        launches[int(r['correlation'])].append(
            (int(r['start_ns']), int(r['end_ns']), r['name'], int(r['stream'])))
    if not launches:
        print(f'{sys.argv[1]}: no graph launches in the trace', file=sys.stderr)
        return 1
    sizes = collections.Counter(len(v) for v in launches.values())
    size = max(sizes, key=lambda s: (sizes[s], s))
    steps = [launches[c] for c in sorted(launches) if len(launches[c]) == size]
    steps = steps[-want:] if want else (steps[2:] if len(steps) > 4 else steps)
    spans, busy, sums = [], [], []
    total = collections.defaultdict(float)
    advance = collections.defaultdict(float)
    count = collections.Counter()
    for ks in steps:
        t0, t1 = min(k[0] for k in ks), max(k[1] for k in ks)
        spans.append((t1 - t0) / 1e3)
        sums.append(sum(k[1] - k[0] for k in ks) / 1e3)
        covered, edge = 0, t0
        for s, e, _, _ in sorted(ks):
            if e > edge:
                covered += e - max(s, edge)
                edge = e
        busy.append(covered / 1e3)
        prev = t0
        for s, e, name, _ in sorted(ks, key=lambda k: k[1]):
            advance[name] += (e - prev) / 1e3
            total[name] += (e - s) / 1e3
            count[name] += 1
            prev = e
    n = len(steps)
    print(f'{n} steps of {size} kernels: span {statistics.mean(spans):.1f} us '
          f'(min {min(spans):.1f}, max {max(spans):.1f}), kernels summed {statistics.mean(sums):.1f} us, '
          f'some kernel running {statistics.mean(busy):.1f} us, none {statistics.mean(spans) - statistics.mean(busy):.1f} us')
    print(f'{"advance us":>11} {"run us":>9} {"launches":>8}  kernel (per step)')
    for name in sorted(advance, key=lambda k: -advance[k])[:rows]:
        print(f'{advance[name] / n:11.1f} {total[name] / n:9.1f} {count[name] / n:8.1f}  {name}')
    if '--timeline' in sys.argv:
        ks = sorted(steps[-1])
        t0, edge = ks[0][0], ks[0][0]
        print(f'{"start":>8} {"end":>8} {"gap":>7} stream  kernel (last step, us)')
        for s, e, name, stream in ks:
            print(f'{(s - t0) / 1e3:8.1f} {(e - t0) / 1e3:8.1f} {(s - edge) / 1e3:7.1f} {stream:6d}  {name}')
            edge = max(edge, e)
    return 0


if __name__ == '__main__':
    sys.exit(main())
