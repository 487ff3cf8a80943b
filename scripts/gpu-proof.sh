#!/usr/bin/env bash
# The GPU proof of robustness, run on the GPU machine (no Rust there) from prebuilt test
# binaries: the property tests with 10,000 cases per property once per backend, the soak with
# 100,000 dispatches once per backend, and compute-sanitizer's memcheck, racecheck, synccheck
# and initcheck over the CUDA side of the tests. Each step writes its log into OUT_DIR; a
# summary (one line per step, `N passed, N failed` at the end) goes to OUT_DIR/summary.txt and
# the terminal. Needs bash, the binaries and compute-sanitizer (for the sanitizer steps).
#
# Usage: scripts/gpu-proof.sh BIN_DIR [OUT_DIR]
#   BIN_DIR  the test executables `cargo test --release --no-run --tests` builds
#            (NAME-HASH, e.g. proptest-0123abcd...), copied flat into one folder, e.g.:
#              mkdir -p .gpu && cargo test --release --no-run --tests 2>&1 \
#                | grep -o 'target/release/deps/[A-Za-z0-9_-]*' | xargs -I{} cp {} .gpu/ \
#                && strip .gpu/*-*
#            Debian packages (*.deb) in BIN_DIR (the Vulkan loader and libglvnd of
#            shared/device/debs, the validation layer) are unpacked into / first.
#   OUT_DIR  where the logs go (default: gpu-proof-YYYYmmdd-HHMMSS); on the device machine
#            pass "$OUT/gpu-proof" so they come back.
#
# Sizes and filters: every step runs with XWARP_TEST_BACKENDS set to the one backend it
# proves. The sanitizers run the CUDA backend only, on inputs of up to about 50,000 elements:
# the property tests (every family and variant kind, lengths up to 50,000) at a few cases per
# property, and the other test binaries without their million-element random sweeps (`--skip
# random_`, `every_`, `repeated_`, `inputs_longer`, `many_chunks`), which the runs above cover
# unsanitized:
#   memcheck   proptest (6 cases), every other test binary filtered so, misuse, threads
#              (8 steps per thread), backend, and the soak at 1,000 dispatches;
#   racecheck  proptest (2 cases), and the stencil, ladder, scan and reduce binaries filtered
#              (the kernels with shared memory);
#   synccheck  proptest (3 cases), and the shfl, vote and compact binaries filtered (partial
#              warps and their masks);
#   initcheck  proptest (2 cases) and misuse.
# XWARP_PROOF_STEPS picks steps (default "proptest soak sanitizer") and XWARP_PROOF_BACKENDS
# the backends of the proptest and soak steps (default "vulkan cuda"), to split the proof over
# several calls of a limited length into one OUT_DIR (summary.txt collects them all). XWARP_PROOF_CASES and
# XWARP_PROOF_DISPATCHES override the 10,000 cases and 100,000
# dispatches; XWARP_PROOF_STEP_TIMEOUT (default 3600) and XWARP_PROOF_SANITIZER_TIMEOUT
# (default 900) bound each step, in seconds.
set -uo pipefail

