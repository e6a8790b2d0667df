#!/usr/bin/env bash
# Unpacks a carry folder on the device (docs/device.md): scripts/device-carry.sh
# gzips the plans (their cubins shrink ~5x, so a call carries more), and
# this restores every DIR/**/*.dscp.gz as *.dscp. Idempotent.
# usage: scripts/device-unpack.sh DIR
set -eu
find "$1" -name '*.dscp.gz' -exec gunzip -f {} +
