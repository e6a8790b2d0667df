#!/usr/bin/env bash
# Installs every package a fresh Debian 12 machine needs to build and test dsc.
# Idempotent: packages already present are left alone. Run as root (or with sudo).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build git pkg-config
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools   # MLIR 22 + lit/FileCheck
  libflatbuffers-dev flatbuffers-compiler                   # plan file
  libfmt-dev                                                # formatting (header-only use)
  libgtest-dev libgmock-dev                                 # unit tests
  libicu-dev                                                # Engram token normalisation (NFKC/NFD)
  nlohmann-json3-dev                                        # runtime JSON (no LLVM in the runtime)
  python3 python3-numpy                                     # numpy cross-checks in tests (/usr/bin/python3)
  clang libclang-rt-dev                                     # libFuzzer + ASan/UBSan: scripts/fuzz.sh (ctest label fuzz)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