if [ $# -lt 1 ] || [ ! -d "$1" ]; then
    sed -n '2,/^set -uo/p' "$0" | sed 's/^# \{0,1\}//; /^set -uo/d'
    exit 2
fi
bin_dir=$(cd "$1" && pwd)
out=${2:-gpu-proof-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cases=${XWARP_PROOF_CASES:-10000}
dispatches=${XWARP_PROOF_DISPATCHES:-100000}
step_timeout=${XWARP_PROOF_STEP_TIMEOUT:-3600}
sanitizer_timeout=${XWARP_PROOF_SANITIZER_TIMEOUT:-900}
steps=" ${XWARP_PROOF_STEPS:-proptest soak sanitizer} "
read -r -a backends <<<"${XWARP_PROOF_BACKENDS:-vulkan cuda}"
summary="$out/summary.txt"
touch "$summary"
passed=0
failed=0

note() { echo "$*" | tee -a "$summary"; }

# Libraries the binaries need that the machine may lack (see shared/device/README.md).
shopt -s nullglob
debs=("$bin_dir"/*.deb)
if [ ${#debs[@]} -gt 0 ]; then
    for f in "${debs[@]}"; do dpkg -x "$f" / || note "could not unpack $f"; done
    ldconfig 2>/dev/null || true
fi
nvidia_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$nvidia_icd" ]; then
    export VK_DRIVER_FILES=$nvidia_icd
fi
unset CI

# The newest test executable named NAME-<hash> in BIN_DIR (a benchmark of the same name is
# no test harness: it lists no tests).
binary() {
    local f best=""
    for f in "$bin_dir/$1"-*; do
        [[ $f =~ /$1-[0-9a-f]{16}$ ]] && [ -x "$f" ] || continue
        "$f" --list 2>/dev/null | grep -q ': test$' || continue
        if [ -z "$best" ] || [ "$f" -nt "$best" ]; then best=$f; fi
    done
    echo "$best"
}

# step NAME ENV... -- COMMAND...: runs COMMAND with the environment ENV into OUT_DIR/NAME.log.
step() {
    local name=$1
    shift
    local envs=()
    while [ "$1" != "--" ]; do
        envs+=("$1")
        shift
    done
    shift
    local log="$out/$name.log" start rc
    start=$(date +%s)
    {
        echo "# $(date -u +%FT%TZ) ${envs[*]} $*"
        if command -v timeout >/dev/null; then
            env "${envs[@]}" timeout "$step_timeout" "$@"
        else
            env "${envs[@]}" "$@"
        fi
    } >"$log" 2>&1
    rc=$?
    local took=$(($(date +%s) - start))
    local tests
    tests=$(grep -E '^test result:' "$log" | tail -n 1)
    if [ $rc -eq 0 ]; then
        passed=$((passed + 1))
        note "PASS $name (${took} s) ${tests}"
    else
        failed=$((failed + 1))
        note "FAIL $name (exit $rc, ${took} s) ${tests}; see $log"
    fi
}

missing=0
for b in proptest soak misuse threads backend shfl vote compact reduce ladder scan stencil; do
    if [ -z "$(binary $b)" ]; then
        note "missing test binary $b-<hash> in $bin_dir"
        missing=1
    fi
done
[ $missing -eq 0 ] || exit 2
proptest=$(binary proptest)
soak=$(binary soak)

{
    echo "# $(date -u +%FT%TZ) on $(hostname)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null
    compute-sanitizer --version 2>/dev/null | tail -n 1
    echo "binaries: $bin_dir"
    ls -l "$bin_dir"
} >"$out/env.txt" 2>&1

# 1. Property tests, once per backend.
[[ $steps == *" proptest "* ]] && for backend in "${backends[@]}"; do
    step "proptest-$backend" XWARP_TEST_BACKENDS=$backend XWARP_PROPTEST_CASES="$cases" \
        -- "$proptest" --nocapture
done

# 2. Soak, once per backend.
[[ $steps == *" soak "* ]] && for backend in "${backends[@]}"; do
    step "soak-$backend" XWARP_TEST_BACKENDS=$backend XWARP_SOAK_DISPATCHES="$dispatches" \
        -- "$soak" --nocapture
done

# 3. compute-sanitizer over the CUDA backend.
heavy=(--skip random_ --skip every_ --skip repeated_ --skip inputs_longer --skip many_chunks)
if [[ $steps != *" sanitizer "* ]]; then
    :
elif command -v compute-sanitizer >/dev/null; then
    step_timeout=$sanitizer_timeout
    # san TOOL BINARY [ENV...] [-- TEST ARGS...]
    san() {
        local tool=$1 name=$2
        shift 2
        local envs=(XWARP_TEST_BACKENDS=cuda)
        while [ $# -gt 0 ] && [ "$1" != "--" ]; do
            envs+=("$1")
            shift
        done
        [ $# -gt 0 ] && shift
        step "$tool-$name" "${envs[@]}" -- compute-sanitizer --tool "$tool" \
            --error-exitcode 99 --print-limit 100 "$(binary "$name")" "$@"
    }
    san memcheck proptest XWARP_PROPTEST_CASES=6
    for b in shfl vote compact reduce ladder scan stencil; do
        san memcheck "$b" -- "${heavy[@]}"
    done
    san memcheck misuse
    san memcheck threads XWARP_THREAD_ITERS=8
    san memcheck backend
    san memcheck soak XWARP_SOAK_DISPATCHES=1000

    san racecheck proptest XWARP_PROPTEST_CASES=2
    for b in stencil ladder scan reduce; do
        san racecheck "$b" -- "${heavy[@]}"
    done

    san synccheck proptest XWARP_PROPTEST_CASES=3
    for b in shfl vote compact; do
        san synccheck "$b" -- "${heavy[@]}"
    done

    san initcheck proptest XWARP_PROPTEST_CASES=2
    san initcheck misuse
else
    failed=$((failed + 1))
    note "FAIL compute-sanitizer not found on PATH (it comes with the CUDA toolkit)"
fi

note "gpu-proof: $passed passed, $failed failed (logs in $out)"
[ $failed -eq 0 ]
