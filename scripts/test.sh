#!/usr/bin/env bash
# Sets up, then runs the whole test suite and the wgpu example on llvmpipe at subgroup sizes 8,
# 4 and 16 (LP_NATIVE_VECTOR_WIDTH 256, 128, 512), with the Vulkan validation layer on: any
# validation message fails a test. At each size the float families' subnormal tests and
# canonical orders run again with the kernels that keep subnormals in software and with those
# that flush them (XWARP_SUBNORMALS=emulate, flush), which llvmpipe would otherwise never run.
# Size 16 needs AVX-512 and is skipped, with a message, without it: llvmpipe (Mesa 22.3.6) does
# report 16 lanes at LP_NATIVE_VECTOR_WIDTH=512 on a CPU without it, and the sort, top-k and
# histogram tests pass there, but LLVM 15 crashes (a segmentation fault in its instruction
# selection, SelectionDAG::LegalizeTypes) compiling the stencil shader for 512-bit vectors
# (NOTES.md, version 18). Then at
# LP_NATIVE_VECTOR_WIDTH=1024 the device's self-test must refuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

cargo build --all-targets --locked 2>&1 | tail -n 3
widths=(256 128)
if grep -qw avx512f /proc/cpuinfo; then
    widths+=(512)
else
    echo "test: this CPU lacks AVX-512: skipping LP_NATIVE_VECTOR_WIDTH=512 (subgroup size 16)"
fi
for w in "${widths[@]}"; do
    echo "== llvmpipe with LP_NATIVE_VECTOR_WIDTH=$w (subgroup size $((w / 32)))"
    LP_NATIVE_VECTOR_WIDTH=$w cargo test --locked --all-targets
    for mode in emulate flush; do
        echo "== XWARP_SUBNORMALS=$mode: the float families on subnormals, the float orders, the self-test, misuse"
        LP_NATIVE_VECTOR_WIDTH=$w XWARP_SUBNORMALS=$mode cargo test --locked \
            --test subnormals --test float_orders --test selftest --test misuse
    done
    if [ "$w" = 256 ]; then
        echo "== XWARP_SUBNORMALS=emulate: the segmented reduce's exact kernels (their small segments' trees)"
        LP_NATIVE_VECTOR_WIDTH=$w XWARP_SUBNORMALS=emulate cargo test --locked --test segmented_reduce
        echo "== XWARP_VULKAN_READS=staged: reads through a staging copy (llvmpipe maps all memory)"
        LP_NATIVE_VECTOR_WIDTH=$w XWARP_VULKAN_READS=staged cargo test --locked \
            --test queue --test reduce
    fi
    # xwarp inside a wgpu application (the `wgpu` feature, which the lab's tests turn on, so
    # this reuses the build above).
    LP_NATIVE_VECTOR_WIDTH=$w cargo run --locked --quiet --example wgpu_sort
done
# Above 512 bits llvmpipe claims subgroups of 32, 64 or 128 lanes but runs 16: the device must
# be refused at open with a typed error, never run.
echo "== llvmpipe with LP_NATIVE_VECTOR_WIDTH=1024 (claims subgroup size 32, runs 16): must be refused"
LP_NATIVE_VECTOR_WIDTH=1024 XWARP_EXPECT_REFUSAL=1 cargo test --locked --test selftest
cargo test --locked --doc
# The library with one backend each (and none): each builds and passes its own tests.
for features in vulkan cuda; do
    echo "== the library with only the $features backend"
    cargo test --locked -p xwarp --no-default-features --features "$features"
done
cargo build --locked -p xwarp --no-default-features
