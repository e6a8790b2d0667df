"""Writes a golden run's input_ids as a text file of ids (for dsc-run --input-ids)."""
import json, struct, sys
with open(sys.argv[1], 'rb') as f:
    n = struct.unpack('<Q', f.read(8))[0]
    header = json.loads(f.read(n))
    t = header['input_ids']
    f.seek(8 + n + t['data_offsets'][0])
    raw = f.read(t['data_offsets'][1] - t['data_offsets'][0])
ids = struct.unpack('<%di' % (len(raw) // 4), raw)
open(sys.argv[2], 'w').write(' '.join(map(str, ids)) + '\n')
