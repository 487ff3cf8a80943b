#!/usr/bin/env bash
# Sets up, then runs the CLI on llvmpipe: `xwarp info`, `xwarp validate` (arguments go to it)
# and `xwarp bench --quick`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
cargo build --locked --bin xwarp 2>&1 | tail -n 3
./target/debug/xwarp info
./target/debug/xwarp validate "$@"
./target/debug/xwarp bench --quick
