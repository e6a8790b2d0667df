#!/usr/bin/env bash
# Unpacks a carry folder on the device (docs/device.md): scripts/device-carry.sh
# compresses the plans with xz (their cubins shrink ~11x, so a call carries
# more), and this restores every DIR/**/*.dscp.xz (or an older carry's
# .dscp.gz) as *.dscp, through Python's lzma (the device image need not have
# xz). Idempotent.
# usage: scripts/device-unpack.sh DIR
set -eu
find "$1" -name '*.dscp.gz' -exec gunzip -f {} +
find "$1" -name '*.dscp.xz' -exec python3 -c 'import lzma, os, shutil, sys
for p in sys.argv[1:]:
    with lzma.open(p) as f, open(p[:-3], "wb") as o:
        shutil.copyfileobj(f, o)
    os.remove(p)' {} +
