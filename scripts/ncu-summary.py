#!/usr/bin/env python3
"""Per-kernel GPU time of the last decode step in an ncu CSV log.

The device image has Nsight Compute but no Nsight Systems (device KINDS.md);
this is how session 4 attributed a decode step's time to kernels:

  ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw \\
      --log-file OUT/ncu.log dsc-bench PLAN --backend cuda --synthetic-weights 1 \\
      --prefill-len 512 --decode-steps 2 --warmup 0 --cuda-graphs off
  python3 scripts/ncu-summary.py OUT/ncu.log [ROWS]

It sums gpu__time_duration per kernel name from the last `dsc_embed` launch
(the start of the last call) to the end, and prints the ROWS (default 30)
largest with their launch counts, grid and block.
"""
import collections
import csv
import sys


def main() -> int:
    rows = list(csv.reader(open(sys.argv[1])))
    header_at = [i for i, r in enumerate(rows) if 'Kernel Name' in r]
    if not header_at:
        print(f'{sys.argv[1]}: no ncu CSV header', file=sys.stderr)
        return 1
    header, data = rows[header_at[0]], rows[header_at[0] + 2:]
    name, time = header.index('Kernel Name'), header.index('gpu__time_duration.sum')
    grid, block = header.index('Grid Size'), header.index('Block Size')
    starts = [i for i, r in enumerate(data) if r[name] == 'dsc_embed']
    last = data[starts[-1]:] if starts else data
    total, count, shape = collections.Counter(), collections.Counter(), {}
    for r in last:
        t = float(r[time].replace(',', ''))
        total[r[name]] += t
        count[r[name]] += 1
        shape[r[name]] = (r[grid], r[block])
    print(f'total {sum(total.values()) / 1e6:.3f} ms in {len(last)} kernels')
    for k, v in total.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 30):
        print(f'{v / 1e3:10.1f} us {count[k]:4d}  {k:44s} grid {shape[k][0]} block {shape[k][1]}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
