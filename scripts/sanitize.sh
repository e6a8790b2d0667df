#!/usr/bin/env bash
# The runtime and its unit tests under AddressSanitizer + UndefinedBehaviorSanitizer
# (issue 15): a build of its own without the compiler (-DDSC_BUILD_COMPILER=OFF:
# the runtime, the CPU and CUDA backends on the fake driver, the tools that link
# no MLIR, the codegen and their GoogleTest binaries), every sanitizer report
# fatal (-fno-sanitize-recover=all), leaks included; then its ctest. The tests
# that read the tiny6 CPU plan get the main build's (SANITIZE_PLAN), so they run
# plans rather than skip. The golden and lit suites need the compiler and stay
# in the main build. Exit 0 when every test passes, 1 otherwise.
# docs/fuzzing.md ("Sanitizers").
#
#   scripts/sanitize.sh
#
# Environment:
#   SANITIZE_BUILD_DIR  the build (default <repo>/build-sanitize)
#   SANITIZE_PLAN       the tiny6 CPU plan (default <repo>/build/test/fixtures/tiny6-cpu.dscp)
#   SANITIZE_JOBS       build and test parallelism (default nproc)
#   CMAKE, CTEST        the binaries (default cmake, ctest)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="${SANITIZE_BUILD_DIR:-$repo/build-sanitize}"
plan="${SANITIZE_PLAN:-$repo/build/test/fixtures/tiny6-cpu.dscp}"
jobs="${SANITIZE_JOBS:-$(nproc)}"
cmake="${CMAKE:-cmake}"
ctest="${CTEST:-ctest}"
flags="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
mkdir -p "$build"
if [ ! -f "$build/CMakeCache.txt" ]; then
  "$cmake" -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DDSC_BUILD_COMPILER=OFF -DDSC_TINY6_CPU_PLAN_FILE="$plan" \
    -DCMAKE_C_FLAGS_RELEASE="$flags" -DCMAKE_CXX_FLAGS_RELEASE="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined -Wl,--as-needed" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >"$build/sanitize-configure.log" 2>&1 ||
    { cat "$build/sanitize-configure.log"; exit 1; }
fi
echo "sanitize.sh: building in $build"
"$cmake" --build "$build" -j"$jobs" >"$build/sanitize-build.log" 2>&1 || { tail -40 "$build/sanitize-build.log"; exit 1; }
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
echo "sanitize.sh: running the tests"
"$ctest" --test-dir "$build" -j"$jobs" --output-on-failure -LE "gpu|fuzz|sanitize" 2>&1 | tail -40
exit "${PIPESTATUS[0]}"
