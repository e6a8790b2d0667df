#!/usr/bin/env bash
# Builds the libFuzzer harnesses of test/fuzz in a clang build of their own
# (ASan + UBSan + coverage, asserts on; no MLIR) and runs each on its seed
# corpus test/fuzz/corpus/<name>/ for FUZZ_SECONDS seconds. Exits 1 on any
# finding (crash, sanitizer report, leak, timeout, OOM), 77 when this machine's
# clang cannot build libFuzzer binaries (ctest counts it skipped), else 0.
# docs/fuzzing.md.
#
#   scripts/fuzz.sh [safetensors|config|plan ...]     (default: all three)
#
# Environment:
#   FUZZ_SECONDS    seconds per harness (default 60; 0: run the corpus once)
#   FUZZ_BUILD_DIR  the fuzz build (default <repo>/build-fuzz)
#   FUZZ_OUT_DIR    findings and the grown corpora (default <FUZZ_BUILD_DIR>/fuzz-out):
#                   <out>/<name>/findings/ gets crash-*, leak-*, timeout-*, oom-*
#                   reproducers; <out>/<name>/corpus/ the inputs libFuzzer added
#   FUZZ_CC, FUZZ_CXX  the clang to build with (default clang, clang++; CC/CXX are ignored)
#   CMAKE           cmake binary (default cmake)
#   FUZZ_JOBS       build parallelism (default nproc)
#   FUZZ_ARGS       more libFuzzer flags, after (so overriding) the script's own
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${FUZZ_SECONDS:-60}"
build="${FUZZ_BUILD_DIR:-$repo/build-fuzz}"
out="${FUZZ_OUT_DIR:-$build/fuzz-out}"
cc="${FUZZ_CC:-clang}"
cxx="${FUZZ_CXX:-clang++}"
cmake="${CMAKE:-cmake}"
jobs="${FUZZ_JOBS:-$(nproc)}"
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=(safetensors config plan)

# Per harness: the largest input libFuzzer makes (the seeds fit) and its
# dictionary, if any.
declare -A max_len=([safetensors]=8192 [config]=8192 [plan]=262144)
declare -A dict=([safetensors]=safetensors.dict [config]=config.dict [plan]=)
for h in "${harnesses[@]}"; do
  [ -n "${max_len[$h]+x}" ] || { echo "fuzz.sh: unknown harness '$h' (safetensors, config, plan)" >&2; exit 2; }
done

# Can this clang link a libFuzzer + ASan + UBSan binary at all?
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
  'extern "C" int LLVMFuzzerTestOneInput(const uint8_t *, size_t) { return 0; }' >"$probe/p.cpp"
if ! command -v "$cxx" >/dev/null || ! command -v "$cc" >/dev/null ||
   ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" >"$probe/log" 2>&1; then
  echo "fuzz.sh: SKIPPED: '$cxx' cannot build libFuzzer binaries (-fsanitize=fuzzer,address,undefined):"
  cat "$probe/log" 2>/dev/null | head -5
  echo "fuzz.sh: install clang and libclang-rt-dev (scripts/setup.sh does)"
  exit 77
fi

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
echo "fuzz.sh: building the harnesses in $build ($("$cxx" --version | head -1))"
if [ ! -f "$build/CMakeCache.txt" ]; then
  mkdir -p "$build"
  CC="$cc" CXX="$cxx" "$cmake" -S "$repo" -B "$build" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DDSC_BUILD_COMPILER=OFF -DDSC_BUILD_TESTS=OFF -DDSC_BUILD_FUZZERS=ON >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; rm -f "$build/CMakeCache.txt"
      echo "fuzz.sh: configuring $build failed" >&2; exit 1; }
fi
targets=()
for h in "${harnesses[@]}"; do targets+=("dsc-fuzz-$h"); done
"$cmake" --build "$build" -j "$jobs" --target "${targets[@]}"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
for h in "${harnesses[@]}"; do
  bin="$build/bin/fuzz/dsc-fuzz-$h"
  seeds="$repo/test/fuzz/corpus/$h"
  findings="$out/$h/findings"
  grown="$out/$h/corpus"
  mkdir -p "$findings" "$grown"
  args=(-rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=20 -max_len="${max_len[$h]}"
        -artifact_prefix="$findings/" -print_final_stats=1 -error_exitcode=1 -timeout_exitcode=1)
  [ -n "${dict[$h]}" ] && args+=(-dict="$repo/test/fuzz/${dict[$h]}")
  # shellcheck disable=SC2206 # FUZZ_ARGS is a list of flags
  args+=(${FUZZ_ARGS:-})
  if [ "$seconds" -gt 0 ]; then
    args+=(-max_total_time="$seconds")
  else
    args+=(-runs=0)
  fi
  echo "fuzz.sh: $h: ${seconds}s on $seeds (new inputs: $grown)"
  before="$(ls -1 "$findings")"
  rc=0
  # The grown corpus first: libFuzzer writes new inputs there, never to the seeds.
  "$bin" "${args[@]}" "$grown" "$seeds" >"$out/$h/log" 2>&1 || rc=$?
  new="$(comm -13 <(echo "$before") <(ls -1 "$findings"))"
  grep -E '^(INFO: seed corpus|#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|Done )' \
    "$out/$h/log" | sed "s/^/fuzz.sh: $h: /" || true
  if [ "$rc" -ne 0 ] || [ -n "$new" ]; then
    status=1
    tail -n 60 "$out/$h/log"
    echo "fuzz.sh: $h: FINDING (exit $rc); reproducers in $findings/:"
    [ -n "$new" ] && echo "$new" | sed 's/^/  /'
    echo "fuzz.sh: $h: rerun one with: $bin <reproducer>; full log: $out/$h/log"
  else
    echo "fuzz.sh: $h: no finding"
  fi
done
exit "$status"
