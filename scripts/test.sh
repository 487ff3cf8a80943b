#!/usr/bin/env bash
# Sets up, then runs the whole test suite on llvmpipe at subgroup sizes 8, 4 and 16
# (LP_NATIVE_VECTOR_WIDTH 256, 128, 512), with the Vulkan validation layer on: any validation
# message fails a test. Size 16 needs AVX-512 and is skipped, with a message, without it.
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
done
cargo test --locked --doc
